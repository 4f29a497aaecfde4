"""A new stage, whole: ask a model whether each gold answer of a dataset is correct, so a
team can drop instances whose "gold" is wrong before judging with them.

This file is the example of docs/contributing.md, and it runs: tests/test_stage_protocol.py
runs it against the loopback server (resumed, priced, interrupted like any stage).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from fbi import Dataset
from fbi.providers import ModelRequest, ModelResponse
from fbi.records import CallRecord
from fbi.run_spec import DatasetRecord, RunIdentity
from fbi.runs import Call, Parsed, Phase, Stage, StageFolder
from fbi.settings import ModelSettings

SCHEMA = {"type": "object", "properties": {"correct": {"type": "boolean"}},
          "required": ["correct"], "additionalProperties": False}


class GoldAudit(CallRecord):
    """One line of ``audit.jsonl``: what the model said of one gold answer. A record is a
    :class:`fbi.records.CallRecord` (id, raw reply, status, usage) with the stage's own
    fields beside it."""

    instance_id: str
    correct: bool | None = None


def read_verdict(responses: list[ModelResponse]) -> Parsed:
    """How a reply becomes the record's fields: ``ok`` with them, or ``unparseable`` with
    why (never a guess)."""
    try:
        value = json.loads(responses[0].text).get("correct")
    except (ValueError, AttributeError):
        value = None
    if not isinstance(value, bool):
        return Parsed("unparseable", reason="no true or false")
    return Parsed("ok", {"correct": value})


class GoldAuditStage(Stage):
    """The stage: its kind (which registers it), its settings, its folder, what its run is,
    and its one phase of calls."""

    kind = "gold-audit"
    title = "whether each gold answer of a dataset is correct"
    outputs = ("audit.jsonl",)

    def __init__(self, dataset: Dataset, settings: ModelSettings, output: str | Path):
        self.dataset, self.settings = dataset, settings
        self.output = Path(output)
        self.folder = StageFolder(self.output / "run.json")

    def identity(self) -> RunIdentity:
        """What makes a run this run (the harness adds the kind, versions and totals)."""
        return RunIdentity(model=self.settings.model, api_base=self.settings.api_base,
                           dataset=DatasetRecord(spec=self.dataset.spec,
                                                 fingerprint=self.dataset.fingerprint))

    def phases(self) -> Iterator[Phase]:
        calls = (Call(f"{i.id}|audit", ModelRequest(
            self.settings.model, (("user", f"Question: {i.instruction}\nAnswer: "
                                           f"{i.gold_answer}\nIs the answer correct? Reply "
                                           'as JSON: {"correct": true or false}'),),
            max_tokens=20, response_schema=SCHEMA, api_base=self.settings.api_base),
            GoldAudit, {"instance_id": i.id}, read_verdict) for i in self.dataset)
        yield Phase(self.output / "audit.jsonl", GoldAudit, calls, total=len(self.dataset))
