"""Issue 39: one stage protocol. The contributing page's example stage (a whole new
stage in one file, docs/examples/gold_audit.py) runs, resumes, prices and refuses like
fbi's own; every model-calling stage of fbi implements the same protocol."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from conftest import load_example
from openai_server import ChatServer

from fbi import load_dataset
from fbi.errors import InputError
from fbi.providers import ModelClient
from fbi.runs import Stage
from fbi.settings import ModelSettings

ROOT = Path(__file__).resolve().parents[1]


def example():
    return load_example("gold_audit")


def audits(request: dict) -> str:
    """A model that finds every gold answer correct, except those mentioning Marlowe."""
    text = request["messages"][-1]["content"]
    return json.dumps({"correct": "Marlowe" not in text})


@pytest.mark.slow
def test_the_example_stage_runs_resumes_and_prices_like_fbis_own(tmp_path):
    gold_audit = example()
    dataset = load_dataset("sample")
    with ChatServer(script=audits) as server:
        settings = ModelSettings(model="openai/auditor", api_base=server.url)
        stage = gold_audit.GoldAuditStage(dataset, settings, tmp_path / "audit")
        assert isinstance(stage, Stage)
        totals = stage.run(ModelClient())
        assert totals.completed == len(dataset) and totals.failed == 0
        records = [json.loads(line) for line in
                   (tmp_path / "audit" / "audit.jsonl").read_text().splitlines()]
        assert len(records) == len(dataset) and all(r["correct"] is True for r in records)
        spec = json.loads((tmp_path / "audit" / "run.json").read_text())
        assert spec["totals"]["completed"] == len(dataset) and spec["model"] == "openai/auditor"
        # the header is the harness's: the example wrote none of it
        assert spec["kind"] == "gold-audit" and spec["fbi_version"] and spec["command"]
        assert spec["created_at"] == spec["updated_at"] or spec["created_at"]
        asked = server.counts["ok"]
        again = stage.run(ModelClient())  # resumed: nothing to make
        assert again.completed == 0 and again.already_done == len(dataset)
        assert server.counts["ok"] == asked + 1  # the probe (the example names no requests)
        priced = stage.dry_run(ModelClient())
        assert priced.calls == len(dataset) and priced.done == len(dataset)
        assert priced.to_call == 0
        other = gold_audit.GoldAuditStage(
            dataset, ModelSettings(model="openai/other", api_base=server.url),
            tmp_path / "audit")
        with pytest.raises(InputError, match="holds another run"):
            other.run(ModelClient())


def test_every_stage_is_in_the_one_registry_of_run_kinds(tmp_path):
    """Run kinds come from one registry (issue 52): fbi's five stages, and a new stage as
    soon as its module is imported; the viewer lists a plug-in stage's run; an unknown
    kind is refused with the closest names; two stages cannot share a kind."""
    from fbi.errors import UnknownName
    from fbi.hunt import Hunt
    from fbi.judge import Evaluation, ExplanationChecks
    from fbi.perturb import Perturber
    from fbi.robustness import RobustnessRun
    from fbi.runs import stage_kind, stage_kinds
    from fbi.view import discover

    kinds = stage_kinds()
    assert {kind: kinds[kind] for kind in ("evaluate", "explain-check", "perturb",
                                           "robustness", "hunt")} == {
        "evaluate": Evaluation, "explain-check": ExplanationChecks, "perturb": Perturber,
        "robustness": RobustnessRun, "hunt": Hunt}
    assert all(issubclass(stage, Stage) and stage.kind == kind
               for kind, stage in kinds.items())
    gold_audit = example()
    assert stage_kind("gold-audit") is gold_audit.GoldAuditStage
    with pytest.raises(UnknownName, match="evaluate"):
        stage_kind("evaluat")
    with pytest.raises(ValueError, match="two run kinds are named 'hunt'"):
        type("Impostor", (gold_audit.GoldAuditStage,), {"kind": "hunt"})
    assert stage_kind("hunt") is Hunt
    with ChatServer(script=audits) as server:
        settings = ModelSettings(model="openai/auditor", api_base=server.url)
        dataset = load_dataset("sample")
        gold_audit.GoldAuditStage(dataset, settings, tmp_path / "audit").run(ModelClient())
    (entry,) = discover([tmp_path])
    assert entry.kind == "gold-audit" and entry.status == "finished"
    assert not entry.judgeable and not entry.reported


def test_only_the_harness_runs_calls():
    """A stage plans; the harness runs: no stage package imports the runner, the batch
    engine or the run folder's writer (the stage protocol is the one way in)."""
    import ast

    engine = {"execute", "execute_phase", "BatchRunner", "RunFolder", "perform"}
    offenders = []
    for package in ("judge", "perturb", "robustness", "vet", "report"):
        for path in (ROOT / "fbi" / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "fbi.runs"):
                    offenders += [f"{path.relative_to(ROOT)}: {alias.name}"
                                  for alias in node.names if alias.name in engine]
    assert not offenders, offenders


def test_the_example_provider_is_registered_and_judges(tmp_path):
    """The contributing page's provider example: registered by importing it, its model
    strings (gateway/NAME) go through its transport, with its key in its header."""
    from click.testing import CliRunner

    from fbi.cli import main
    from fbi.providers import PROVIDERS, provider_for

    module = load_example("keyed_gateway")
    try:
        assert provider_for("gateway/judge", "http://x/v1").transport is module.KeyedGateway
        assert provider_for("gateway/judge", None) is None  # without a server: litellm's
        with ChatServer(api_key="gw-key-1234", key_header="api-key") as server:
            result = CliRunner().invoke(main, [
                "evaluate", "--judge", "gateway/judge", "--api-base", server.url,
                "--api-key", "gw-key-1234", "--output", str(tmp_path / "run"),
                "--category", "entity", "--no-cache"])
            assert result.exit_code == 0, result.output
            assert server.counts["ok"] == 1 + 2  # the probe and the two calls
        records = [json.loads(line) for line in
                   (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
        assert len(records) == 2 and all(r["status"] == "ok" for r in records)
    finally:
        PROVIDERS.remove("gateway")


@pytest.mark.slow
def test_max_cost_covers_every_log_of_a_stage(tmp_path):
    """--max-cost is the stage's: a second phase writing another log (a robustness run's
    answers after its rewrites, a hunt's judge after its perturber) may spend only what
    the first left. A priced model on the loopback server; what each log holds is summed."""
    gold_audit = example()
    dataset = load_dataset("sample")

    class TwoLogs(gold_audit.GoldAuditStage):
        def phases(self):
            instances = list(dataset.instances)
            for half, name in ((instances[:10], "first"),
                               (instances[10:], "second")):
                whole = self.dataset
                self.dataset = type(whole)(whole.spec, half, len(half))
                phase = next(super().phases())
                self.dataset = whole
                yield dataclasses.replace(phase, log=self.output / f"{name}.jsonl",
                                          total=len(half))

    def cost(folder: Path) -> float:
        logs = [folder / f"{name}.jsonl" for name in ("first", "second")]
        return sum(json.loads(line)["cost"] or 0 for log in logs if log.exists()
                   for line in log.read_text().splitlines())

    with ChatServer(script=audits) as server:
        priced = ModelSettings(model="openai/gpt-4o-mini", api_base=server.url)
        TwoLogs(dataset, priced, tmp_path / "whole").run(ModelClient())
        whole = cost(tmp_path / "whole")
        budget = 0.5 * whole  # more than the first log costs, less than both
        capped = TwoLogs(dataset, priced.model_copy(update={"max_cost": budget}),
                         tmp_path / "capped")
        totals = capped.run(ModelClient())
    assert whole > 0 and totals.stopped_by_budget
    assert 0.2 * whole < cost(tmp_path / "capped") <= budget
    assert (tmp_path / "capped" / "second.jsonl").exists()  # (the first left room)
