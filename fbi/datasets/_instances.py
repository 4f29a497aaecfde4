"""fbi's own row layout and the instances made of every layout's rows: the columns a row
may use (fbi's, the FBI release's names, a conversation in ``messages``), every check on
their values, and one Problem per bad row, never a silent drop. The containers that
produce the rows are in `fbi.datasets._containers`; which layout reads a row, in
`fbi.datasets._layouts`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from fbi.attack_texts import MASTER_KEY_PREFIX
from fbi.conversations import (
    ConversationError,
    check_context,
    parse_messages,
    shared_turns,
    split_final_turn,
)
from fbi.datasets._layouts import (
    RawRow,
    RowLayout,
    RowProblem,
    layout_of,
    readable_rows,
    register_layout,
    whole_number,
)
from fbi.datasets._store import InstanceStore
from fbi.errors import Problem
from fbi.records import (
    COLUMN_ALIASES,
    REQUIRED_COLUMNS,
    Instance,
    Provenance,
    VettingLabel,
    content_id,
)
from fbi.taxonomy import (
    HUNT_PREFIX,
    Ability,
    category_names,
    did_you_mean,
    get_category,
)

# FBI ids start with the ability of their prompt: "lf-12_...", "if-3_...", "factual-..."
_ID_PREFIX_ABILITY = {
    "lf": Ability.LONG_FORM,
    "if": Ability.INSTRUCTION_FOLLOWING,
    "factual": Ability.FACTUAL,
    "reasoning": Ability.REASONING,
}


@register_layout
class FbiColumns(RowLayout):
    """fbi's own columns (`fbi.records.Instance`'s, the FBI release's names through
    ``COLUMN_ALIASES``), a conversation in ``messages`` or ``context``: the layout every
    row another layout does not take is read as (asked last)."""

    name = "fbi"
    precedence = 0

    def detect(self, data: dict[str, Any]) -> bool:
        return True

    def rows(self, row: RawRow) -> list[dict[str, Any]]:
        return [conversation_row(row.data)]


def build_instances(rows: Iterable[RawRow]) -> tuple[InstanceStore, list[Problem]]:
    """Turn raw rows into instances; every bad row becomes a Problem, never a silent drop."""
    instances = InstanceStore()
    problems: list[Problem] = []
    first_seen: dict[str, tuple[str, str]] = {}  # id → (file, location): not the row
    missing_reported: set[tuple[str, str]] = set()
    for row in readable_rows(rows, problems):
        try:
            expanded = [_normalise(row, data) for data in layout_of(row.data).rows(row)]
        except RowProblem as problem:
            key = (row.file, problem.message)
            # A missing column of a file with a header is said once for the whole file.
            if problem.whole_file and not row.file.endswith(".jsonl"):
                if key not in missing_reported:
                    missing_reported.add(key)
                    problems.append(Problem(row.file, "", problem.message, problem.fix))
            else:
                problems.append(Problem(row.file, row.location, problem.message, problem.fix))
            continue
        for values in expanded:
            _add_instance(row, values, instances, problems, first_seen)
    return instances, problems


def _add_instance(row: RawRow, values: dict[str, Any], instances: InstanceStore,
                  problems: list[Problem], first_seen: dict[str, tuple[str, str]]) -> None:
    """One normalised row as an instance, or a Problem (a duplicate id, a bad value)."""
    instance_id = values["id"]
    prefix = row.defaults.get("_id_prefix")
    if prefix:  # the FBI release repeats ids across files: qualify by category
        instance_id = f"{prefix}:{instance_id}"
        number = 2
        while instance_id in first_seen and first_seen[instance_id][0] == row.file:
            instance_id = f"{prefix}:{values['id']}~{number}"
            number += 1
        values["id"] = instance_id
    if instance_id in first_seen:
        other_file, other_location = first_seen[instance_id]
        problems.append(Problem(
            row.file, row.location,
            f"duplicate id '{instance_id}' (first at {other_file}, {other_location})",
            "give every row its own id"))
        return
    try:
        instance = Instance(**values)
    except ValidationError as error:
        problems.append(Problem(row.file, row.location, _describe(error),
                                "correct the value"))
        return
    first_seen[instance_id] = (row.file, row.location)
    instances.append(instance)


#: UltraFeedback-binarized's columns beside its conversations, not kept: the chosen
#: conversation again, the first user turn, and the two ratings.
_CONVERSATION_METADATA = ("messages", "prompt", "score_chosen", "score_rejected")


def conversation_row(data: dict[str, Any]) -> dict[str, Any]:
    """A row whose instruction is a conversation in fbi's fields (`fbi.conversations`):
    a ``messages`` list ending with the assistant's answer (the gold answer; the turns
    before the last user turn its ``context``); a preference pair whose ``chosen`` and
    ``rejected`` are whole conversations sharing every turn but the last (HH-RLHF's and
    UltraFeedback-binarized's layout; ``prompt_id`` read as the id); a ``context`` column
    as fbi writes it. Other rows are returned as they are."""
    try:
        if is_conversation(data.get("chosen")) or is_conversation(data.get("rejected")):
            data = dict(data)
            chosen = parse_messages(data.pop("chosen"), "chosen")
            rejected = parse_messages(data.pop("rejected"), "rejected")
            context, question, good, bad = shared_turns(chosen, rejected)
            for name in _CONVERSATION_METADATA:
                data.pop(name, None)
            if "prompt_id" in data:
                data.setdefault("id", data.pop("prompt_id"))
            return {**data, "prompt": question, "chosen": good, "rejected": bad,
                    "context": context}
        if "messages" in data:
            clash = [c for c in ("instruction", "question", "gold_answer", "og", "context")
                     if data.get(c) not in (None, "")]
            if clash:
                raise RowProblem(f"both 'messages' and {clash[0]!r}",
                                 "give the conversation in messages, or the columns")
            data = dict(data)
            context, question, answer = split_final_turn(
                parse_messages(data.pop("messages"), "messages"))
            return {**data, "instruction": question, "gold_answer": answer,
                    "context": context}
        if data.get("context") not in (None, "", []):
            return {**data, "context": check_context(parse_messages(data["context"],
                                                                    "context"))}
    except ConversationError as error:
        raise RowProblem(str(error), "correct the conversation (turns of role and content: "
                         "docs/reference/formats.md)") from None
    return data


def is_conversation(value: Any) -> bool:
    """A list of messages (not of answers: best-of-N rows list text)."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict)


# Looked up once: pydantic's model_fields is a property, and cost 3 s a 200k rows.
_PROVENANCE_FIELDS = frozenset(Provenance.model_fields)
_INSTANCE_FIELDS = frozenset(Instance.model_fields)
_TEXT_FIELDS = ("ability", "category", "instruction", "gold_answer",
                "perturbed_answer", "rationale", "label")


def _normalise(row: RawRow, data: dict[str, Any]) -> dict[str, Any]:
    data = {COLUMN_ALIASES.get(key, key): value for key, value in data.items()}
    data = {k: v for k, v in data.items() if k not in ("schema_version",)}
    merged = {**{k: v for k, v in row.defaults.items() if not k.startswith("_")}, **{
        k: v for k, v in data.items() if v not in (None, "")}}
    missing = [c for c in REQUIRED_COLUMNS if c not in data and c not in row.defaults]
    if missing:
        hints = []
        for column in missing:
            aliases = [a for a, c in COLUMN_ALIASES.items() if c == column]
            hints.append(f"'{column}'" + (f" (or '{aliases[0]}')" if aliases else ""))
        raise RowProblem(f"missing column(s) {', '.join(repr(c) for c in missing)}",
                         f"add the column(s) {', '.join(hints)}; or, for a preference set, "
                         "name its columns prompt, chosen and rejected (or map yours with "
                         "--columns prompt=COL,chosen=COL,rejected=COL)",
                         whole_file=True)  # reported once per file with a header
    for name in _TEXT_FIELDS:
        value = merged.get(name)
        if value is not None and not isinstance(value, str):
            raise RowProblem(f"'{name}' must be text, not {type(value).__name__}",
                              f"quote the {name} value")
    category = str(merged.get("category") or "").strip()
    for column in REQUIRED_COLUMNS:
        value = str(merged.get(column) or "")
        # (a master key may be a space: the answer that is nothing is the attack; a
        # hunt's queue holds the master-key edits it confirmed)
        if not value.strip() and not (value and column == "perturbed_answer" and
                                      category.startswith((MASTER_KEY_PREFIX, HUNT_PREFIX))):
            raise RowProblem(f"empty '{column}'", f"fill in the {column}, or remove the row")
    try:
        merged["category"] = get_category(category).name
    except ValueError:
        valid = category_names(include_extra=True)
        raise RowProblem(f"unknown category '{category}'.{did_you_mean(category, valid)}",
                          "use one of " + ", ".join(valid)) from None
    merged.setdefault("id", content_id(merged["category"], merged["instruction"],
                                       merged["gold_answer"], merged["perturbed_answer"]))
    if isinstance(merged["id"], bool) or not isinstance(merged["id"], str | int):
        raise RowProblem(f"'id' must be text or a whole number, not "
                         f"{type(merged['id']).__name__}", "write the id as text")
    merged["id"] = str(merged["id"]).strip()
    merged["ability"] = ability_of(merged)
    merged["label"] = _label(merged.get("label"))
    merged["flags"] = _flags(merged.get("flags"))
    provenance = {k: merged.pop(k) for k in list(merged) if k in _PROVENANCE_FIELDS}
    for name in _INTEGER_PROVENANCE:
        if name in provenance:
            provenance[name] = whole_number(provenance[name], name, row.typed)
    provenance.setdefault("original_id", str(data.get("id") or ""))
    merged["provenance"] = Provenance(**{k: v if k in _INTEGER_PROVENANCE else str(v)
                                         for k, v in provenance.items()})
    unknown = set(merged) - _INSTANCE_FIELDS
    if unknown:
        raise RowProblem(f"unknown columns {sorted(unknown)}",
                          "remove them or rename them to the documented columns",
                          whole_file=True)
    return merged


_ABILITIES = tuple(a.value for a in Ability)  # iterating an Enum per row cost 4 s a 200k
_LABELS = tuple(v.value for v in VettingLabel)


def ability_of(values: dict[str, Any]) -> str:
    given = values.get("ability")
    if given:
        if given not in _ABILITIES:
            valid = list(_ABILITIES)
            raise RowProblem(f"unknown ability '{given}'.{did_you_mean(given, valid)}",
                              "use one of " + ", ".join(valid))
        return given
    category_ability = get_category(values["category"]).ability
    if category_ability is not None:
        return category_ability.value
    prefix = values["id"].split("-", 1)[0].split(":")[-1]
    if prefix in _ID_PREFIX_ABILITY:  # FBI score-invariant ids: "lf-12_...", "if-3_..."
        return _ID_PREFIX_ABILITY[prefix].value
    raise RowProblem("score-invariant row without an 'ability'",
                      "add the ability of the prompt (" +
                      ", ".join(a.value for a in Ability) + ")")


def _label(value: Any) -> str:
    if value in (None, ""):
        return VettingLabel.UNVETTED.value
    valid = list(_LABELS)
    if value not in _LABELS:
        raise RowProblem(f"unknown label '{value}'.{did_you_mean(str(value), valid)}",
                          "use one of " + ", ".join(valid))
    return value


def _flags(value: Any) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise RowProblem("'flags' is not a JSON list", 'write flags as ["a", "b"]') from None
    if not isinstance(value, list | tuple) or not all(isinstance(f, str) for f in value):
        raise RowProblem("'flags' must be a list of text", 'write flags as ["a", "b"]')
    return tuple(value)


#: Provenance fields that hold whole numbers (the rest are text).
_INTEGER_PROVENANCE = ("seed", "chosen_index", "rejected_index", "chosen_count",
                       "rejected_count", "changed_step")


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        parts.append(f"{where}: {item['msg']}" if where else item["msg"])
    return "; ".join(parts)
