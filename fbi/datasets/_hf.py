"""Reading through Hugging Face ``datasets``, as users of the Hub expect.

``hf:`` specs, Hugging Face dataset folders and local Parquet, CSV, TSV and JSON files are
read with ``datasets.load_dataset``: its configs (the card's ``configs:``, else inferred
from the files), its splits and its readers. fbi always streams (``streaming=True``):
rows arrive a batch at a time and nothing is copied into the datasets cache, so a file
of any size costs the same memory.

Two choices keep what fbi reads equal to what the file says:

* CSV and TSV columns are read as text, with pandas' missing-value guessing off: an
  answer "NA" or "null" stays that text, and "007" is not the number 7.
* Whatever ``datasets`` cannot read is a `CannotRead`; for the formats fbi has a
  reader of its own, `fbi.datasets` re-reads the file with it to name the line.

This module yields ``(file, location, row)`` triples; `fbi.datasets` turns them into
records.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fbi.errors import DatasetError, Problem
from fbi.files import open_regular

#: A file's suffix → the datasets builder that reads it, and that builder's options.
BUILDERS: dict[str, tuple[str, dict[str, Any]]] = {
    ".parquet": ("parquet", {}),
    ".csv": ("csv", {"sep": ","}),
    ".tsv": ("csv", {"sep": "\t"}),
    ".json": ("json", {}),
    ".jsonl": ("json", {}),
}
_BATCH = 1000
_MESSAGE_LIMIT = 300  # datasets' messages can list every supported extension


class CannotRead(Exception):
    """``datasets`` could not read a source; the message is its own, shortened."""


def read_file(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(location, row)`` for every row of one local file, in order."""
    builder, options = BUILDERS[path.suffix.lower()]
    if builder == "csv":
        options = {**options, **_text_columns(path, options["sep"])}
    datasets = _datasets()
    try:
        stream = datasets.load_dataset(builder, data_files=str(path), split="train",
                                       streaming=True, **options)
        yield from ((f"row {n}", row) for n, row in enumerate(_rows(stream), start=1))
    except Exception as error:  # pandas, pyarrow and datasets raise many types
        raise CannotRead(_shortened(error)) from None


def read_folder(
    folder: Path, label: str, config: str | None = None, split: str | None = None
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(CONFIG/SPLIT, location, row)`` for every row of a Hugging Face dataset folder,
    as ``load_dataset(folder, config)`` reads it: every config and split unless named.
    LABEL names the dataset in messages (``hf:ORG/NAME@REVISION``)."""
    datasets = _datasets()
    try:
        configs = datasets.get_dataset_config_names(str(folder))
    except Exception as error:
        raise CannotRead(_shortened(error)) from None
    if config is not None and config not in configs:
        raise DatasetError([Problem(label, "", f"no config {config!r}",
                                    f"give one of: {', '.join(configs) or '(none)'}")])
    matched = False
    for name in [config] if config else configs:
        try:
            splits = datasets.load_dataset(str(folder), name, streaming=True,
                                           **_folder_options(datasets, folder, name))
        except FileNotFoundError as error:
            missing = re.search(r"Unable to find '([^']+)'", str(error))
            where = f" ({Path(missing[1]).relative_to(folder)})" if missing and \
                Path(missing[1]).is_relative_to(folder) else ""
            raise DatasetError([Problem(label, "", f"config {name!r} lists files the "
                                        f"download lacks{where}",
                                        "check the revision")]) from None
        except Exception as error:
            raise DatasetError([Problem(label, "", f"datasets cannot read config {name!r}: "
                                        f"{_shortened(error)}",
                                        "check the dataset's card and files")]) from None
        for split_name, stream in splits.items():
            if split is not None and split_name != split:
                continue
            matched = True
            where = f"{name}/{split_name}"
            try:
                for number, row in enumerate(_rows(stream), start=1):
                    yield where, f"row {number}", row
            except Exception as error:
                raise DatasetError([Problem(f"{label} {where}", "", "datasets cannot read "
                                            f"it: {_shortened(error)}",
                                            "check the dataset's files")]) from None
    if split is not None and not matched:
        available = sorted({s for name in ([config] if config else configs)
                            for s in _split_names(datasets, folder, name)})
        raise DatasetError([Problem(label, "", f"no split {split!r}",
                                    f"give one of: {', '.join(available) or '(none)'}")])


def _rows(stream: Any) -> Iterator[dict[str, Any]]:
    # Arrow batches, turned into dicts a batch at a time: three times faster than the
    # row-at-a-time iterator, and the same values.
    for table in stream.with_format("arrow").iter(batch_size=_BATCH):
        yield from table.to_pylist()


def _text_columns(path: Path, sep: str) -> dict[str, Any]:
    """Options that read every column of a CSV or TSV file as the text it holds."""
    datasets = _datasets()
    try:
        with open_regular(path, "r", encoding="utf-8-sig", newline="") as file:
            header = next(csv.reader(file, delimiter=sep), [])
    except (UnicodeDecodeError, csv.Error) as error:
        raise CannotRead(str(error)) from None
    if not header or len(set(header)) != len(header):
        raise CannotRead("the header row is empty or names a column twice")
    return {"features": datasets.Features({name: datasets.Value("string") for name in header}),
            "na_filter": False}


def _folder_options(datasets: Any, folder: Path, config: str) -> dict[str, Any]:
    builder = datasets.load_dataset_builder(str(folder), config)
    if type(builder.config).__name__ != "CsvConfig":
        return {}
    first = next(iter(builder.config.data_files.values()))[0]
    return _text_columns(Path(first), builder.config.sep)


def _split_names(datasets: Any, folder: Path, config: str) -> list[str]:
    try:
        return list(datasets.load_dataset_builder(str(folder), config).config.data_files)
    except Exception:  # the split list is only a hint in a message
        return []


def _shortened(error: Exception) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _datasets() -> Any:
    import datasets

    # fbi draws its own progress; datasets' bars and info logs would interleave with it.
    datasets.disable_progress_bars()
    # With torch installed (fbi[embeddings]) datasets imports it on the first load, to
    # hash and format tensors fbi never asks for: 230 MB and a second of start-up.
    datasets.config.TORCH_AVAILABLE = False
    datasets.config.TF_AVAILABLE = False
    datasets.config.JAX_AVAILABLE = False
    # Not even its errors: each is raised too, and fbi's message names the file and line
    # (its JSON reader logs "Failed to load JSON … in row 1" before raising).
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    return datasets
