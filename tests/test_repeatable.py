"""Issue 14, item 6: a run repeated from its folder or a config file, and seeded samples."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from openai_server import ChatServer

from fbi import load_dataset, write_dataset
from fbi.cli import main
from fbi.run_spec import Parameters
from fbi.settings import ModelSettings


def fbi(tmp_path, *args: str):
    return CliRunner().invoke(main, list(args), env={
        "OPENAI_API_KEY": "sk-test", "FBI_CACHE": str(tmp_path / "cache.sqlite"),
        "COLUMNS": "120"})


def judgments(folder) -> dict[str, tuple]:
    rows = [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]
    return {r["call_id"]: (r["status"], r["score"], r["verdict"], r["raw_output"])
            for r in rows}


@pytest.mark.slow
def test_a_resumed_run_into_a_new_folder_calls_nothing_and_matches(tmp_path):
    with ChatServer() as server:
        first = fbi(tmp_path, "evaluate", "--judge", "openai/judge", "--api-base", server.url,
                    "--output", str(tmp_path / "first"), "--strategy", "rubric",
                    "--strategy", "pairwise", "--category", "entity", "--category", "grammar",
                    "--score-range", "1-5", "--temperature", "0.3", "--seed", "4",
                    "--model-arg", "top_p=0.5", "--label", "mine")
        assert first.exit_code == 0, first.output
        served = server.counts["ok"]
        again = fbi(tmp_path, "evaluate", "--resume", str(tmp_path / "first"), "--output",
                    str(tmp_path / "again"))
        assert again.exit_code == 0, again.output
        assert server.counts["ok"] == served  # every call from the cache, no probe
    for result in (first, again):  # issue 26: the headline names the judge by its label
        assert "mine (openai/judge): % undetected" in " ".join(result.output.split())
    assert judgments(tmp_path / "again") == judgments(tmp_path / "first")
    spec_first = json.loads((tmp_path / "first" / "run.json").read_text())
    spec_again = json.loads((tmp_path / "again" / "run.json").read_text())
    for key in ("model", "api_base", "prompts", "dataset", "selection", "parameters", "label"):
        assert spec_again[key] == spec_first[key], key


@pytest.mark.slow
def test_resume_continues_a_folder_and_asks_for_its_system_prompt(tmp_path):
    system = tmp_path / "system.txt"
    system.write_text("Be strict.", encoding="utf-8")
    with ChatServer() as server:
        args = ("evaluate", "--judge", "openai/judge", "--api-base", server.url,
                "--category", "entity", "--limit", "1", "--system-prompt", str(system))
        assert fbi(tmp_path, *args, "--output", str(tmp_path / "run")).exit_code == 0
        missing = fbi(tmp_path, "evaluate", "--resume", str(tmp_path / "run"))
        assert missing.exit_code == 2 and "--system-prompt" in missing.output
        again = fbi(tmp_path, "evaluate", "--resume", str(tmp_path / "run"),
                    "--system-prompt", str(system))
        assert again.exit_code == 0 and "2 done before" in again.output, again.output


def test_options_from_a_config_file_and_flags_win(tmp_path):
    with ChatServer() as server:
        config = tmp_path / "run.yaml"
        config.write_text(f"judge: openai/judge\napi-base: {server.url}\n"
                          "strategy: [vanilla, pairwise]\ncategory: [entity]\nlimit: 1\n"
                          "max_tokens: 300\n", encoding="utf-8")
        result = fbi(tmp_path, "evaluate", "--config", str(config), "--output",
                     str(tmp_path / "run"), "--max-tokens", "200")
        assert result.exit_code == 0, result.output
    spec = json.loads((tmp_path / "run" / "run.json").read_text())
    assert sorted(spec["prompts"]) == ["pairwise", "vanilla"]
    assert spec["selection"]["categories"] == ["entity"] and spec["selection"]["limit"] == 1
    assert spec["parameters"]["max_tokens"] == 200  # the flag, not the file
    bad = tmp_path / "bad.yaml"
    bad.write_text("strategie: [vanilla]\n", encoding="utf-8")
    refused = fbi(tmp_path, "evaluate", "--config", str(bad), "--dry-run")
    assert refused.exit_code == 2 and "Did you mean 'strategy'" in refused.output


def test_a_seeded_sample_is_the_same_whatever_the_row_order(tmp_path):
    instances = load_dataset("sample").instances
    shuffled = list(instances)
    random.Random(9).shuffle(shuffled)
    write_dataset(shuffled, tmp_path / "shuffled.jsonl")
    base = load_dataset("sample")
    other = load_dataset(str(tmp_path / "shuffled.jsonl"))
    picked = {i.id for i in base.select(sample=2, sample_seed=5).instances}
    assert picked == {i.id for i in other.select(sample=2, sample_seed=5).instances}
    per_category: dict[str, int] = {}
    for instance_id in picked:
        category = next(i.category for i in instances if i.id == instance_id)
        per_category[category] = per_category.get(category, 0) + 1
    assert set(per_category.values()) == {2}
    assert picked != {i.id for i in base.select(sample=2, sample_seed=6).instances}
    overall = base.select(sample=7, sample_seed=5, sample_by="overall")
    assert len(overall.instances) == 7
    assert overall.selection["sample"] == 7 and overall.selection["sample_by"] == "overall"


def test_limit_and_sample_are_one_or_the_other(tmp_path):
    result = fbi(tmp_path, "evaluate", "--limit", "1", "--sample", "2", "--dry-run")
    assert result.exit_code == 2 and "give one of them" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("by", ["category", "overall"])
def test_the_sample_is_recorded_and_a_different_one_is_another_run(tmp_path, by):
    with ChatServer() as server:
        args = ("evaluate", "--judge", "openai/judge", "--api-base", server.url, "--output",
                str(tmp_path / "run"), "--sample", "1", "--sample-by", by)
        assert fbi(tmp_path, *args).exit_code == 0
        other = fbi(tmp_path, *args, "--sample-seed", "1")
    assert other.exit_code == 2 and "sample_seed" in other.output
    selection = json.loads((tmp_path / "run" / "run.json").read_text())["selection"]
    assert selection["sample"] == 1 and selection["sample_by"] == by


@pytest.mark.slow
def test_the_explanation_cap_reaches_the_request_and_is_remade_by_resume(tmp_path):
    """--explanation-chars sets the explanation's maxLength in the reply schema the judge
    is sent; run.json records it and --resume asks for it again (all from the cache)."""
    def caps(requests) -> set:
        return {r["response_format"]["json_schema"]["schema"]["properties"]["explanation"]
                ["maxLength"] for r in requests if "response_format" in r}  # not the probe

    with ChatServer() as server:
        common = ("evaluate", "--judge", "openai/judge", "--api-base", server.url,
                  "--category", "entity", "--limit", "1")
        default = fbi(tmp_path, *common, "--output", str(tmp_path / "default"))
        assert default.exit_code == 0, default.output
        assert caps(server.requests) == {600}  # an API judge's default
        server.requests.clear()
        capped = fbi(tmp_path, *common, "--explanation-chars", "80", "--output",
                     str(tmp_path / "capped"))
        assert capped.exit_code == 0, capped.output
        assert caps(server.requests) == {80}
        served = server.counts["ok"]
        again = fbi(tmp_path, "evaluate", "--resume", str(tmp_path / "capped"), "--output",
                    str(tmp_path / "again"))
        assert again.exit_code == 0, again.output
        assert server.counts["ok"] == served  # the same requests: all cached
    # recorded when it is not the 600 every run had before the option, so folders
    # written before it still match a run that does not set it
    for folder, cap in (("default", None), ("capped", 80), ("again", 80)):
        spec = json.loads((tmp_path / folder / "run.json").read_text())
        assert spec["parameters"].get("explanation_chars") == cap, folder
    assert judgments(tmp_path / "again") == judgments(tmp_path / "capped")


def test_the_embedded_judge_gets_a_one_sentence_explanation_cap():
    from fbi.judge import EvaluationConfig, recorded_explanation_chars

    assert EvaluationConfig().explanation_limit == 120  # local/smollm2-135m
    assert EvaluationConfig(model=ModelSettings(model="gpt-4-turbo")).explanation_limit == 600
    assert EvaluationConfig(explanation_chars=300).explanation_limit == 300
    # run.json of runs made before the option existed: they all used 600
    assert recorded_explanation_chars(Parameters(max_tokens=400)) == 600


def _billion_laughs() -> str:
    """Nine levels of nine aliases each (about 600 bytes; 9⁹ strings once expanded)."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\n"


BILLION_LAUGHS = _billion_laughs()


@pytest.mark.parametrize("text, said", [
    ("max-tokens: [1, 2]\n", "max-tokens: [1, 2] is not a single value"),
    ("strategy: {a: 1}\n", "strategy: {'a': 1} is not a list of single values"),
    ("strategy: [[vanilla]]\n", "is not a list of single values"),
    ("temperature: hot\n", "temperature: 'hot' is not a number"),
    # read exactly, as a dataset is: no value is coerced to the option's type (issue 50)
    ("concurrency: 8.0\n", "concurrency: 8.0 is not a whole number"),
    ("temperature: '0.5'\n", "temperature: '0.5' is not a number"),
    ("max-tokens: true\n", "max-tokens: True is not a whole number"),
    ("label: true\n", "label: True is not text"),
    ("label: 12\n", "label: 12 is not text"),
    ("no-cache: 'yes'\n", "no-cache: 'yes' is not true or false"),
    ("strategy: [vanilla, 3]\n", "strategy: 3 is not text"),
    ("limit: " + "9" * 5000 + "\n", "line 1: an integer of 5,000 digits"),
    ("label: " + "[" * 20000 + "\n", "line 1: YAML nested more than 50 levels deep"),
    ("temperature: .nan\n", "temperature"),
    ("concurrency: 10000000\n", "concurrency"),
    ("limit: null\n", "limit: None is not a single value"),
    ("judge: &j openai/x\nlabel: *j\n", "line 2: a YAML alias (*j)"),
    (BILLION_LAUGHS, "a YAML alias (*a)"),
    ("- a\n- b\n", "give a mapping of option: value"),
    ("judge: [unclosed\n", "not valid YAML"),
])
def test_a_config_file_is_input_like_the_flags(tmp_path, text, said):
    """Issue 38: every value of a config file has the shape and type its flag takes, and
    YAML aliases (a 600-byte "billion laughs" expands to gigabytes) are refused before
    anything is built: one message, exit 2."""
    config = tmp_path / "run.yaml"
    config.write_text(text, encoding="utf-8")
    refused = fbi(tmp_path, "evaluate", "--config", str(config), "--dry-run")
    assert refused.exit_code == 2, refused.output
    assert said in " ".join(refused.output.split()), refused.output


def test_a_template_front_matter_alias_is_refused(tmp_path):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "bomb.jinja").write_text("---\n" + BILLION_LAUGHS + "---\nx\n")
    refused = fbi(tmp_path, "evaluate", "--prompts", str(folder), "--strategy", "bomb",
                  "--dry-run")
    assert refused.exit_code == 2 and "a YAML alias (*a)" in refused.output, refused.output
