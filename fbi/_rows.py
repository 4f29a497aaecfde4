"""Rows as read from a source, made into instances: the columns a row may use (fbi's,
the FBI release's, a preference set's), every check on their values, and one Problem per
bad row, never a silent drop. The readers that produce the rows are in
`fbi.sources`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fbi._instance_store import InstanceStore
from fbi.conversations import (
    ConversationError,
    check_context,
    parse_messages,
    shared_turns,
    split_final_turn,
)
from fbi.errors import InputError, Problem
from fbi.records import (
    COLUMN_ALIASES,
    REQUIRED_COLUMNS,
    Instance,
    Provenance,
    VettingLabel,
    content_id,
)
from fbi.taxonomy import (
    PREFERENCE_PREFIX,
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


@dataclass(frozen=True)
class RawRow:
    """One row as read from a source, before validation."""

    file: str
    location: str
    data: dict[str, Any]
    defaults: dict[str, Any] = field(default_factory=dict)  # values the layout implies




def readable_rows(rows: Iterable[RawRow], problems: list[Problem]) -> Iterator[RawRow]:
    """The rows a reader could parse; each it could not (a bad JSON line) is added to
    ``problems`` with its file and line instead."""
    for row in rows:
        if "__error__" in row.data:
            message, fix = row.data["__error__"]
            problems.append(Problem(row.file, row.location, message, fix))
        else:
            yield row


def build_instances(rows: Iterable[RawRow]) -> tuple[InstanceStore, list[Problem]]:
    """Turn raw rows into instances; every bad row becomes a Problem, never a silent drop."""
    instances = InstanceStore()
    problems: list[Problem] = []
    first_seen: dict[str, tuple[str, str]] = {}  # id → (file, location): not the row
    missing_reported: set[tuple[str, str]] = set()
    for row in readable_rows(rows, problems):
        try:
            expanded = [_normalise(row, data) for data in _preference_rows(row)]
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


class RowProblem(Exception):
    def __init__(self, message: str, fix: str = "", whole_file: bool = False):
        super().__init__(message)
        self.message, self.fix, self.whole_file = message, fix, whole_file


# Looked up once: pydantic's model_fields is a property, and cost 3 s a 200k rows.
_PROVENANCE_FIELDS = frozenset(Provenance.model_fields)
_INSTANCE_FIELDS = frozenset(Instance.model_fields)
_TEXT_FIELDS = ("ability", "category", "instruction", "gold_answer",
                "perturbed_answer", "rationale", "label")


def parse_columns(text: str | None) -> dict[str, str]:
    """``prompt=question,chosen=good,rejected=bad,category=kind`` → {field: column}: the
    columns of a preference dataset under other names (``--columns``)."""
    if not text:
        return {}
    mapping = {}
    for part in text.split(","):
        field_name, sep, column = (p.strip() for p in part.partition("="))
        if not sep or not column or field_name not in PREFERENCE_FIELDS:
            raise InputError(f"--columns {text!r}: give FIELD=COLUMN pairs separated by "
                             f"commas, FIELD one of {', '.join(PREFERENCE_FIELDS)} (e.g. "
                             "prompt=question,chosen=good,rejected=bad)")
        mapping[field_name] = column
    return mapping


#: A preference dataset's fields (RewardBench's names; ``category`` reads ``subset``).
PREFERENCE_FIELDS = ("prompt", "chosen", "rejected", "category", "id")


def _preference_rows(row: RawRow) -> list[dict[str, Any]]:
    """A row's data as fbi rows: itself, the pair a preference row names, or a best-of-N
    row's chosen × rejected pairs (`_best_of_n_pairs`); conversations first made into
    their final turn and its context (`conversation_row`)."""
    preference = "chosen" in row.data or "rejected" in row.data
    if "question_id" in row.data and "turns" in row.data:
        raise RowProblem("an MT-Bench question (question_id, turns): it holds no answers to "
                         "judge", "make perturbations of its reference answers with fbi "
                         "perturb --dataset FILE, then judge the vetted queue",
                         whole_file=True)
    data = conversation_row(row.data)
    data = _preference_row(data, row.file, row.defaults.get("_subset"))
    if preference and (isinstance(data.get("gold_answer"), list) or
                       isinstance(data.get("perturbed_answer"), list)):
        return _best_of_n_pairs(data)
    return [data]


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
        if _is_conversation(data.get("chosen")) or _is_conversation(data.get("rejected")):
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


def _is_conversation(value: Any) -> bool:
    """A list of messages (not of answers: best-of-N rows list text)."""
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict)


#: The most answers a best-of-N row may list on each side (RewardBench 2's Ties rows
#: have up to a few dozen); more is refused, not expanded into a quadratic number of pairs.
MAX_BEST_OF_N = 64


#: RewardBench 2's columns that describe a row and are not kept: the models behind the
#: answers (a list, one per answer) and free-form metadata.
_BEST_OF_N_METADATA = ("models", "additional_metadata")


def _best_of_n_pairs(data: dict[str, Any]) -> list[dict[str, Any]]:
    """RewardBench 2's layout (Malik et al. 2025, arXiv 2506.01937, §3): a prompt,
    ``chosen`` and ``rejected`` as lists of answers, ``num_correct`` (the chosen count)
    optional. Each chosen × rejected pair is a preference instance (id ``ROW:cI-rJ``,
    1-based), grouped by the row (provenance ``group``, ``chosen_index``,
    ``rejected_index``, ``chosen_count``, ``rejected_count``), so every strategy judges
    it and `fbi.metrics.best_of_n` ranks the row: right when every chosen answer
    outranks every rejected one."""
    chosen, rejected = data.pop("gold_answer"), data.pop("perturbed_answer")
    for name, answers in (("chosen", chosen), ("rejected", rejected)):
        if not isinstance(answers, list) or not answers:
            raise RowProblem(f"'{name}' must be a non-empty list of answers when the other "
                             "is a list (RewardBench 2's layout)",
                             f"write {name} as [\"answer\", ...]")
        if len(answers) > MAX_BEST_OF_N:
            raise RowProblem(f"'{name}' lists {len(answers)} answers, more than "
                             f"{MAX_BEST_OF_N}", "split the row or shorten the list")
        for number, answer in enumerate(answers, start=1):
            if not isinstance(answer, str) or not answer.strip():
                raise RowProblem(f"'{name}' item {number} is not a non-empty text",
                                 "give every answer as text")
    for name, expected in (("num_correct", len(chosen)), ("num_rejected", len(rejected)),
                           ("total_completions", len(chosen) + len(rejected))):
        count = data.pop(name, None)  # RewardBench 2's counts: checked, not trusted
        if count not in (None, "") and (isinstance(count, bool) or
                                        str(count).strip() != str(expected)):
            raise RowProblem(f"{name} {count!r} but the row lists {expected} such answers",
                             f"correct {name}, or leave it out")
    for name in _BEST_OF_N_METADATA:
        data.pop(name, None)
    group = data.get("id")
    if group in (None, ""):
        group = content_id(data["category"], str(data.get("instruction")), *(
            "\x1e".join(answers) for answers in (chosen, rejected)))
    if isinstance(group, bool) or not isinstance(group, str | int):
        raise RowProblem("'id' must be text or a whole number", "write the id as text")
    group = str(group).strip()
    return [{**data, "id": f"{group}:c{i + 1}-r{j + 1}", "gold_answer": good,
             "perturbed_answer": bad, "group": group, "chosen_index": i,
             "rejected_index": j, "chosen_count": len(chosen),
             "rejected_count": len(rejected), "original_id": group}
            for i, good in enumerate(chosen) for j, bad in enumerate(rejected)]


def _preference_row(data: dict[str, Any], file: str, subset: str | None) -> dict[str, Any]:
    """A row of a preference benchmark in fbi's fields: the chosen answer plays gold,
    the rejected one perturbed, the subset is the category ``preference/SUBSET``.
    RewardBench's layout (prompt, chosen, rejected, subset, chosen_model, rejected_model,
    id) and LLMBar's (input, output_1, output_2, label: 1 or 2, the better output; the
    subset is ``subset``, the reader's name for the file's place in LLMBar's tree, else
    the file's folder, as LLMBar publishes one dataset.json a subset) are read; other
    rows are returned as they are."""
    if "output_1" in data and "output_2" in data and "input" in data:  # LLMBar
        data = dict(data)
        winner = str(data.pop("label", "")).strip()
        if winner not in ("1", "2"):
            raise RowProblem(f"label {winner!r}: LLMBar's label names the better output, "
                              "1 or 2", "correct the label")
        loser = "2" if winner == "1" else "1"
        subset = subset or llmbar_subset(Path(file))
        data = {"prompt": data.pop("input"), "chosen": data.pop(f"output_{winner}"),
                "rejected": data.pop(f"output_{loser}"), "subset": subset, **data}
    if "chosen" not in data or "rejected" not in data:
        return data
    subset = data.pop("subset", None) or data.pop("category", None) or "all"
    row = {"instruction": data.pop("prompt", None), "gold_answer": data.pop("chosen"),
           "perturbed_answer": data.pop("rejected"),
           "category": f"{PREFERENCE_PREFIX}{str(subset).strip()}",
           "ability": Ability.PREFERENCE.value}
    if data.get("chosen_model"):
        row["gold_model"] = data.pop("chosen_model")
    if data.get("rejected_model"):
        row["generator"] = data.pop("rejected_model")
    data.pop("chosen_model", None)
    data.pop("rejected_model", None)
    return {**data, **row}


#: LLMBar publishes one ``dataset.json`` a subset, in a tree of folders
#: (``LLMBar/Natural``, ``LLMBar/Adversarial/Neighbor``, ...).
LLMBAR_FILE = "dataset.json"


def llmbar_subset(path: Path, root: Path | None = None) -> str:
    """An LLMBar file's subset: its folder's path below the nearest folder named
    ``LLMBar`` (``Natural``, ``Adversarial/Neighbor``: the same name whether the tree,
    a part of it or the one file is read); without one, below ``root``, the folder the
    user named; the file's own folder (or name) when that is all there is."""
    parents = path.parent.parts
    for depth in range(len(parents) - 1, -1, -1):
        if parents[depth].lower() == "llmbar":
            below = parents[depth + 1:]
            if below:
                return "/".join(below)
            break
    if path.name != LLMBAR_FILE:
        return path.stem
    if root is not None and path.parent != root:
        return path.parent.relative_to(root).as_posix()
    return path.parent.name or "all"


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
    for column in REQUIRED_COLUMNS:
        if not str(merged.get(column) or "").strip():
            raise RowProblem(f"empty '{column}'", f"fill in the {column}, or remove the row")
    category = merged["category"].strip()
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
            provenance[name] = _whole(provenance[name], name)
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
                       "rejected_count")


def _whole(value: Any, name: str) -> int | None:
    if value in (None, ""):
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise RowProblem(f"'{name}' must be a whole number, not {value!r}", "write an integer")
    try:
        return int(value)
    except ValueError:
        raise RowProblem(f"'{name}' must be a whole number, not {value!r}",
                          "write an integer") from None


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        parts.append(f"{where}: {item['msg']}" if where else item["msg"])
    return "; ".join(parts)
