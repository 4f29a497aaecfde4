"""Publishing to the Hub: the folder layout, the card, and an upload to a local Hub server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import OUTSIDE_CHECKOUT
from hub_server import HubServer

from fbi import load_dataset, write_dataset
from fbi.cli import main

TOKEN = "hf_fbi_test_TOKEN_never_on_disk"


def card_metadata(folder: Path) -> dict:
    return yaml.safe_load((folder / "README.md").read_text().split("---")[1])


def test_dry_run_writes_a_folder_that_loads_back(tmp_path):
    folder = tmp_path / "hub"
    result = CliRunner().invoke(main, ["publish", "sample", "--repo-id", "org/fbi-sample",
                                       "--dry-run", "--output", str(folder)])
    assert result.exit_code == 0, result.output
    assert "nothing uploaded" in result.output
    meta = card_metadata(folder)
    assert meta["license"] == "cc-by-4.0" and meta["size_categories"] == ["n<1K"]
    assert meta["task_categories"]
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {"factual", "instruction-following", "long-form", "reasoning",
                            "score-invariant"}
    assert len(configs["factual"]["data_files"]) == 6
    # datasets reads each config, one split per category
    import datasets

    factual = datasets.load_dataset(str(folder), "factual")
    assert set(factual) == {"contextual", "entity", "incorrect_fact", "number_errors",
                            "opposite_fact", "remove_fact"}
    assert factual["entity"].num_rows == 3
    # and fbi reads the whole folder back, losslessly
    back = load_dataset(str(folder))
    assert sorted(back.instances, key=lambda i: i.id) == sorted(load_dataset("sample").instances,
                                                               key=lambda i: i.id)
    text = (folder / "README.md").read_text()
    assert "| factual | Entity |" in text and "| `perturbed_answer` |" in text
    assert "## How it was vetted" in text and "`human` (72)" in text


def publish(server: HubServer, tmp_path: Path, *extra: str, token: str | None = TOKEN):
    env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(tmp_path / "hf-home"),
           "HF_HUB_OFFLINE": "0"}
    env.pop("HF_TOKEN", None)
    if token:
        env["HF_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "fbi", "publish", "sample", "--repo-id",
                           "org/fbi-sample", "--output", str(tmp_path / "hub"),
                           "--license", "cc-by-4.0", *extra],
                          env=env, capture_output=True, text=True, timeout=300,
                          cwd=OUTSIDE_CHECKOUT)


def test_upload_end_to_end(tmp_path):
    with HubServer() as hub:
        result = publish(hub, tmp_path, "--private")
    assert result.returncode == 0, result.stderr
    assert hub.repos == [{"name": "fbi-sample", "organization": "org",
                          "visibility": "private", "type": "dataset"}]
    folder = tmp_path / "hub"
    local = {p.relative_to(folder).as_posix(): p.read_bytes()
             for p in folder.rglob("*") if p.is_file() and p.name != ".fbi-output.json"}
    assert hub.files == local  # every file arrived intact (fbi's marker stays home)
    assert "README.md" in hub.files and len(hub.files) == 24
    assert hub.commits[0]["revision"] == "main"
    assert f"Bearer {TOKEN}" in hub.authorization  # the token was used ...
    for content in [*local.values(), *hub.files.values()]:
        assert TOKEN.encode() not in content  # ... and written nowhere
    assert TOKEN not in result.stdout + result.stderr


def test_create_pr_opens_a_pull_request(tmp_path):
    with HubServer() as hub:
        result = publish(hub, tmp_path, "--create-pr")
    assert result.returncode == 0, result.stderr
    assert len(hub.pull_requests) == 1 and hub.commits[0]["revision"] == "refs/pr/1"
    assert "discussions/1" in result.stdout


def test_without_a_token_publish_says_how_to_log_in(tmp_path):
    with HubServer() as hub:
        result = publish(hub, tmp_path, token=None)
        assert hub.repos == []
    assert result.returncode == 2 and "HF_TOKEN" in result.stderr
    assert (tmp_path / "hub" / "README.md").exists()  # the folder is kept for a retry


def test_card_carries_agreement_figures(tmp_path):
    from fbi import write_dataset
    from fbi.vet import AnnotatorLog

    queue = tmp_path / "queue.jsonl"
    instances = [i for i in load_dataset("sample") if i.category == "entity"]
    write_dataset(instances, queue)
    for name, labels in (("ann", ["valid", "valid", "invalid"]),
                         ("ben", ["valid", "invalid", "invalid"])):
        log = AnnotatorLog(queue, name)
        for instance, label in zip(instances, labels, strict=True):
            log.record(instance.id, "label", label=label)
    result = CliRunner().invoke(main, ["publish", str(queue), "--repo-id", "org/x",
                                       "--dry-run", "--output", str(tmp_path / "hub"),
                                       "--queue", str(queue)])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "hub" / "README.md").read_text()
    assert "| percent agreement | 0.667 |" in text and "Cohen's κ ann × ben" in text
    # Issue 26: the card said "disagreements were adjudicated" with one left unsettled.
    assert "adjudicated" not in text.replace("no adjudication", "")
    assert ("3 in the queue, 2 labelled alike by every annotator who saw them; 1 with "
            "annotators who disagreed and no adjudication.") in text


def test_a_card_without_the_queue_claims_nothing_about_vetting(tmp_path):
    result = CliRunner().invoke(main, ["publish", "sample", "--repo-id", "org/x", "--dry-run",
                                       "--output", str(tmp_path / "hub")])
    assert result.exit_code == 0, result.output
    assert "licence: cc-by-4.0 assumed for this dry run" in result.output
    text = (tmp_path / "hub" / "README.md").read_text()
    assert "adjudicat" not in text and "labelled by people" not in text
    assert "how these labels were reached is not recorded here" in text


def test_an_upload_needs_a_licence_named(tmp_path):
    result = CliRunner().invoke(main, ["publish", "sample", "--repo-id", "org/x", "--output",
                                       str(tmp_path / "hub")])
    assert result.exit_code == 2 and "--license is required to upload" in result.output
    assert not (tmp_path / "hub").exists()


@pytest.mark.parametrize("repo_id", ["no-slash", "a/b/c"])
def test_bad_repo_id(tmp_path, repo_id):
    env = {**os.environ, "HF_TOKEN": TOKEN, "HF_HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "fbi", "publish", "sample", "--repo-id",
                             repo_id, "--license", "mit", "--output", str(tmp_path / "hub")],
                            env=env,
                            capture_output=True, text=True, cwd=OUTSIDE_CHECKOUT)
    assert result.returncode == 2 and "ORG/NAME" in result.stderr


@pytest.mark.parametrize("license_id", ["mit\nconfigs: []", "MIT License", ""])
def test_bad_licence_is_refused_before_anything_is_written(tmp_path, license_id):
    result = CliRunner().invoke(main, ["publish", "sample", "--repo-id", "org/x", "--dry-run",
                                       "--license", license_id, "--output",
                                       str(tmp_path / "hub")])
    assert result.exit_code == 2 and "not a licence identifier" in result.output
    assert not (tmp_path / "hub").exists()


def test_a_reused_output_folder_holds_only_the_new_publish(tmp_path):
    folder = tmp_path / "hub"
    assert CliRunner().invoke(main, ["publish", "sample", "--repo-id", "org/x", "--dry-run",
                                     "--output", str(folder)]).exit_code == 0
    assert len(list(folder.glob("data/*/*.parquet"))) == 23
    one = tmp_path / "one.jsonl"
    write_dataset([i for i in load_dataset("sample") if i.category == "entity"], one)
    result = CliRunner().invoke(main, ["publish", str(one), "--repo-id", "org/x", "--dry-run",
                                       "--output", str(folder)])
    assert result.exit_code == 0, result.output
    assert [p.relative_to(folder).as_posix() for p in folder.glob("data/*/*.parquet")] == \
        ["data/factual/entity.parquet"]
    assert len(load_dataset(str(folder)).instances) == 3  # what the card says, no more


@pytest.mark.slow
def test_a_hub_dataset_by_revision_config_and_split(tmp_path):
    """hf:ORG/NAME@REVISION?config=…&split=… (or --hf-config/--hf-split): downloaded with
    huggingface_hub's snapshot_download from a local Hub server, read by
    datasets.load_dataset (the card's configs, their splits)."""
    def published(name: str, spec: str) -> dict[str, bytes]:
        folder = tmp_path / name
        result = CliRunner().invoke(main, ["publish", spec, "--repo-id", "org/fbi-sample",
                                           "--dry-run", "--output", str(folder)])
        assert result.exit_code == 0, result.output
        return {p.relative_to(folder).as_posix(): p.read_bytes()
                for p in folder.rglob("*") if p.is_file()}

    no_reasoning = tmp_path / "no-reasoning.jsonl"
    kept = [i for i in load_dataset("sample") if i.ability.value != "reasoning"]
    write_dataset(kept, no_reasoning)
    files = published("v2", "sample")
    older = published("v1", str(no_reasoning))
    torn = {k: v for k, v in files.items() if not k.startswith("data/reasoning/")}
    with HubServer() as server:
        server.serve("org/fbi-sample", "v2", files)
        server.serve("org/fbi-sample", "v1", older)
        server.serve("org/fbi-sample", "torn", torn)
        env = {**os.environ, "HF_ENDPOINT": server.url, "HF_HOME": str(tmp_path / "hf-home"),
               "HF_HUB_OFFLINE": "0", "FBI_CACHE": str(tmp_path / "c.sqlite"), "COLUMNS": "200"}

        def fbi(*args):
            return subprocess.run([sys.executable, "-m", "fbi", *args], env=env,
                                  capture_output=True, text=True, timeout=300,
                                  cwd=OUTSIDE_CHECKOUT)

        whole = fbi("datasets", "show", "hf:org/fbi-sample@v2")
        assert whole.returncode == 0 and "72 rows" in whole.stdout, whole.stderr
        old = fbi("datasets", "show", "hf:org/fbi-sample@v1")
        assert old.returncode == 0 and f"{len(kept)} rows" in old.stdout, old.stderr
        one = fbi("datasets", "show", "hf:org/fbi-sample@v2?config=factual&split=entity")
        assert one.returncode == 0 and "3 rows" in one.stdout, one.stderr
        judged = fbi("evaluate", "--dataset", "hf:org/fbi-sample@v2", "--hf-config",
                     "factual", "--hf-split", "entity", "--judge", "openai/x", "--api-base",
                     "http://127.0.0.1:9/v1", "--dry-run", "--output", str(tmp_path / "run"))
        assert judged.returncode == 0 and "judging 3 instances" in judged.stdout, judged.stderr
        lacking = fbi("datasets", "show", "hf:org/fbi-sample@torn?config=reasoning")
        assert lacking.returncode == 2 and "lists files the download lacks" in lacking.stderr
        assert "data/reasoning/" in lacking.stderr
        absent = fbi("datasets", "show", "hf:org/fbi-sample@v1?config=reasoning")
        assert absent.returncode == 2 and "no config 'reasoning'" in absent.stderr
        wrong = fbi("datasets", "show", "hf:org/fbi-sample@v2?config=maths")
        assert wrong.returncode == 2 and "no config 'maths'" in wrong.stderr
        assert "factual" in wrong.stderr  # the configs there are named
        no_split = fbi("datasets", "show", "hf:org/fbi-sample@v2?config=factual&split=x")
        assert no_split.returncode == 2 and "no split 'x'" in no_split.stderr
        assert "entity" in no_split.stderr
        gone = fbi("datasets", "show", "hf:org/fbi-sample@v9")
        assert gone.returncode == 2 and "hf:org/fbi-sample@v9" in gone.stderr
        for result in (lacking, absent, wrong, no_split, gone):
            assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_publish_never_touches_a_users_folder_and_uploads_only_its_own_files(tmp_path):
    """Issue 22: a folder holding a user's files is refused; --force writes beside them,
    never over them; the upload sends exactly the files fbi wrote."""
    folder = tmp_path / "hub"
    (folder / "data" / "mine").mkdir(parents=True)
    theirs = {"README.md": b"my notes\n", "data/mine/experiment.parquet": b"PAR1 mine",
              ".env": b"HF_TOKEN=secret\n"}
    for name, content in theirs.items():
        (folder / name).write_bytes(content)

    def unchanged() -> bool:
        return {p.relative_to(folder).as_posix(): p.read_bytes()
                for p in folder.rglob("*") if p.is_file()} == theirs

    with HubServer() as hub:
        refused = publish(hub, tmp_path, "--dry-run")
        assert refused.returncode == 2 and "fbi did not write" in refused.stderr
        assert "--force" in refused.stderr and unchanged()
        clash = publish(hub, tmp_path, "--dry-run", "--force")  # their README.md
        assert clash.returncode == 2 and "README.md" in clash.stderr and unchanged()
        assert "Traceback" not in refused.stderr + clash.stderr
        (folder / "README.md").unlink()
        del theirs["README.md"]
        forced = publish(hub, tmp_path, "--force")
        assert forced.returncode == 0, forced.stderr
        assert set(hub.files) == {"README.md"} | {
            p.relative_to(folder).as_posix() for p in (folder / "data").rglob("*.parquet")
            if p.parent.name != "mine"}
        assert ".env" not in hub.files and "data/mine/experiment.parquet" not in hub.files
        for name, content in theirs.items():
            assert (folder / name).read_bytes() == content  # still theirs, untouched
        again = publish(hub, tmp_path)  # fbi's folder now: no --force needed
        assert again.returncode == 0, again.stderr


def test_the_cards_example_names_a_config_the_folder_holds(tmp_path):
    """Issue 23: a dataset without factual instances is not shown loaded as "factual";
    the example in the card loads with datasets.load_dataset as written."""
    import datasets

    from fbi.vet import write_hub_folder

    reasoning = [i for i in load_dataset("sample") if i.ability.value == "reasoning"
                 and not i.is_score_invariant]
    folder = tmp_path / "hub"
    write_hub_folder(reasoning, folder, "org/reasoning-only")
    card = (folder / "README.md").read_text()
    (config,) = re.findall(r'load_dataset\("org/reasoning-only", "([\w-]+)"\)', card)
    assert config == "reasoning"
    loaded = datasets.load_dataset(str(folder), config)
    assert sum(split.num_rows for split in loaded.values()) == len(reasoning)
