"""Every dataset source behind one entry point, and the writers.

A SPEC is one of:

* ``sample`` — the built-in sample (``fbi/data/sample.yaml``), the default everywhere;
* a ``.jsonl``, ``.json``, ``.csv``, ``.tsv`` or ``.parquet`` file with the record's flat
  columns;
* a folder in the original FBI TSV layout (``factual/entity-errors.tsv`` ...);
* a Hugging Face dataset folder (fbi publish's layout: one config per ability);
* ``hf:ORG/NAME[@REVISION][?config=…&split=…]`` (or a bare ``ORG/NAME`` that is not a
  local path): a Hub dataset, downloaded with huggingface_hub's ``snapshot_download``.

Files, Hugging Face folders and Hub datasets are read by ``datasets.load_dataset``
(streaming; see `fbi.datasets._hf`), the FBI TSV layout and the sample by fbi's own
readers. When a file holds a bad row, fbi's own reader re-reads it so the message names
the line (``reader="fbi"`` reads with it from the start).

Every reader yields raw rows with their location; one builder turns them into
[`Instance`][fbi.Instance] records and collects every problem, so ``validate`` can
list them all and ``load`` can refuse the dataset naming the first one.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from fbi.conversations import question_text
from fbi.datasets._containers import (
    BUILT_IN,
    OWN_READER_SUFFIXES,
    SAMPLE,
    HubSpec,
    Reader,
    looks_like_hub_id,
    read_file_rows,
    read_rows,
)
from fbi.datasets._instances import ability_of, build_instances, conversation_row
from fbi.datasets._layouts import RawRow, RowProblem, readable_rows, whole_number
from fbi.datasets._store import InstanceKey, InstanceStore
from fbi.errors import DatasetError, FbiWarning, InputError, Problem
from fbi.escaping import has_control_characters
from fbi.outputs import write_atomically
from fbi.records import (
    COLUMN_ALIASES,
    ROW_COLUMNS,
    GoldItem,
    Instance,
    content_id,
)
from fbi.taxonomy import (
    Ability,
    get_ability,
    get_category,
)

_T = TypeVar("_T")

@dataclass
class Dataset:
    """Instances loaded from one SPEC, with how many rows were read. ``instances`` may be
    given as any iterable; it is kept in an `InstanceStore`
    (compact past 20,000 instances)."""

    spec: str
    """The SPEC it was loaded from: a built-in name, a path, or ``hf:owner/name``."""
    instances: InstanceStore
    """The instances, in file order."""
    rows_read: int
    """Rows read from the files, including those left out by the filters."""
    files: list[str] = field(default_factory=list)
    """The files read."""
    selection: dict[str, Any] = field(default_factory=dict)
    """The filters that chose these instances (category, ability, limit, sample, seed)."""
    source_fingerprint: str | None = None
    """The fingerprint of the rows the filters chose from (None without filters)."""
    columns: dict[str, str] = field(default_factory=dict)
    """--columns, when given."""

    def __post_init__(self) -> None:
        if not isinstance(self.instances, InstanceStore):
            self.instances = InstanceStore(self.instances)

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self) -> Iterator[Instance]:
        return iter(self.instances)

    @property
    def fingerprint(self) -> str:
        """sha256 of the canonical rows, order-independent: same content, same print."""
        return self.instances.fingerprint()

    def select(
        self,
        abilities: Iterable[str] = (),
        categories: Iterable[str] = (),
        include_extra: bool = False,
        limit: int | None = None,
        sample: int | None = None,
        sample_seed: int = 0,
        sample_by: str = "category",
    ) -> Dataset:
        """A filtered copy. Extra categories are dropped unless asked for. ``limit`` keeps
        the first N of each category; ``sample`` a seeded random N of each category
        (``sample_by="category"``) or of all (``"overall"``), the same N for the same
        seed and dataset whatever the order of its rows. Both ``limit`` and ``sample``
        is an InputError: the first N and a random N are two different selections."""
        if limit is not None and sample is not None:
            raise InputError("--limit keeps the first N per category and --sample a random "
                             "N: give one of them")
        wanted_abilities = {get_ability(a) for a in abilities}
        wanted_categories = {get_category(c).name for c in categories}
        keys = self.instances.keys  # id, ability, category: no instance is rebuilt
        chosen = [
            n for n, key in enumerate(keys)
            if (include_extra or _judged_by_default(key.category)
                or key.category in wanted_categories)
            and (not wanted_abilities or key.ability in wanted_abilities)
            and (not wanted_categories or key.category in wanted_categories)
        ]
        if limit is not None:
            chosen = _first_per_category(keys, chosen, limit)
        if sample is not None:
            chosen = _seeded_sample(keys, chosen, sample, sample_seed, sample_by)
        selection = {"abilities": sorted(a.value for a in wanted_abilities),
                     "categories": sorted(wanted_categories), "include_extra": include_extra,
                     "limit": limit}
        if sample is not None:  # only when given, so folders written before still match
            selection.update(sample=sample, sample_seed=sample_seed, sample_by=sample_by)
        if self.columns:
            selection["columns"] = self.columns
        return Dataset(self.spec, self.instances.subset(chosen), self.rows_read, self.files,
                       selection, self.source_fingerprint or self.fingerprint, self.columns)


def _judged_by_default(category: str) -> bool:
    """The release's extra categories are left out unless asked for (the paper leaves them
    out); manipulations and master keys are judged whenever a dataset holds them (a user
    made them, or asked for the master-key suite)."""
    found = get_category(category)
    return not found.extra or found.family in ("manipulation", "master-key")


def _seeded_sample(keys: list[InstanceKey], chosen: list[int], size: int, seed: int,
                   by: str) -> list[int]:
    """A random ``size`` of each category (or of all) of the ``chosen`` positions, drawn
    in id order with ``seed``; they keep the dataset's order."""
    import random

    if by not in ("category", "overall"):
        raise InputError(f"sample_by {by!r}: give 'category' or 'overall'")
    rng = random.Random(seed)
    groups: dict[str, dict[str, None]] = {}  # (ordered sets: a row's pairs are one unit)
    for n in sorted(chosen, key=lambda n: keys[n].id):
        groups.setdefault(keys[n].category if by == "category" else "all", {})[
            _unit(keys[n])] = None
    drawn = {unit for name in sorted(groups)
             for unit in rng.sample(list(groups[name]), min(size, len(groups[name])))}
    return [n for n in chosen if _unit(keys[n]) in drawn]


def _unit(key: InstanceKey) -> str:
    """What --limit and --sample count: an instance, or a best-of-N row (all its pairs:
    a row judged in part cannot be ranked)."""
    return f"group:{key.group}" if key.group else f"id:{key.id}"


def _first_per_category(keys: list[InstanceKey], chosen: list[int], limit: int) -> list[int]:
    """Keep the first ``limit`` of each category of the ``chosen`` positions, in order (a
    best-of-N row counting once, with all its pairs)."""
    seen: dict[str, set[str]] = {}
    kept = []
    for n in chosen:
        units = seen.setdefault(keys[n].category, set())
        unit = _unit(keys[n])
        if unit in units or len(units) < limit:
            units.add(unit)
            kept.append(n)
    return kept


@dataclass
class Validation:
    """The outcome of checking a SPEC: rows read, instances that loaded, every problem."""

    spec: str
    """The SPEC checked."""
    rows_read: int
    """Rows read from the files."""
    instances: InstanceStore
    """The instances that loaded."""
    problems: list[Problem]
    """Every problem found, each with its file, line or row, and a fix."""
    files: list[str]
    """The files read."""
    warnings: list[Problem] = field(default_factory=list)
    """What loads but a user should know: texts with control characters (they could drive a
    terminal; fbi shows them as escapes)."""

    @property
    def ok(self) -> bool:
        return not self.problems


# ------------------------------------------------------------------ entry points


def validate_dataset(spec: str, reader: Reader = "datasets",
                     columns: Mapping[str, str] | None = None) -> Validation:
    """Read SPEC and report every problem; never raises for bad rows. When ``datasets``
    finds a problem (or a warning) in a file fbi also reads itself, fbi's reader reads it
    again: its messages name lines, and a file only ``datasets`` stumbles on still loads."""
    result = _validate(spec, reader, columns)
    if reader == "datasets" and _own_reader_reads(spec):
        if result.problems:
            del result  # not two copies of a large dataset at once
            return _validate(spec, "fbi", columns)
        if result.warnings:  # the dataset loads: find the warned rows' lines, no more
            result.warnings = _with_lines(result.warnings, Path(spec))
    return result


def _with_lines(warnings: list[Problem], path: Path) -> list[Problem]:
    """WARNINGS with datasets' "row N" replaced by the location fbi's own reader gives the
    same row (rows come in the same order from both)."""
    wanted = {w.location for w in warnings}
    lines: dict[str, str] = {}
    for number, row in enumerate(read_file_rows(path, [], {}, "fbi"), start=1):
        if f"row {number}" in wanted:
            lines[f"row {number}"] = row.location
            if len(lines) == len(wanted):
                break
    return [dataclasses.replace(w, location=lines.get(w.location, w.location))
            for w in warnings]


def _validate(spec: str, reader: Reader, columns: Mapping[str, str] | None = None
              ) -> Validation:
    files: list[str] = []
    problems: list[Problem] = []
    warnings: list[Problem] = []
    rows_read = 0

    def counted() -> Iterator[RawRow]:  # rows are built as read, never held all at once
        nonlocal rows_read
        renamed = {column: field for field, column in (columns or {}).items()}
        for row in read_rows(spec, files, problems, reader):
            rows_read += 1
            if renamed:  # --columns: the file's names for a preference dataset's fields
                row = dataclasses.replace(row, data={renamed.get(k, k): v
                                                     for k, v in row.data.items()})
            controlled = sorted(str(key) for key, value in row.data.items()
                                if isinstance(value, str) and has_control_characters(value))
            if controlled:
                warnings.append(Problem(
                    row.file, row.location,
                    f"{', '.join(controlled)} {'hold' if len(controlled) > 1 else 'holds'} "
                    "control characters (escape sequences a terminal would obey); fbi shows "
                    "them as escapes",
                    "remove them unless they are meant to be there"))
            yield row

    try:
        instances, row_problems = build_instances(counted())
    except DatasetError as error:  # the whole source is unreadable
        return Validation(spec, 0, InstanceStore(), problems + error.problems, files)
    if not rows_read and not problems:  # a header-only CSV, a Parquet file of zero rows
        problems.append(Problem(spec, "", "holds no rows", "add at least one instance"))
    preference = {key.ability is Ability.PREFERENCE for key in instances.keys}
    if len(preference) == 2:  # their rates must never be pooled into one overall rate
        problems.append(Problem(spec, "", "holds both preference pairs (prompt, chosen, "
                                "rejected) and FBI instances", "keep them in two datasets "
                                "and judge each in its own run"))
    return Validation(spec, rows_read, instances, problems + row_problems, files, warnings)


def _own_reader_reads(spec: str) -> bool:
    path = Path(spec)
    return spec not in BUILT_IN and path.suffix.lower() in OWN_READER_SUFFIXES and \
        path.is_file()


def with_line_numbers(spec: str, attempt: Callable[[Reader], _T]) -> _T:
    """``attempt("datasets")``; if it raises DatasetError and fbi reads SPEC itself too,
    ``attempt("fbi")``, whose problems name lines (see
    [`validate_dataset`][fbi.validate_dataset])."""
    try:
        return attempt("datasets")
    except DatasetError:
        if not _own_reader_reads(spec):
            raise
    return attempt("fbi")


def source_name(spec: str) -> str:
    """A dataset's public name: ``sample``, a Hub id, or a local file's or folder's own
    name — never the path on this machine (it would leak into published cards)."""
    if spec.startswith("hf:"):
        return HubSpec.parse(spec).repo_id
    if spec in BUILT_IN or not any(sep in spec for sep in ("/", "\\")) or \
            (looks_like_hub_id(spec) and not Path(spec).exists()):
        return spec
    return Path(spec.rstrip("/\\")).name or spec


def load_dataset(spec: str = SAMPLE, reader: Reader = "datasets",
                 columns: Mapping[str, str] | None = None) -> Dataset:
    """Load SPEC into instances; raises DatasetError naming the first of its problems.
    ``columns`` maps a preference dataset's fields to its column names (``{"prompt":
    "question", ...}``; see `parse_columns`)."""
    result = validate_dataset(spec, reader, columns)
    if result.problems:
        raise DatasetError(result.problems, rows_read=result.rows_read)
    return Dataset(spec, result.instances, result.rows_read, result.files,
                   columns=dict(columns or {}))


def write_dataset(instances: Iterable[Instance], path: str | Path) -> Path:
    """Write instances to a .jsonl, .csv, .tsv or .parquet file, chosen by its suffix."""
    path = Path(path)
    rows = [i.to_row() for i in instances]
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv", ".tsv", ".parquet"):
        raise DatasetError([Problem(str(path), "", f"cannot write '{suffix or 'no suffix'}'",
                                    "name the output .jsonl, .csv, .tsv or .parquet")])
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".jsonl":  # ASCII: any reader, splitting lines however, reads it back
        write_atomically(path, "".join(json.dumps(row, ensure_ascii=True) + "\n"
                                       for row in rows))
    elif suffix in (".csv", ".tsv"):
        out = io.StringIO(newline="")
        writer = csv.DictWriter(out, fieldnames=ROW_COLUMNS,
                                delimiter="\t" if suffix == ".tsv" else ",")
        writer.writeheader()
        for row in rows:
            writer.writerow({**row, "flags": json.dumps(row["flags"]),
                             "context": json.dumps(row["context"]) if row["context"] else "",
                             "rationale": row["rationale"] or "",
                             "seed": "" if row["seed"] is None else row["seed"]})
        write_atomically(path, out.getvalue())
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_pylist(rows, schema=parquet_schema()), buffer)
        write_atomically(path, buffer.getvalue().to_pybytes())
    return path


def parquet_schema():
    import pyarrow as pa

    text = pa.string()
    return pa.schema([
        ("id", text), ("ability", text), ("category", text), ("instruction", text),
        ("context", pa.list_(pa.struct([("role", text), ("content", text)]))),
        ("gold_answer", text), ("perturbed_answer", text), ("rationale", text),
        ("label", text), ("source", text), ("original_id", text), ("generator", text),
        ("template_version", text), ("seed", pa.int64()), ("gold_model", text),
        ("group", text), ("chosen_index", pa.int64()), ("rejected_index", pa.int64()),
        ("chosen_count", pa.int64()), ("rejected_count", pa.int64()),
        ("changed_step", pa.int64()), ("flags", pa.list_(text)),
        ("schema_version", pa.int64()),
    ])


#: MT-Bench's question categories → the ability whose errors suit their answers.
MT_BENCH_ABILITIES = {"writing": "long-form", "roleplay": "long-form", "math": "reasoning",
                      "reasoning": "reasoning", "coding": "reasoning",
                      "extraction": "instruction-following", "stem": "factual",
                      "humanities": "factual"}


def mt_bench_items(data: dict) -> list[dict]:
    """MT-Bench's ``question.jsonl`` layout (question_id, category, turns, reference): one
    gold item per turn that has a reference answer, each later turn with the earlier
    questions and reference answers as its context; none for a question without
    references."""
    turns, references = data.get("turns"), data.get("reference")
    if not isinstance(turns, list) or not turns or not all(
            isinstance(t, str) and t.strip() for t in turns):
        raise RowProblem("'turns' must be a list of questions (text)",
                         "give the questions as a list of text")
    if references in (None, "", []):
        return []
    if not isinstance(references, list) or len(references) != len(turns) or not all(
            isinstance(r, str) and r.strip() for r in references):
        raise RowProblem(f"'reference' must list one answer (text) for each of the "
                         f"{len(turns)} turns", "give one reference answer a turn")
    category = str(data.get("category") or "")
    if category not in MT_BENCH_ABILITIES:
        raise RowProblem(f"MT-Bench category {category!r}: one of "
                         f"{', '.join(MT_BENCH_ABILITIES)}", "correct the category")
    items, context = [], ()
    for number, (question, answer) in enumerate(zip(turns, references, strict=True), 1):
        items.append({"id": f"mt-bench-{data['question_id']}-t{number}",
                      "instruction": question, "gold_answer": answer, "context": context,
                      "ability": MT_BENCH_ABILITIES[category], "source": "mt-bench"})
        context = (*context, ("user", question), ("assistant", answer))
    return items


def load_gold_items(spec: str = SAMPLE) -> tuple[list[GoldItem], int]:
    """The distinct (instruction, gold answer) pairs of SPEC, for perturbation.

    Rows need an instruction, a gold answer and an ability (or a category to take it
    from); perturbed answers, if present, are ignored. The same pair appearing in several
    rows (as in the FBI release, one row per category) becomes one item.
    Returns the items and the number of rows read; raises DatasetError on bad rows.
    """
    return with_line_numbers(spec, lambda reader: _gold_items(spec, reader))


def _gold_items(spec: str, reader: Reader) -> tuple[list[GoldItem], int]:
    files: list[str] = []
    problems: list[Problem] = []
    rows = list(read_rows(spec, files, problems, reader))
    items: dict[tuple, GoldItem] = {}
    unanswered = 0
    question_at: dict[str, str] = {}  # MT-Bench question_id → where it was first
    for row in readable_rows(rows, problems):
        try:
            if "question_id" in row.data and "turns" in row.data:
                number = whole_number(row.data["question_id"], "question_id", row.typed)
                if number is None:
                    raise RowProblem("an MT-Bench question without its question_id",
                                     "give every question its question_id")
                question = str(number)
                if question in question_at:  # its items' ids would be the first's
                    raise RowProblem(f"question_id {question} again (first at "
                                     f"{question_at[question]})",
                                     "give every question its own question_id")
                question_at[question] = f"{Path(row.file).name} {row.location}"
                found = mt_bench_items(row.data)
                unanswered += not found
            else:
                found = [conversation_row(row.data)]
        except RowProblem as problem:
            problems.append(Problem(row.file, row.location, problem.message, problem.fix))
            continue
        for data in found:
            data = {COLUMN_ALIASES.get(k, k): v for k, v in {**row.defaults, **data}.items()
                    if v not in (None, "")}
            instruction = str(data.get("instruction") or "").strip()
            gold = str(data.get("gold_answer") or "")
            if not instruction or not gold.strip():
                missing = "instruction" if not instruction else "gold_answer"
                problems.append(Problem(row.file, row.location,
                                        f"empty or missing '{missing}'",
                                        f"give every row an {missing}"))
                continue
            try:
                ability = ability_of({**data, "id": str(data.get("id", "")),
                                    "category": data.get("category") or "score-invariant"})
            except RowProblem as problem:
                problems.append(Problem(row.file, row.location, problem.message.replace(
                    "score-invariant row", "row"), problem.fix))
                continue
            except ValueError as error:  # an unknown category
                problems.append(Problem(row.file, row.location, str(error),
                                        "fix the category"))
                continue
            context = tuple(data.get("context") or ())
            key = (context, instruction, gold)
            if key not in items:
                item_id = str(data.get("id") or content_id(
                    "item", question_text(context, instruction), gold, ""))
                items[key] = GoldItem(item_id, ability, instruction, gold,
                                      str(data.get("source") or spec), context)
    if unanswered:
        warnings.warn(f"{spec}: {unanswered} MT-Bench question(s) without a reference "
                      "answer left out (MT-Bench gives references for math, reasoning and "
                      "coding): there is no gold answer to perturb", FbiWarning, stacklevel=2)
    if problems:
        raise DatasetError(problems, rows_read=len(rows))
    return list(items.values()), len(rows)
