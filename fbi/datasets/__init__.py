"""Datasets: every source fbi reads behind one entry point, and the writers.

Reading goes one way down: a container (the built-in sample, a file, an FBI TSV folder, a
Hugging Face folder, a Hub dataset: `fbi.datasets._containers`) yields rows with their
file and line; a row layout (`fbi.datasets._layouts`: fbi's columns, preference pairs,
LLMBar, RewardBench 2's best-of-N rows, an MT-Bench question) turns each into fbi's
fields; `fbi.datasets._instances` checks them and makes the instances, one Problem per
bad row; `fbi.datasets._dataset` holds the whole (a [`Dataset`][fbi.Dataset]), selects,
validates and writes. A new layout is one class: [`register_layout`][fbi.datasets.register_layout].
"""

from fbi.datasets._containers import QUICK, SAMPLE, HubSpec, Reader, read_file_rows, read_rows
from fbi.datasets._dataset import (
    Dataset,
    Validation,
    load_dataset,
    load_gold_items,
    source_name,
    validate_dataset,
    with_line_numbers,
    write_dataset,
)
from fbi.datasets._layouts import (
    LAYOUTS,
    RawRow,
    RowLayout,
    RowProblem,
    layout_of,
    layouts,
    readable_rows,
    register_layout,
)
from fbi.datasets._preference import parse_columns

