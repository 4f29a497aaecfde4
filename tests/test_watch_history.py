"""`fbi watch` believes only its own counts (issue 63): the alarm is computed again from
them, so editing it away changes nothing; steps of another judge, α, canary or stream,
and impossible counts are refused with their line; options that cannot be scheduled or
cannot alarm are refused before any call."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_server import ChatServer
from planted_judges import PlantedJudge

from fbi import load_dataset
from fbi.cli import main
from fbi.errors import FbiWarning, InputError
from fbi.watch._history import WATCH_FILE, StreamStep, WatchShape, WatchStep, read_history

INSTANCES = load_dataset("sample").instances
ENV = {"OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "COLUMNS": "200"}
SHAPE = WatchShape(judge="openai/judge", alpha=0.01, canary="c0",
                   streams={("vanilla", "entity"): 10, ("vanilla", "grammar"): 10})


def steps_of(counts: list[dict[str, int]], changes: dict[int, dict] | None = None
             ) -> list[WatchStep]:
    """Steps whose streams failed as ``counts`` say (category → failures of 10), with the
    file's evidence fields all saying "no alarm"; ``changes``: step → fields to set."""
    return [WatchStep(**{
        "step": n, "at": "2026-12-01T00:00:00+00:00", "judge": "openai/judge", "calls": 20,
        "streams": [StreamStep(strategy="vanilla", category=c, failures=f, asked=10,
                               log_e=None) for c, f in sorted(step.items())],
        "log_e": None, "alpha": 0.01, "alarm": False, "canary": "c0",
        **(changes or {}).get(n, {})})
        for n, step in enumerate(counts, 1)]


def write(folder: Path, steps: list[WatchStep], raw: list[str] = ()) -> None:
    folder.mkdir(exist_ok=True)
    (folder / WATCH_FILE).write_text("".join(s.model_dump_json() + "\n" for s in steps) +
                                     "".join(line + "\n" for line in raw))


def changed(before: int, after: int) -> list[dict[str, int]]:
    return [{"entity": 0, "grammar": 0}] * before + [{"entity": 10, "grammar": 0}] * after


def test_the_alarm_is_computed_from_the_counts_not_read(tmp_path):
    """Five clean steps and three where one stream fails 10 of 10: by hand the change
    at step 6 gives that stream, at step 8, Λ = KT(0 of 50) KT(30 of 30) / ((3/8)^30
    (5/8)^50) weighted by w_6 — far past 2 × 100 — so the watch alarms, though every
    line of the file says alarm false (a warning says the file disagreed)."""
    write(tmp_path, steps_of(changed(5, 3)))
    with pytest.warns(FbiWarning, match="fbi believes the counts"):
        steps = read_history(tmp_path, SHAPE)
    from scipy.special import betaln

    def log_kt(m, n):
        return betaln(m + 0.5, n - m + 0.5) - math.log(math.pi)

    log_w6 = math.log(math.log(2) * (1 / math.log(6) - 1 / math.log(7)))
    by_hand = log_kt(0, 50) + log_kt(30, 30) - (30 * math.log(3 / 8) + 50 * math.log(5 / 8))
    assert by_hand + log_w6 - math.log(2) > math.log(100)
    assert steps[-1].alarm and steps[-1].first_alarm is not None
    assert steps[-1].first_alarm <= 8
    (entity,) = [s for s in steps[-1].streams if s.category == "entity"]
    assert entity.change_step == 6 and entity.log_e >= by_hand + log_w6


def test_an_alarm_edited_away_stays_raised(tmp_path):
    """first_alarm set to null and alarm to false on every line after it: the latch is
    the counts', so the steps read back still alarm from the same step."""
    write(tmp_path, steps_of(changed(5, 3)))
    with pytest.warns(FbiWarning):
        honest = read_history(tmp_path, SHAPE)
    first = honest[-1].first_alarm
    write(tmp_path, steps_of(changed(5, 3) + [{"entity": 0, "grammar": 0}] * 4))
    with pytest.warns(FbiWarning):
        after = read_history(tmp_path, SHAPE)
    assert all(s.alarm for s in after[first - 1:]) and after[-1].first_alarm == first


@pytest.mark.parametrize(("change", "message"), [
    ({"judge": "openai/other"}, "a step of the judge 'openai/other'"),
    ({"alpha": 0.05}, "a step at alpha 0.05"),
    ({"canary": "c1"}, "a step of another canary"),
])
def test_a_step_of_another_watch_is_refused(tmp_path, change, message):
    write(tmp_path, steps_of(changed(3, 0), {2: change}))
    with pytest.raises(InputError) as raised:
        read_history(tmp_path, SHAPE)
    assert f"{WATCH_FILE}, line 2: {message}" in str(raised.value)


@pytest.mark.parametrize(("stream", "message"), [
    ({"category": "spelling", "failures": 0, "asked": 10}, "a stream the canary does not"),
    ({"category": "entity", "failures": 11, "asked": 10}, "11 failures of 10"),
    ({"category": "entity", "failures": -1, "asked": 10}, "-1 failures of 10"),
    ({"category": "entity", "failures": 0, "asked": 3}, "3 judgments of vanilla on entity"),
    ({"category": "entity", "failures": 0, "asked": 0}, "0 failures of 0"),
])
def test_impossible_or_foreign_counts_are_refused(tmp_path, stream, message):
    step = json.loads(steps_of(changed(1, 0))[0].model_dump_json())
    step["step"] = 2
    step["streams"] = [{"strategy": "vanilla", "log_e": None, **stream},
                       {"strategy": "vanilla", "category": "grammar", "failures": 0,
                        "asked": 10, "log_e": None}]
    write(tmp_path, steps_of(changed(1, 0)), [json.dumps(step)])
    with pytest.raises(InputError, match=message):
        read_history(tmp_path, SHAPE)


@pytest.mark.parametrize("value", ['"3"', "3.0", "true", "NaN", "1e400"])
def test_counts_are_integers(tmp_path, value):
    line = steps_of(changed(1, 0))[0].model_dump_json().replace('"failures":0',
                                                                f'"failures":{value}', 1)
    write(tmp_path, [], [line])
    with pytest.raises(InputError, match="line 1: not a watch step"):
        read_history(tmp_path, SHAPE)


def judge(request: dict) -> str:
    return PlantedJudge(INSTANCES, lambda gold, edited: False)(request)


@pytest.mark.parametrize(("option", "message"), [
    (["--every", "99999999999d"], "--every"),
    (["--every", "0.5s"], "--every"),
    (["--every", "1" + "0" * 400 + "s"], "--every"),
    (["--alpha", "1e-320"], "could never sound"),
    (["--alpha", "nan"], "--alpha"),
])
def test_options_that_cannot_be_kept_are_refused_before_any_call(tmp_path, option, message):
    with ChatServer(script=judge) as server:
        result = CliRunner().invoke(main, [
            "watch", "sample", "--judge", "openai/judge", "--output", str(tmp_path / "w"),
            "--canary", "1", "--api-base", server.url, *option], env=ENV)
        calls = server.requests
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and message in output, output
    assert "Traceback" not in output and not (tmp_path / "w" / WATCH_FILE).exists()
    assert not calls


def test_a_watch_refuses_a_line_appended_from_another(tmp_path):
    """End to end: one real step, then a line of another judge's watch appended; the next
    invocation names the line, exit 2, and nothing is asked."""
    out = tmp_path / "w"
    args = ["watch", "sample", "--judge", "openai/judge", "--output", str(out), "--canary",
            "1"]
    with ChatServer(script=judge) as server:
        result = CliRunner().invoke(main, [*args, "--api-base", server.url], env=ENV)
        assert result.exit_code == 0, result.output
        (line,) = (out / WATCH_FILE).read_text().splitlines()
        step = json.loads(line)
        step.update(step=2, judge="openai/another")
        with (out / WATCH_FILE).open("a") as file:
            file.write(json.dumps(step) + "\n")
        asked = len(server.requests)
        result = CliRunner().invoke(main, [*args, "--api-base", server.url], env=ENV)
        assert len(server.requests) == asked
    output = " ".join(result.output.split())
    assert result.exit_code == 2 and "watch.jsonl, line 2" in output, output
    assert "openai/another" in output
