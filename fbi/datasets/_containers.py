"""Every dataset source fbi reads, as raw rows with their location.

The readers behind [`fbi.datasets.load_dataset`][fbi.load_dataset]: the built-in sample, files, the
original FBI TSV layout, Hugging Face folders and Hub datasets. They yield
`RawRow` values; `fbi.datasets._instances` turns them into instances. Files,
Hugging Face folders and Hub datasets go through ``datasets.load_dataset``
(`fbi.datasets._hf`); the sample, the FBI TSV layout and, to name a bad row's line,
fbi's own readers read the rest.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from fbi.datasets._hf import CannotRead, read_file, read_folder
from fbi.datasets._layouts import RawRow
from fbi.datasets._llmbar import LLMBAR_FILE, llmbar_subset
from fbi.errors import DatasetError, Problem
from fbi.exact_json import JSONRefused, exact_json
from fbi.files import NotRegularFile, check_regular, open_regular, read_bytes
from fbi.taxonomy import SCORE_INVARIANT, get_category

SAMPLE = "sample"
#: The main job's dataset: the first instance of each category of the built-in sample
#: (23 of its 72), so `fbi evaluate` on the embedded judge takes under a minute on two
#: cores; ``sample`` is the whole of it.
QUICK = "quick"
#: The master-key suite (issue 65): the sample's questions and references, each answered
#: by every master key, and the sample's wrong answers with a reasoning opener before them.
MASTER_KEYS = "master-keys"
BUILT_IN = (SAMPLE, QUICK, MASTER_KEYS)
#: Files fbi reads with its own readers too (the ones that name lines) ...
OWN_READER_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".parquet")
#: ... and every file it reads.
TABULAR_SUFFIXES = OWN_READER_SUFFIXES
#: JSON files are read only by fbi's exact reader (never ``datasets``'): its JSON builder
#: turns a column of mixed types into JSON-dumped text (every answer gains quote marks),
#: an integer past 64 bits into a float ("inf"), and its Arrow reader crashes the process
#: on deeply nested lines.
EXACT_JSON_SUFFIXES = (".jsonl", ".json")
SPEC_HELP = (
    "give 'sample', 'quick', 'master-keys', a .jsonl/.json/.csv/.tsv/.parquet file, an "
    "FBI TSV folder, a Hugging Face dataset folder, or hf:ORG/NAME"
)
#: Who reads files and Hugging Face folders: ``datasets.load_dataset``, or fbi's own
#: readers (which name the line of a bad row; used for the files fbi writes itself).
Reader = Literal["datasets", "fbi"]

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


def read_rows(
    spec: str, files: list[str], problems: list[Problem], reader: Reader = "datasets"
) -> Iterator[RawRow]:
    """The rows of a dataset SPEC (the module docstring of `fbi.datasets._dataset` lists
    them), each with its file and location; the files read are added to ``files``."""
    if spec == MASTER_KEYS:
        yield from _read_master_keys(files)
        return
    if spec in BUILT_IN:
        yield from _read_sample(files, first_of_each_category=spec == QUICK)
        return
    path = Path(spec)
    if not spec.startswith("hf:") and not path.exists() and looks_like_hub_id(spec):
        meant = _meant_local_path(spec)
        if meant is not None:  # "hiddn/data" beside a folder "hidden": a typo, not a Hub id
            raise DatasetError([Problem(
                spec, "", "no such file or directory" + (
                    f" (the closest here: {meant})" if meant else ""),
                "correct the path; for a Hub dataset of that name write hf:" + spec)])
    if spec.startswith("hf:") or (not path.exists() and looks_like_hub_id(spec)):
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
        yield from read_file_rows(path, files, {}, reader)


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


def looks_like_hub_id(spec: str) -> bool:
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


def _read_master_keys(files: list[str]) -> Iterator[RawRow]:
    """The master-key suite (Zhao et al. 2025, §3): for each distinct question and
    reference of the sample, one instance per master key of every family (the answer is
    the key alone, category ``master-key/FAMILY``); for each of the sample's wrong
    answers, one with a reasoning opener before it (``master-key/prefixed``, the opener
    a seeded choice of every language's, so the suite is the same on every machine)."""
    import random

    from fbi.attack_texts import MASTER_KEY_PREFIX, PREFIXED, attack_texts

    texts = attack_texts()
    defaults = {"source": "master-keys", "generator": f"rules:master-key/v{texts.version}",
                "label": "valid"}
    rows = list(_read_sample(files, first_of_each_category=False))
    abilities: dict[tuple[str, str], str] = {}  # (a score-invariant row names none)
    for row in rows:
        ability = get_category(row.data["category"]).ability
        if ability is not None:
            abilities.setdefault((row.data["instruction"], row.data["gold_answer"]),
                                 ability.value)
    seen: set[tuple[str, str]] = set()
    for row in rows:
        item = row.data
        pair = (item["instruction"], item["gold_answer"])
        if pair in seen or pair not in abilities:
            continue
        seen.add(pair)
        for family in texts.master_keys.values():
            for number, key in enumerate(family.keys, 1):
                yield RawRow("master-keys", f"{row.location}, key {family.family} {number}",
                             {"instruction": item["instruction"],
                              "gold_answer": item["gold_answer"],
                              "ability": abilities[pair], "perturbed_answer": key,
                              "category": f"{MASTER_KEY_PREFIX}{family.family}",
                              "rationale": f"the answer replaced by the master key {key!r} "
                                           f"({family.name})"}, defaults)
    for row in rows:
        item = row.data
        category = get_category(item["category"])
        if not category.lowers_score or category.extra or category.ability is None:
            continue
        opener = random.Random(f"master-key:{item['instruction']}:{item['category']}"
                               ).choice(texts.openers)
        yield RawRow("master-keys", f"{row.location}, prefixed",
                     {"instruction": item["instruction"], "gold_answer": item["gold_answer"],
                      "ability": category.ability.value,
                      "perturbed_answer": f"{opener}\n\n{item['perturbed_answer']}",
                      "category": f"{MASTER_KEY_PREFIX}{PREFIXED}",
                      "rationale": f"{opener!r} put before a {item['category']} error: "
                                   f"{item.get('rationale') or ''}".strip()}, defaults)


def _is_fbi_tsv_folder(folder: Path) -> bool:
    return any(folder.glob("*/*.tsv"))


def _read_folder(
    folder: Path, files: list[str], problems: list[Problem], reader: Reader
) -> Iterator[RawRow]:
    special = next((p for p in folder.rglob("*") if p.suffix.lower() in TABULAR_SUFFIXES
                    and not p.is_dir() and not p.is_file()), None)
    if special is not None:  # a FIFO or a device among the data files would hang a reader
        raise DatasetError([Problem(str(special), "", "not a regular file (a pipe, socket "
                                    "or device)", "move it out of the folder")])
    if _is_fbi_tsv_folder(folder):
        for path in sorted(folder.glob("*/*.tsv")):
            yield from _read_fbi_tsv(path, folder, files, problems)
    elif llmbar := _llmbar_files(folder):
        for path in llmbar:
            yield from read_file_rows(path, files, {"_subset": llmbar_subset(path, folder)},
                                      "fbi")
    elif reader == "datasets" and any(
            p.suffix.lower() in TABULAR_SUFFIXES for p in folder.rglob("*") if p.is_file()):
        yield from _read_hf_folder(folder, str(folder), files)
    elif any(folder.rglob("*.parquet")):
        for path in sorted(folder.rglob("*.parquet")):
            yield from read_file_rows(path, files, {}, "fbi")
    else:
        raise DatasetError([Problem(
            str(folder), "", "folder holds neither FBI TSV files (ABILITY/CATEGORY.tsv) "
            "nor data files", SPEC_HELP)])


def _llmbar_files(folder: Path) -> list[Path]:
    """The ``dataset.json`` files of a folder in LLMBar's tree: every data file in it
    is named so (read by fbi's reader, each keeping its path as its subset; through
    ``datasets`` they would merge into one split and lose it)."""
    data = [p for p in folder.rglob("*") if p.is_file() and
            p.suffix.lower() in TABULAR_SUFFIXES and
            not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    if data and all(p.name == LLMBAR_FILE for p in data):
        return sorted(data)
    return []


def _read_hf_folder(
    folder: Path, label: str, files: list[str], config: str | None = None,
    split: str | None = None,
) -> Iterator[RawRow]:
    """A Hugging Face dataset folder, as ``datasets.load_dataset(folder)`` reads it, its
    JSON files first checked by fbi's exact reader (`_check_json_files`)."""
    _check_json_files(folder)
    files.append(label)
    # (a folder of CSV or TSV files is read as text, column by column)
    typed = not any(p.suffix.lower() in (".csv", ".tsv") for p in folder.rglob("*"))
    try:
        for where, location, data in read_folder(folder, label, config, split):
            yield RawRow(f"{label} {where}", location, data, typed=typed)
    except CannotRead as error:
        raise DatasetError([Problem(label, "", f"datasets cannot read the folder ({error})",
                                    SPEC_HELP)]) from None


#: Columns whose values must be text in every row (ids: text or whole numbers, one kind
#: in a file): ``datasets`` would make a column of mixed kinds JSON-dumped text.
_TEXT_COLUMNS = frozenset({
    "instruction", "question", "gold_answer", "og", "perturbed_answer", "perturbed_gpt4",
    "prompt", "chosen", "rejected", "input", "output_1", "output_2", "category", "subset",
    "ability", "label", "rationale"})
_ID_COLUMNS = ("id", "cdx")


def _check_json_files(folder: Path) -> None:
    """Read every JSON file of a folder with fbi's exact reader before ``datasets`` reads
    them: a value no column holds exactly (see `exact_json`), a text column holding
    a non-text value, or an id column mixing text and numbers is a DatasetError naming
    the file and line, not a silently converted column."""
    problems: list[Problem] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and
                       p.suffix.lower() in EXACT_JSON_SUFFIXES):
        hidden = any(part.startswith(".") for part in path.relative_to(folder).parts)
        if hidden or path.name in _METADATA_FILES or _holds_one_object(path):
            continue  # not data: datasets reads no hidden file, and no card or object
        id_kinds: dict[str, str] = {}
        try:
            _check_json_rows(read_file_rows(path, [], {}, "fbi"), id_kinds, problems)
        except DatasetError as error:
            problems += error.problems
    if problems:
        raise DatasetError(problems)


#: JSON files of a Hugging Face folder that describe it rather than hold its rows.
_METADATA_FILES = frozenset({"dataset_infos.json", "dataset_info.json", "dataset_dict.json",
                             "state.json"})


def _holds_one_object(path: Path) -> bool:
    """A ``.json`` file whose text is one JSON object (metadata, not rows)."""
    if path.suffix.lower() != ".json":
        return False
    with open_regular(path, "rb") as file:
        start = file.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    if not start.startswith(b"{"):
        return False
    try:
        return isinstance(exact_json(_read_utf8(path)), dict)
    except (JSONRefused, DatasetError):
        return False


def _check_json_rows(rows: Iterator[RawRow], id_kinds: dict[str, str],
                     problems: list[Problem]) -> None:
    """The checks of `_check_json_files` on one file's rows (at most 20 problems)."""
    for row in rows:
        if "__error__" in row.data:
            problems.append(Problem(row.file, row.location, *row.data["__error__"]))
            continue
        for column, value in row.data.items():
            if column in _TEXT_COLUMNS and value is not None and \
                    not isinstance(value, (str, list)):  # (lists: conversations)
                problems.append(Problem(row.file, row.location, f"'{column}' must be "
                                        f"text, not {type(value).__name__}",
                                        f"quote the {column} value"))
            elif column in _ID_COLUMNS and value is not None:
                kind = "text" if isinstance(value, str) else type(value).__name__
                first = id_kinds.setdefault(column, kind)
                if kind != first:
                    problems.append(Problem(row.file, row.location, f"'{column}' is "
                                            f"{kind} where earlier rows hold {first}",
                                            "write every id the same way (as text)"))
        if len(problems) >= 20:
            raise DatasetError(problems)


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
    yield from read_file_rows(path, files, defaults, "fbi")


def read_file_rows(
    path: Path, files: list[str], defaults: dict[str, Any], reader: Reader
) -> Iterator[RawRow]:
    """The rows of one file (.jsonl, .json, .csv, .tsv, .parquet), each with its line or
    row; ``files`` gains the path, ``defaults`` go on every row, ``reader`` says whose
    reader reads it (fbi's names every line; JSON is always fbi's exact reader)."""
    suffix = path.suffix.lower()
    if suffix not in TABULAR_SUFFIXES:
        raise DatasetError([Problem(str(path), "", f"unsupported file type '{suffix}'",
                                    SPEC_HELP)])
    try:  # (a FIFO named rows.parquet would hang pyarrow, and datasets)
        check_regular(path)
    except NotRegularFile as error:
        raise DatasetError([Problem(str(path), "", f"{error.kind}, not a regular file",
                                    "save the data to a regular file and pass that")]) \
            from None
    files.append(str(path))
    if suffix == ".tsv" and "category" not in defaults:
        category = FBI_FILE_CATEGORIES.get(path.stem)
        if category:  # a single file of the FBI release
            defaults = {**defaults, "category": category, "_id_prefix": category}
    if suffix in EXACT_JSON_SUFFIXES:  # a line at a time: 1 GB is never held whole
        yield from _read_jsonl(path, defaults) if suffix == ".jsonl" else \
            _read_json(path, defaults)
        return
    if reader == "datasets" or suffix not in OWN_READER_SUFFIXES:
        try:
            typed = suffix not in (".csv", ".tsv")  # (datasets reads their columns as text)
            for location, data in read_file(path):
                yield RawRow(str(path), location, data, defaults, typed)
        except CannotRead as error:
            raise DatasetError([Problem(str(path), "", f"cannot read the file ({error})",
                                        "check that it is well-formed "
                                        f"{suffix.lstrip('.').upper()}")]) from None
        return
    if suffix == ".parquet":
        yield from _read_parquet(path, defaults)
        return
    text = _read_utf8(path)
    if not text.strip():
        raise DatasetError(_empty(path))
    else:
        yield from _read_delimited(path, text, "\t" if suffix == ".tsv" else ",", defaults)


def _read_utf8(path: Path) -> str:
    raw = read_bytes(path)
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
    with open_regular(path, "rb") as file:
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
                data = exact_json(line)
            except JSONRefused as refused:
                data = {"__error__": (refused.message, refused.fix)}
            if not isinstance(data, dict):
                data = {"__error__": ("expected a JSON object",
                                      "write one JSON object per line")}
            yield RawRow(str(path), f"line {number}", data, defaults)
    if not any_text:
        raise DatasetError(_empty(path))


def _read_json(path: Path, defaults: dict[str, Any]) -> Iterator[RawRow]:
    """A ``.json`` file: an array of objects (``item N`` each), or JSON Lines under that
    name, as ``datasets`` also reads them."""
    text = _read_utf8(path)
    if not text.strip():
        raise DatasetError(_empty(path))
    try:
        data = exact_json(text)
    except JSONRefused as refused:
        if refused.extra_data:  # one object per line: JSON Lines in a .json file
            yield from _read_jsonl(path, defaults)
            return
        raise DatasetError([Problem(str(path), refused.where(text), refused.message,
                                    refused.fix)]) from None
    if not isinstance(data, list):
        raise DatasetError([Problem(str(path), "", "expected an array of objects or one "
                                    "object per line", "write [{...}, {...}] or JSON Lines")])
    for number, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            item = {"__error__": ("expected a JSON object", "make every item an object")}
        yield RawRow(str(path), f"item {number}", item, defaults)


def _read_delimited(
    path: Path, text: str, delimiter: str, defaults: dict[str, Any]
) -> Iterator[RawRow]:
    csv.field_size_limit(sys.maxsize)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    start = reader.line_num + 2  # header on line 1; data starts on line 2
    _unique_columns(path, reader.fieldnames or [], "line 1")  # (reads the header)
    for data in reader:
        # A row with more fields than the header shows up under the key None.
        if None in data:
            data = {"__error__": (f"{len(data) - 1 + len(data[None])} fields where the header "
                                  f"has {len(reader.fieldnames or [])}",
                                  "quote fields that contain the delimiter")}
        yield RawRow(str(path), f"line {start}", data, defaults, typed=False)
        start = reader.line_num + 1


def _read_parquet(path: Path, defaults: dict[str, Any]) -> Iterator[RawRow]:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
    except Exception as error:  # pyarrow raises several types for a broken file
        raise DatasetError([Problem(str(path), "", f"not a readable Parquet file ({error})",
                                    "re-export the file as Parquet")]) from None
    _unique_columns(path, names, "the schema")
    try:
        table = pq.read_table(path)
    except Exception as error:
        raise DatasetError([Problem(str(path), "", f"not a readable Parquet file ({error})",
                                    "re-export the file as Parquet")]) from None
    for number, data in enumerate(table.to_pylist(), start=1):
        yield RawRow(str(path), f"row {number}", data, defaults)


def _unique_columns(path: Path, names: list[str], where: str) -> None:
    """A table whose columns each have their own name: two of one name would be read as
    the last, the other's values silently lost."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DatasetError([Problem(str(path), where, f"two columns are named {name!r} "
                                        "(only one could be read)",
                                        "rename or remove one of them")])
        seen.add(name)


@dataclass(frozen=True)
class HubSpec:
    """A Hub dataset: ``hf:ORG/NAME[@REVISION][?config=CONFIG&split=SPLIT]``."""

    repo_id: str
    """``ORG/NAME``."""
    revision: str | None = None
    """A branch, tag or commit (``@REVISION``); None: the default branch."""
    config: str | None = None
    """Only this config (``?config=``)."""
    split: str | None = None
    """Only this split (``?split=``)."""

    @classmethod
    def parse(cls, spec: str) -> HubSpec:
        """A Hub spec as written (``hf:`` optional)."""
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
