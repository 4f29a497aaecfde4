"""``edits.jsonl``: every edit a hunt judged, one line each, written before its calls and
read back by byte offset (issue 49). The probe table keeps each row's offset, not its
texts, so a hunt's memory does not grow with the answers; the few edits shown as examples
or queued for vetting are read back at the end."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from fbi.errors import InputError
from fbi.files import open_regular
from fbi.hunt._operators import Edit, Operator
from fbi.hunt._predicates import EditView
from fbi.logs import read_log
from fbi.records import GoldItem, Instance, Provenance
from fbi.taxonomy import Ability
from fbi.trajectories import changed_step

EDIT_SCHEMA_VERSION = 1


class EditRecord(BaseModel):
    """A line of ``edits.jsonl``: one edit the hunt judged."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = EDIT_SCHEMA_VERSION
    """1."""
    id: str
    """The edit's id (the gold item's, the operator's name and a digest)."""
    item_id: str
    """The gold item edited."""
    operator: str
    """The operator's name."""
    placement: str | None = None
    """The place it was asked to be made in."""
    seed: int
    """The seed it was made with."""
    shown: str
    """The answer the judge saw (with any manipulation added)."""
    edited: str | None = None
    """The error edit before the manipulation was added (None: ``shown``)."""
    rationale: str = ""
    """What the operator changed, in words."""
    generator: str = ""
    """A model's edit: who made it."""


class EditLog:
    """``edits.jsonl`` of one hunt folder."""

    def __init__(self, path: Path, items: dict[str, GoldItem]):
        self.path = path
        self.items = items
        """The gold items by id (an edit's line names its item)."""
        self.offsets: dict[str, int] = {}
        """Each edit's line, by edit id."""

    def read_index(self) -> None:
        """Where each edit already written lies (a resumed hunt writes none again)."""
        self.offsets = {}
        contents = read_log(self.path, EditRecord, keep=False,
                            visit_at=lambda record, at: self.offsets.__setitem__(record.id,
                                                                                 at))
        for bad in contents.bad_lines[:1]:
            raise InputError(f"{self.path}, line {bad.number}: not an edit ({bad.error}). "
                             "Fix: delete the hunt's folder and hunt again")

    def write(self, edits: list[Edit]) -> list[int]:
        """Each edit's offset, writing the ones not yet in the file."""
        new = [e for e in dict.fromkeys(edits) if e.id not in self.offsets]
        if new:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open_regular(self.path, "ab") as out:
                for edit in new:
                    if edit.id in self.offsets:
                        continue
                    self.offsets[edit.id] = out.tell()
                    record = EditRecord(
                        id=edit.id, item_id=edit.item.id, operator=edit.operator.name,
                        placement=edit.placement, seed=edit.seed, shown=edit.shown,
                        edited=edit.edited if edit.edited != edit.shown else None,
                        rationale=edit.rationale, generator=edit.generator)
                    out.write(record.model_dump_json().encode() + b"\n")
        return [self.offsets[edit.id] for edit in edits]

    def read(self, offset: int) -> EditRecord:
        with open_regular(self.path, "rb") as file:
            file.seek(offset)
            return EditRecord.model_validate_json(file.readline())

    def instance(self, offset: int) -> Instance:
        """The edit at ``offset`` as the instance the judge saw."""
        record = self.read(offset)
        item = self.items[record.item_id]
        return Instance(id=record.id, ability=Ability(item.ability),
                        category=f"hunt/{record.operator.replace('/', '-')}",
                        instruction=item.instruction, context=item.context,
                        gold_answer=item.gold_answer, perturbed_answer=record.shown,
                        rationale=record.rationale or None,
                        provenance=Provenance(source=item.source, original_id=item.id,
                                              generator=record.generator or
                                              f"hunt:{record.operator}", seed=record.seed,
                                              changed_step=changed_step(
                                                  item.gold_answer, record.edited or
                                                  record.shown) if item.trajectory
                                              else None))

    def view(self, offset: int) -> EditView:
        """The edit at ``offset`` as predicates see it."""
        record = self.read(offset)
        item = self.items[record.item_id]
        operator = Operator.parse(record.operator)
        return EditView(item.question, item.gold_answer, record.edited or record.shown,
                        record.shown, item.ability, operator.name, operator.errors,
                        operator.manipulation)
