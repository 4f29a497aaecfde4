"""Vetting perturbations: annotators' event logs, their current state, and the vetted set.

Each annotator appends to an own event log beside the queue
(``QUEUE.ANNOTATOR.events.jsonl``); an event is written and fsynced before the tool moves
on, so an abrupt stop loses nothing submitted. The state of an annotator's labels is a
fold over their events (an ``undo`` event cancels the event it names). Adjudications go
to ``QUEUE.adjudications.jsonl`` in the same way. Nothing here draws on a screen.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fbi.errors import InputError
from fbi.logs import append_durably, read_log
from fbi.records import Instance, VettingLabel
from fbi.taxonomy import SCORE_INVARIANT, get_category

#: The labels an annotator can give (``unvetted`` is the absence of one).
LABELS = tuple(label.value for label in VettingLabel if label is not VettingLabel.UNVETTED)
#: The key for each label, and what it means: the vetting TUI and the adjudicator alike.
LABEL_KEYS = {
    "v": ("valid", "the error is real and of the named category"),
    "x": ("invalid", "no real error, the wrong kind of error, or the answer is broken"),
    "s": ("score-invariant", "the change does not make the answer worse"),
    "r": ("not-relevant", "the category does not fit this prompt at all"),
    "n": ("not-sure", "you cannot decide; it goes to adjudication"),
}
Action = Literal["label", "note", "edit", "skip", "undo"]
_ANNOTATOR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class AnnotationEvent(BaseModel):
    """One thing an annotator did: a line of their event log."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """The record format's version."""
    event_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    """Unique; an undo names the event it undoes."""
    timestamp: str = Field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat())
    """When it happened (ISO 8601, UTC)."""
    annotator: str
    """Who did it."""
    instance_id: str
    """The instance it concerns."""
    action: Action
    """``label``, ``note``, ``edit``, ``skip`` or ``undo``."""
    label: VettingLabel | None = None
    """The label given (``label`` events)."""
    note: str | None = None
    """The note written (``note`` events)."""
    edited_answer: str | None = None
    """The perturbed answer as the annotator edited it (``edit`` events)."""
    undoes: str | None = None
    """For undo: the event it cancels."""


class Adjudication(BaseModel):
    """A final label settled by an adjudicator: a line of ``QUEUE.adjudications.jsonl``."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """The record format's version."""
    timestamp: str = Field(default_factory=lambda: dt.datetime.now(dt.timezone.utc).isoformat())
    """When it was settled (ISO 8601, UTC)."""
    instance_id: str
    """The instance settled."""
    adjudicator: str
    """Who settled it."""
    final_label: VettingLabel
    """The label it settled on."""
    labels_seen: dict[str, str]
    """Annotator → label at the time."""
    note: str | None = None
    """Why, if the adjudicator said."""


@dataclass
class ItemState:
    """An annotator's current view of one instance."""

    label: VettingLabel | None = None
    """The label last given, after undos."""
    note: str | None = None
    """The note last written."""
    edited_answer: str | None = None
    """The perturbed answer as last edited."""
    labelled_at: str | None = None
    """When the label was given (ISO 8601, UTC)."""
    edited_at: str | None = None
    """When the answer was last edited (ISO 8601, UTC)."""


def check_annotator(name: str) -> str:
    """An annotator's name, checked to be usable in a file name."""
    if not _ANNOTATOR.match(name):
        raise InputError(f"annotator name '{name}' is not usable in a file name. Fix: use "
                         "letters, digits, '.', '_' or '-' (up to 64)")
    return name


def log_path(queue: str | Path, annotator: str) -> Path:
    """An annotator's event log beside a queue: `QUEUE-STEM.NAME.events.jsonl`."""
    queue = Path(queue)
    return queue.with_name(f"{queue.stem}.{check_annotator(annotator)}.events.jsonl")


def adjudications_path(queue: str | Path) -> Path:
    """The adjudication log beside a queue: `QUEUE-STEM.adjudications.jsonl`."""
    queue = Path(queue)
    return queue.with_name(f"{queue.stem}.adjudications.jsonl")


def read_events(path: Path, model: type[BaseModel]) -> list:
    """Every record of a log (fbi's one JSONL policy: a torn last line, from a crash or a
    full disk mid-write, is dropped; any other bad line is an error naming it)."""
    contents = read_log(path, model)
    if contents.problem():
        raise InputError(contents.problem())
    return contents.records


def fold(events: list[AnnotationEvent], undone: set[str] | None = None
         ) -> dict[str, ItemState]:
    """The current state of each instance after these events (undo cancels an event)."""
    if undone is None:
        undone = {e.undoes for e in events if e.action == "undo"}
    state: dict[str, ItemState] = {}
    for event in events:
        if event.event_id in undone or event.action in ("undo", "skip"):
            continue
        item = state.setdefault(event.instance_id, ItemState())
        if event.action == "label":
            item.label, item.labelled_at = event.label, event.timestamp
        elif event.action == "note":
            item.note = event.note
        elif event.action == "edit":
            item.edited_answer, item.edited_at = event.edited_answer, event.timestamp
    return state


class AnnotatorLog:
    """One annotator's log over a queue: durable appends and the folded state.

    The state is folded once when the log is opened and kept current event by event
    (an undo refolds only its item's events), so a key press costs the same at 2,400
    items as at 10.
    """

    def __init__(self, queue: str | Path, annotator: str):
        self.annotator = check_annotator(annotator)
        self.path = log_path(queue, annotator)
        self.events: list[AnnotationEvent] = read_events(self.path, AnnotationEvent)
        self._undone = {e.undoes for e in self.events if e.action == "undo"}
        self._by_id = {e.event_id: e for e in self.events}
        self._by_item: dict[str, list[AnnotationEvent]] = {}
        for event in self.events:
            self._by_item.setdefault(event.instance_id, []).append(event)
        self._state = fold(self.events, self._undone)

    @property
    def state(self) -> dict[str, ItemState]:
        return self._state

    def label_of(self, instance_id: str) -> str | None:
        item = self._state.get(instance_id)
        return item.label.value if item and item.label else None

    def record(self, instance_id: str, action: Action, **fields) -> AnnotationEvent:
        """Write an event durably, then remember it. Raises OSError if it cannot be saved."""
        event = AnnotationEvent(annotator=self.annotator, instance_id=instance_id,
                                action=action, **fields)
        append_durably(self.path, event)
        self.events.append(event)
        self._by_id[event.event_id] = event
        target = instance_id
        if action == "undo" and event.undoes in self._by_id:
            self._undone.add(event.undoes)
            target = self._by_id[event.undoes].instance_id
        self._by_item.setdefault(instance_id, []).append(event)
        refolded = fold(self._by_item.get(target, []), self._undone).get(target)
        if refolded is None:
            self._state.pop(target, None)
        else:
            self._state[target] = refolded
        return event

    def last_undoable(self) -> AnnotationEvent | None:
        """The latest label, note or edit not yet undone."""
        for event in reversed(self.events):
            if event.action in ("label", "note", "edit") and event.event_id not in self._undone:
                return event
        return None


def load_queue(queue: str | Path) -> list[Instance]:
    """The instances of a vetting queue (a `.jsonl` file)."""
    from fbi.datasets import load_dataset

    path = Path(queue)
    if path.suffix.lower() != ".jsonl":
        raise InputError(f"{queue}: a vetting queue is a .jsonl file written by `fbi perturb` "
                         "or `fbi datasets convert`")
    return load_dataset(str(path), reader="fbi").instances  # fbi's own file: name lines


def all_annotator_logs(queue: str | Path) -> dict[str, dict[str, ItemState]]:
    """annotator → their folded state, for every event log beside the queue."""
    queue = Path(queue)
    logs = {}
    for path in sorted(queue.parent.glob(f"{queue.stem}.*.events.jsonl")):
        annotator = path.name[len(queue.stem) + 1: -len(".events.jsonl")]
        logs[annotator] = fold(read_events(path, AnnotationEvent))
    return logs


# ------------------------------------------------------------------ settling and export


@dataclass
class Resolution:
    """One instance's settled vetting: every annotator's label, the final label (or None) and
    how it was reached."""
    instance: Instance
    """The instance as queued."""
    labels: dict[str, str]
    """Annotator → label."""
    final: VettingLabel | None
    """None: not settled (a disagreement, or nobody labelled)."""
    how: str
    """How the final label was reached: ``adjudicated``, ``unanimous``, ``single``,
    ``disagreement``, ``unlabelled`` or ``pre-vetted`` (a manipulation's twin that came
    labelled and no one relabelled)."""
    edited_answer: str | None = None
    """The edited perturbed answer that stands, if any."""
    notes: dict[str, str] = field(default_factory=dict)
    """Annotator → note."""
    edits: dict[str, str] = field(default_factory=dict)
    """Annotator → edited answer."""


def resolve(queue: str | Path) -> list[Resolution]:
    """Each instance's final label: an adjudication wins, else the annotators' agreement."""
    instances = load_queue(queue)
    logs = all_annotator_logs(queue)
    adjudicated = {a.instance_id: a for a in read_events(adjudications_path(queue),
                                                           Adjudication)}
    # the unmanipulated twins of a manipulation queue (`fbi perturb --categories
    # manipulation/*`) arrive vetted: what a manipulation is measured against
    twins = {i.provenance.original_id for i in instances
             if get_category(i.category).family == "manipulation"}
    resolutions = []
    for instance in instances:
        states = {name: log[instance.id] for name, log in logs.items()
                  if instance.id in log and log[instance.id].label is not None}
        labels = {name: s.label.value for name, s in states.items()}  # type: ignore[union-attr]
        if instance.id in adjudicated:
            final, how = adjudicated[instance.id].final_label, "adjudicated"
        elif not labels and instance.id in twins and instance.label is not \
                VettingLabel.UNVETTED:  # a twin keeps the label it came with
            final, how = instance.label, "pre-vetted"
        elif not labels:
            final, how = None, "unlabelled"
        elif len(set(labels.values())) == 1:
            final = VettingLabel(next(iter(labels.values())))
            how = "unanimous" if len(labels) > 1 else "single"
        else:
            final, how = None, "disagreement"
        # The newest edit by an annotator who gave the final label is applied.
        edits = sorted((s.edited_at or "", s.edited_answer) for name, s in states.items()
                       if s.edited_answer and final is not None and labels[name] == final.value)
        every_state = {name: log[instance.id] for name, log in logs.items()
                       if instance.id in log}
        resolutions.append(Resolution(
            instance, labels, final, how, edits[-1][1] if edits else None,
            notes={n: s.note for n, s in every_state.items() if s.note},
            edits={n: s.edited_answer for n, s in every_state.items() if s.edited_answer}))
    return resolutions


@dataclass
class ExportTally:
    """What an export kept (by category), dropped (by reason) and how many answers it took from
    an edit."""
    kept: Counter = field(default_factory=Counter)
    """By category."""
    dropped: Counter = field(default_factory=Counter)
    """By reason."""
    edited: int = 0
    """Instances whose perturbed answer was taken from an annotator's edit."""


def vetted_instances(resolutions: list[Resolution]) -> tuple[list[Instance], ExportTally]:
    """The vetted set: valid ones keep their category, score-invariant ones join the
    score-invariant set, the rest are dropped and counted."""
    kept, tally = [], ExportTally()
    for r in resolutions:
        if r.final is None:
            tally.dropped[r.how] += 1
            continue
        if r.final not in (VettingLabel.VALID, VettingLabel.SCORE_INVARIANT):
            tally.dropped[r.final.value] += 1
            continue
        update: dict = {"label": r.final}
        if r.final is VettingLabel.SCORE_INVARIANT:
            update["category"] = SCORE_INVARIANT
        if r.edited_answer is not None:
            update["perturbed_answer"] = r.edited_answer
            tally.edited += 1
        instance = Instance(**{**r.instance.model_dump(), **update})
        tally.kept[instance.category] += 1
        kept.append(instance)
    return kept, tally


def labels_table(resolutions: list[Resolution]) -> dict[str, dict[str, str]]:
    """annotator → {instance id: label}, for agreement statistics."""
    table: dict[str, dict[str, str]] = {}
    for r in resolutions:
        for name, label in r.labels.items():
            table.setdefault(name, {})[r.instance.id] = label
    return table
