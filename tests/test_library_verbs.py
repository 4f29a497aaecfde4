"""The library verbs (issue 64): ``fbi.evaluate``, ``fbi.gate``, ``fbi.watch``,
``fbi.hunt``, ``fbi.trust`` and ``fbi.report`` do what their commands do — the commands
are these calls under their options — against the stand-in judge on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import fbi
from fbi.cli import main
from fbi.errors import InputError
from fbi.judge import EvaluationConfig
from fbi.settings import ModelSettings
from fbi.standin import StandIn

#: The quick dataset: the first instance of each of the 22 categories and one
#: score-invariant rewrite; Vanilla asks one call for the gold answer and one for the
#: perturbed answer of each.
QUICK_CALLS = (22 + 1) * 2


@pytest.fixture(scope="module")
def judge():
    with StandIn() as server:
        yield ModelSettings(model="openai/stand-in", api_base=server.url)


def verdicts(folder) -> dict[str, tuple]:
    lines = (folder / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    return {r["call_id"]: (r["status"], r["score"], r["slot_verdict"])
            for r in map(json.loads, lines)}


def test_fbi_evaluate_is_what_fbi_evaluate_does(judge, tmp_path):
    result = fbi.evaluate(config=EvaluationConfig(model=judge), output=tmp_path / "verb",
                          client=judge.client(None))
    assert result.totals.completed == QUICK_CALLS and result.finished
    assert result.output == tmp_path / "verb"
    assert len(result.judgments()) == QUICK_CALLS
    command = CliRunner().invoke(main, [
        "evaluate", "--judge", judge.model, "--api-base", judge.api_base, "--no-cache",
        "--output", str(tmp_path / "command")])
    assert command.exit_code == 0, command.output
    assert verdicts(tmp_path / "verb") == verdicts(tmp_path / "command")
    with pytest.raises(ValueError, match="not both"):
        fbi.evaluate("openai/other", config=EvaluationConfig(model=judge))


@pytest.mark.slow
def test_the_verbs_are_their_packages_called(judge, tmp_path):
    import fbi.gate
    import fbi.report

    assert fbi.gate.__name__ == "fbi.gate" and callable(fbi.gate)
    baseline = fbi.evaluate(config=EvaluationConfig(model=judge), output=tmp_path / "base",
                            client=judge.client(None)).output
    # the same judge again: every verdict the same, so no miss rate rose
    totals, result = fbi.gate("quick", baseline, tmp_path / "gate", judge)
    assert totals.completed == QUICK_CALLS and result is not None and result.passed
    assert json.loads((tmp_path / "gate" / "gate.json").read_text())["passed"] is True

    summary, files = fbi.report([baseline], tmp_path / "report", formats=("json", "md"))
    assert sorted(f.name for f in files) == ["report.md", "summary.json"]
    assert all(f.is_file() for f in files) and summary.runs


@pytest.mark.slow
def test_fbi_watch_asks_one_step(judge, tmp_path):
    from fbi.watch import WatchConfig

    totals, step = fbi.watch("quick", tmp_path / "watch",
                             WatchConfig(judge, per_category=1))
    # one draw per canary instance (one a category here), two calls each
    assert step is not None and step.step == 1 and step.calls == QUICK_CALLS
    assert totals.completed == QUICK_CALLS
    totals, step = fbi.watch("quick", tmp_path / "watch", WatchConfig(judge, per_category=1))
    assert step.step == 2  # the next call adds the next step


@pytest.mark.slow
def test_fbi_hunt_searches_within_its_budget(judge, tmp_path):
    from fbi.hunt import HuntConfig

    announced = []
    totals, result, queued = fbi.hunt(HuntConfig(model=judge, budget=300),
                                      tmp_path / "hunt", announce=announced.append)
    assert len(announced) == 1 and announced[0].rows_read == 72  # the sample's rows
    assert totals.requests <= 300
    assert result is not None and (tmp_path / "hunt" / "hunt.json").is_file()
    assert queued == len((tmp_path / "hunt" / "queue.jsonl").read_text().splitlines())


def test_fbi_trust_refuses_before_reading_a_folder(tmp_path):
    with pytest.raises(InputError, match="cascade needs at least two"):
        fbi.trust([], tmp_path / "labels.csv", cascade=[tmp_path / "missing"])


def test_no_command_lists_more_than_fifteen_parameters():
    """The commands are thin: options commands share come as one bundle parameter
    (fbi/cli/_bundles.py), so no command's function lists more than 15."""
    import inspect

    import click

    def commands(command, name):
        if isinstance(command, click.Group):
            context = click.Context(command)
            for sub in command.list_commands(context):
                yield from commands(command.get_command(context, sub),
                                    f"{name} {sub}".strip())
        else:
            yield name, command

    wide = {name: len(inspect.signature(inspect.unwrap(command.callback)).parameters)
            for name, command in commands(main, "")}
    assert len(wide) > 20  # every command was seen (lazy ones loaded)
    assert {name: n for name, n in wide.items() if n > 15} == {}
