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
(streaming; see :mod:`fbi._hf_datasets`), the FBI TSV layout and the sample by fbi's own
readers. When a file holds a bad row, fbi's own reader re-reads it so the message names
the line (``reader="fbi"`` reads with it from the start).

Every reader yields raw rows with their location; one builder turns them into
:class:`~fbi.records.Instance` records and collects every problem, so ``validate`` can
list them all and ``load`` can refuse the dataset naming the first one.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar

from fbi._hf_datasets import CannotRead, read_file, read_folder
from fbi._instance_store import InstanceKey, InstanceStore
from fbi._rows import (
    RawRow,
    RowProblem,
    ability_of,
    build_instances,
)
from fbi._rows import parse_columns as parse_columns  # the CLI's and tests' names for them
from fbi._rows import unreadable_row as unreadable_row
from fbi.errors import DatasetError, InputError, Problem
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
    SCORE_INVARIANT,
    Ability,
    get_ability,
    get_category,
)

SAMPLE = "sample"
#: The main job's dataset: the first instance of each category of the built-in sample
#: (23 of its 72), so `fbi evaluate` on the embedded judge takes under a minute on two
#: cores; ``sample`` is the whole of it.
QUICK = "quick"
BUILT_IN = (SAMPLE, QUICK)
#: Files fbi reads with its own readers too (the ones that name lines) ...
OWN_READER_SUFFIXES = (".jsonl", ".csv", ".tsv", ".parquet")
#: ... and every file it reads (``datasets`` also reads JSON arrays).
TABULAR_SUFFIXES = (*OWN_READER_SUFFIXES, ".json")
SPEC_HELP = (
    "give 'sample', 'quick', a .jsonl/.json/.csv/.tsv/.parquet file, an FBI TSV folder, "
    "a Hugging Face dataset folder, or hf:ORG/NAME"
)
#: Who reads files and Hugging Face folders: ``datasets.load_dataset``, or fbi's own
#: readers (which name the line of a bad row; used for the files fbi writes itself).
Reader = Literal["datasets", "fbi"]
_T = TypeVar("_T")

# The original release's file names → our category names (paper Table 2).
FBI_FILE_CATEGORIES = {
    "contextual-errors": "contextual",
    "entity-errors": "entity",
    "incorrect-fact": "incorrect-fact",
    "number-errors": "number-errors",
    "opposite-fact": "opposite-fact",
    "remove-fact": "remove-fact",
    "assumption-errors": "assumptions",
    "do-less-errors": "do-less",
    "do-more-errors": "do-more",
    "ignore-format-errors": "ignore-format",
    "incorrect-sequence-errors": "sequence-errors",
    "coherence-errors": "coherence",
    "comprehensiveness-errors": "comprehensiveness",
    "consistency-errors": "consistency",
    "grammar-errors": "grammar",
    "seq-errors": "chronology",
    "spelling-errors": "spelling",
    "calculation-errors": "calculations",
    "copying-numbers-errors": "copying-numbers",
    "final-answer-errors": "final-errors",
    "incorrect-units": "incorrect-units",
    "wrong-formula": "wrong-formula",
    "score_invariant": SCORE_INVARIANT,
    "formatting-errors": "formatting",
    "superficial-errors": "superficial",
}


@dataclass
class Dataset:
    """Instances loaded from one SPEC, with how many rows were read. ``instances`` may be
    given as any iterable; it is kept in an :class:`~fbi._instance_store.InstanceStore`
    (compact past 20,000 instances)."""

    spec: str
    instances: InstanceStore
    rows_read: int
    files: list[str] = field(default_factory=list)
    # the filters that chose these instances, and the fingerprint of what they chose from
    selection: dict[str, Any] = field(default_factory=dict)
    source_fingerprint: str | None = None
    columns: dict[str, str] = field(default_factory=dict)  # --columns, when given

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
        seed and dataset whatever the order of its rows."""
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
    out); manipulations are judged whenever a dataset holds them (a user made them)."""
    found = get_category(category)
    return not found.extra or found.family == "manipulation"


def _seeded_sample(keys: list[InstanceKey], chosen: list[int], size: int, seed: int,
                   by: str) -> list[int]:
    """A random ``size`` of each category (or of all) of the ``chosen`` positions, drawn
    in id order with ``seed``; they keep the dataset's order."""
    import random

    if by not in ("category", "overall"):
        raise InputError(f"sample_by {by!r}: give 'category' or 'overall'")
    rng = random.Random(seed)
    groups: dict[str, list[int]] = {}
    for n in sorted(chosen, key=lambda n: keys[n].id):
        groups.setdefault(keys[n].category if by == "category" else "all", []).append(n)
    drawn = {n for name in sorted(groups)
             for n in rng.sample(groups[name], min(size, len(groups[name])))}
    return [n for n in chosen if n in drawn]


def _first_per_category(keys: list[InstanceKey], chosen: list[int], limit: int) -> list[int]:
    """Keep the first ``limit`` of each category of the ``chosen`` positions, in order."""
    seen: dict[str, int] = {}
    kept = []
    for n in chosen:
        category = keys[n].category
        if seen.get(category, 0) < limit:
            seen[category] = seen.get(category, 0) + 1
            kept.append(n)
    return kept


@dataclass
class Validation:
    """The outcome of checking a SPEC: rows read, instances that loaded, every problem."""

    spec: str
    rows_read: int
    instances: InstanceStore
    problems: list[Problem]
    files: list[str]
    #: What loads but a user should know: texts with control characters (they could
    #: drive a terminal; fbi shows them as escapes).
    warnings: list[Problem] = field(default_factory=list)

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
    for number, row in enumerate(_read_file(path, [], {}, "fbi"), start=1):
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
    ``attempt("fbi")``, whose problems name lines (see :func:`validate_dataset`)."""
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
            (_looks_like_hub_id(spec) and not Path(spec).exists()):
        return spec
    return Path(spec.rstrip("/\\")).name or spec


def load_dataset(spec: str = SAMPLE, reader: Reader = "datasets",
                 columns: Mapping[str, str] | None = None) -> Dataset:
    """Load SPEC into instances; raises DatasetError naming the first of its problems.
    ``columns`` maps a preference dataset's fields to its column names (``{"prompt":
    "question", ...}``; see :func:`parse_columns`)."""
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
        ("gold_answer", text), ("perturbed_answer", text), ("rationale", text),
        ("label", text), ("source", text), ("original_id", text), ("generator", text),
        ("template_version", text), ("seed", pa.int64()), ("gold_model", text),
        ("flags", pa.list_(text)), ("schema_version", pa.int64()),
    ])


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
    items: dict[tuple[str, str], GoldItem] = {}
    for row in rows:
        if "__error__" in row.data:
            message, fix = row.data["__error__"]
            problems.append(Problem(row.file, row.location, message, fix))
            continue
        data = {COLUMN_ALIASES.get(k, k): v for k, v in {**row.defaults, **row.data}.items()
                if v not in (None, "")}
        instruction = str(data.get("instruction") or "").strip()
        gold = str(data.get("gold_answer") or "")
        if not instruction or not gold.strip():
            missing = "instruction" if not instruction else "gold_answer"
            problems.append(Problem(row.file, row.location, f"empty or missing '{missing}'",
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
            problems.append(Problem(row.file, row.location, str(error), "fix the category"))
            continue
        key = (instruction, gold)
        if key not in items:
            item_id = str(data.get("id") or content_id("item", instruction, gold, ""))
            items[key] = GoldItem(item_id, ability, instruction, gold,
                                  str(data.get("source") or spec))
    if problems:
        raise DatasetError(problems, rows_read=len(rows))
    return list(items.values()), len(rows)


# ------------------------------------------------------------------ readers


def read_rows(
    spec: str, files: list[str], problems: list[Problem], reader: Reader = "datasets"
) -> Iterator[RawRow]:
    if spec in BUILT_IN:
        yield from _read_sample(files, first_of_each_category=spec == QUICK)
        return
    path = Path(spec)
    if not spec.startswith("hf:") and not path.exists() and _looks_like_hub_id(spec):
        meant = _meant_local_path(spec)
        if meant is not None:  # "hiddn/data" beside a folder "hidden": a typo, not a Hub id
            raise DatasetError([Problem(
                spec, "", "no such file or directory" + (
                    f" (the closest here: {meant})" if meant else ""),
                "correct the path; for a Hub dataset of that name write hf:" + spec)])
    if spec.startswith("hf:") or (not path.exists() and _looks_like_hub_id(spec)):
        hub = HubSpec.parse(spec)
        folder = _download_hub_dataset(hub.repo_id, hub.revision)
        if _is_fbi_tsv_folder(folder):
            if hub.config or hub.split:
                raise DatasetError([Problem(str(hub), "", "an FBI TSV dataset has no "
                                            "configs or splits",
                                            "choose with --ability and --category")])
            yield from _read_folder(folder, files, problems, "fbi")
        else:
            yield from _read_hf_folder(folder, str(hub), files, hub.config, hub.split)
        return
    if not path.exists():
        raise DatasetError([Problem(spec, "", "no such file or directory", SPEC_HELP)])
    if path.is_dir():
        yield from _read_folder(path, files, problems, reader)
    elif not path.is_file():  # a FIFO or a device would hang or never end
        raise DatasetError([Problem(spec, "", "not a regular file (a pipe, socket or "
                                    "device)", "save the data to a file and pass that")])
    else:
        yield from _read_file(path, files, {}, reader)


def _meant_local_path(spec: str) -> str | None:
    """For an ORG/NAME-shaped SPEC that does not exist here: the existing path it most
    likely meant when its first part names (or nearly names, a typo) an entry of the
    working folder, "" when none is close past that; None when it reads as a Hub id."""
    import difflib

    here = Path(".")
    for depth, part in enumerate(spec.split("/")):
        if (here / part).exists():
            here = here / part
            continue
        try:
            names = sorted(entry.name for entry in here.iterdir())
        except OSError:
            names = []
        close = difflib.get_close_matches(part, names, n=1, cutoff=0.8)
        if not close:
            return None if depth == 0 else here.as_posix()
        here = here / close[0]
    return here.as_posix() if here.exists() else ""


def _looks_like_hub_id(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.endswith(TABULAR_SUFFIXES)


def _read_sample(files: list[str], first_of_each_category: bool) -> Iterator[RawRow]:
    import yaml

    text = resources.files("fbi.data").joinpath("sample.yaml").read_text(encoding="utf-8")
    files.append("sample")
    seen: set[str] = set()
    for number, item in enumerate(yaml.safe_load(text)["instances"], start=1):
        if first_of_each_category:
            if item["category"] in seen:
                continue
            seen.add(item["category"])
        yield RawRow("sample", f"item {number}", item,
                     {"source": "sample", "generator": "human", "label": "valid"})


def _is_fbi_tsv_folder(folder: Path) -> bool:
    return any(folder.glob("*/*.tsv"))


def _read_folder(
    folder: Path, files: list[str], problems: list[Problem], reader: Reader
) -> Iterator[RawRow]:
    if _is_fbi_tsv_folder(folder):
        for path in sorted(folder.glob("*/*.tsv")):
            yield from _read_fbi_tsv(path, folder, files, problems)
    elif reader == "datasets" and any(
            p.suffix.lower() in TABULAR_SUFFIXES for p in folder.rglob("*") if p.is_file()):
        yield from _read_hf_folder(folder, str(folder), files)
    elif any(folder.rglob("*.parquet")):
        for path in sorted(folder.rglob("*.parquet")):
            yield from _read_file(path, files, {}, "fbi")
    else:
        raise DatasetError([Problem(
            str(folder), "", "folder holds neither FBI TSV files (ABILITY/CATEGORY.tsv) "
            "nor data files", SPEC_HELP)])


def _read_hf_folder(
    folder: Path, label: str, files: list[str], config: str | None = None,
    split: str | None = None,
) -> Iterator[RawRow]:
    """A Hugging Face dataset folder, as ``datasets.load_dataset(folder)`` reads it."""
    files.append(label)
    try:
        for where, location, data in read_folder(folder, label, config, split):
            yield RawRow(f"{label} {where}", location, data)
    except CannotRead as error:
        raise DatasetError([Problem(label, "", f"datasets cannot read the folder ({error})",
                                    SPEC_HELP)]) from None


def _read_fbi_tsv(
    path: Path, root: Path, files: list[str], problems: list[Problem]
) -> Iterator[RawRow]:
    category = FBI_FILE_CATEGORIES.get(path.stem)
    if category is None:
        problems.append(Problem(
            str(path), "", f"file name '{path.stem}' is not an FBI category file",
            "rename it to one of " + ", ".join(sorted(FBI_FILE_CATEGORIES)) + ".tsv, "
            "or move it out of the folder"))
        return
    defaults = {"category": category, "source": root.name or str(root), "generator": "gpt-4-turbo",
                "label": "valid", "_id_prefix": category}
    category_ability = get_category(category).ability
    if category_ability is not None:
        defaults["ability"] = category_ability.value
    yield from _read_file(path, files, defaults, "fbi")


def _read_file(
    path: Path, files: list[str], defaults: dict[str, Any], reader: Reader
) -> Iterator[RawRow]:
    suffix = path.suffix.lower()
    if suffix not in TABULAR_SUFFIXES:
        raise DatasetError([Problem(str(path), "", f"unsupported file type '{suffix}'",
                                    SPEC_HELP)])
    files.append(str(path))
    if suffix == ".tsv" and "category" not in defaults:
        category = FBI_FILE_CATEGORIES.get(path.stem)
        if category:  # a single file of the FBI release
            defaults = {**defaults, "category": category, "_id_prefix": category}
    if reader == "datasets" or suffix not in OWN_READER_SUFFIXES:
        try:
            for location, data in read_file(path):
                yield RawRow(str(path), location, data, defaults)
        except CannotRead as error:
            raise DatasetError([Problem(str(path), "", f"cannot read the file ({error})",
                                        "check that it is well-formed "
                                        f"{suffix.lstrip('.').upper()}")]) from None
        return
    if suffix == ".parquet":
        yield from _read_parquet(path, defaults)
        return
    if suffix == ".jsonl":  # read a line at a time: a file of 1 GB is never held whole
        yield from _read_jsonl(path, defaults)
        return
    text = _read_utf8(path)
    if not text.strip():
        raise DatasetError(_empty(path))
    else:
        yield from _read_delimited(path, text, "\t" if suffix == ".tsv" else ",", defaults)


def _read_utf8(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DatasetError([_not_utf8(path, raw[: error.start].count(b"\n") + 1,
                                      error.start)]) from None


def _not_utf8(path: Path, line: int, byte: int) -> Problem:
    return Problem(str(path), f"line {line}", f"bytes that are not UTF-8 (byte {byte})",
                   "re-save the file as UTF-8")


def _empty(path: Path) -> list[Problem]:
    return [Problem(str(path), "", "the file is empty", "point at a file that holds rows")]


def _read_jsonl(path: Path, defaults: dict[str, Any]) -> Iterator[RawRow]:
    # Split on b"\n" only (and drop a "\r" before it): texts may hold U+2028, U+0085 and
    # the other characters str.splitlines would wrongly break a record on.
    any_text, offset = False, 0
    with open(path, "rb") as file:
        for number, raw in enumerate(file, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                raise DatasetError([_not_utf8(path, number, offset + error.start)]) from None
            offset += len(raw)
            line = line.removesuffix("\n").removesuffix("\r")
            if not line.strip():
                continue
            any_text = True
            try:
                data = json.loads(line)
            except RecursionError:
                yield RawRow(str(path), f"line {number}", {"__error__": (
                    "JSON nested too deeply to read", "flatten the record")})
                continue
            except json.JSONDecodeError as error:
                yield RawRow(str(path), f"line {number}", {"__error__": (
                    f"not valid JSON ({error.msg} at column {error.colno}); "
                    "the line may be truncated", "write one complete JSON object per line")})
                continue
            if not isinstance(data, dict):
                data = {"__error__": ("expected a JSON object",
                                      "write one JSON object per line")}
            yield RawRow(str(path), f"line {number}", data, defaults)
    if not any_text:
        raise DatasetError(_empty(path))


def _read_delimited(
    path: Path, text: str, delimiter: str, defaults: dict[str, Any]
) -> Iterator[RawRow]:
    csv.field_size_limit(sys.maxsize)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    start = reader.line_num + 2  # header on line 1; data starts on line 2
    for data in reader:
        # A row with more fields than the header shows up under the key None.
        if None in data:
            data = {"__error__": (f"{len(data) - 1 + len(data[None])} fields where the header "
                                  f"has {len(reader.fieldnames or [])}",
                                  "quote fields that contain the delimiter")}
        yield RawRow(str(path), f"line {start}", data, defaults)
        start = reader.line_num + 1


def _read_parquet(path: Path, defaults: dict[str, Any]) -> Iterator[RawRow]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as error:  # pyarrow raises several types for a broken file
        raise DatasetError([Problem(str(path), "", f"not a readable Parquet file ({error})",
                                    "re-export the file as Parquet")]) from None
    for number, data in enumerate(table.to_pylist(), start=1):
        yield RawRow(str(path), f"row {number}", data, defaults)


@dataclass(frozen=True)
class HubSpec:
    """A Hub dataset: ``hf:ORG/NAME[@REVISION][?config=CONFIG&split=SPLIT]``."""

    repo_id: str
    revision: str | None = None
    config: str | None = None
    split: str | None = None

    @classmethod
    def parse(cls, spec: str) -> HubSpec:
        from urllib.parse import parse_qs

        name, _, query = spec.removeprefix("hf:").partition("?")
        repo_id, _, revision = name.partition("@")
        options = {k: v[-1] for k, v in parse_qs(query).items()}
        unknown = set(options) - {"config", "split"}
        if unknown:
            raise DatasetError([Problem(spec, "", f"unknown option {sorted(unknown)[0]!r}",
                                        "give hf:ORG/NAME@REVISION?config=NAME&split=NAME")])
        return cls(repo_id, revision or None, options.get("config"), options.get("split"))

    def __str__(self) -> str:
        text = f"hf:{self.repo_id}" + (f"@{self.revision}" if self.revision else "")
        query = "&".join(f"{key}={value}" for key, value in
                         (("config", self.config), ("split", self.split)) if value)
        return text + (f"?{query}" if query else "")


def _download_hub_dataset(repo_id: str, revision: str | None = None) -> Path:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, repo_type="dataset", revision=revision))
    except Exception as error:  # offline, unknown repo or revision, gated: all end alike
        at = f"@{revision}" if revision else ""
        raise DatasetError([Problem(
            f"hf:{repo_id}{at}", "",
            f"could not fetch the dataset from the Hugging Face Hub ({type(error).__name__})",
            "check the network, the repo id and the revision, or download the dataset "
            "elsewhere and pass its local folder")]) from None
