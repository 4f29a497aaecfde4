"""A dataset's instances in memory, at a cost that suits the dataset's size.

Up to `COMPACT_ABOVE` instances are kept as objects, as a list would keep them. Past
it the store turns compact: each instance is kept as its canonical row (the bytes
`canonical_row` gives, which the dataset fingerprint hashes) compressed with LZ4
(pyarrow's codec; pyarrow is a core dependency), and built again when it is read. A row of
the FBI release takes about 2 kB so, against 10.7 kB as Python strings (its long answers
hold non-ASCII text, two bytes a character), and 200,000 of them fit a dry run in 1 GB
(``benchmarks/dry_run_scale.py``). What filters and samples read (id, ability, category)
is kept plain, so selecting never decompresses a row.

The threshold is 20,000, ten times the paper's 2,400: a run of a paper-sized dataset reads
each instance once per strategy and never pays for decompression.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from typing import NamedTuple, overload

from fbi.records import Instance
from fbi.taxonomy import Ability

COMPACT_ABOVE = 20_000


class InstanceKey(NamedTuple):
    """What selecting an instance reads, kept uncompressed."""

    id: str
    ability: Ability
    category: str
    group: str = ""
    """The best-of-N row the instance is a pair of (selection keeps rows whole)."""


#: Columns a row leaves out of its canonical form when empty: those added after datasets
#: were fingerprinted, so a dataset without best-of-N rows keeps its fingerprint.
OMITTED_WHEN_EMPTY = ("context", "group", "chosen_index", "rejected_index", "chosen_count",
                      "rejected_count", "changed_step")


def canonical_row(instance: Instance) -> bytes:
    """The instance's row as the dataset fingerprint hashes it (keys sorted, UTF-8)."""
    row = instance.to_row()
    for name in OMITTED_WHEN_EMPTY:
        if row[name] in (None, "", []):
            del row[name]
    return json.dumps(row, sort_keys=True, ensure_ascii=False).encode()


class InstanceStore(Sequence[Instance]):
    """Instances in order; objects up to ``compact_above``, compressed rows past it."""

    def __init__(self, instances: Iterable[Instance] = (), compact_above: int | None = None):
        self.compact_above = COMPACT_ABOVE if compact_above is None else compact_above
        self.keys: list[InstanceKey] = []
        self._objects: list[Instance] | None = []  # None once compact
        self._rows: list[bytes] = []  # LZ4 frames of canonical rows, once compact
        for instance in instances:
            self.append(instance)

    @property
    def compact(self) -> bool:
        return self._objects is None

    def append(self, instance: Instance) -> None:
        self.keys.append(InstanceKey(instance.id, instance.ability, instance.category,
                                     instance.provenance.group))
        if self._objects is None:
            self._rows.append(_compress(canonical_row(instance)))
            return
        self._objects.append(instance)
        if len(self._objects) > self.compact_above:
            self._rows = [_compress(canonical_row(i)) for i in self._objects]
            self._objects = None

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> Instance: ...

    @overload
    def __getitem__(self, index: slice) -> list[Instance]: ...

    def __getitem__(self, index: int | slice) -> Instance | list[Instance]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._objects is not None:
            return self._objects[index]
        return Instance.from_row(json.loads(_decompress(self._rows[index])))

    def __iter__(self) -> Iterator[Instance]:
        if self._objects is not None:
            return iter(self._objects)
        return (self[n] for n in range(len(self)))

    def __eq__(self, other: object) -> bool:
        """Equal to a store or list holding equal instances in the same order."""
        if not isinstance(other, InstanceStore | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other,
                                                                          strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list is

    def __repr__(self) -> str:
        return f"InstanceStore({len(self)} instances{', compact' if self.compact else ''})"

    def subset(self, indices: Iterable[int]) -> InstanceStore:
        """The instances at ``indices``, in that order; compact rows are shared, not copied."""
        chosen = InstanceStore(compact_above=self.compact_above)
        for n in indices:
            chosen.keys.append(self.keys[n])
            if self._objects is not None:
                chosen._objects.append(self._objects[n])  # type: ignore[union-attr]
            else:
                chosen._rows.append(self._rows[n])
        if self._objects is None:
            chosen._objects = None  # compact stays compact, whatever the size
        return chosen

    def fingerprint(self) -> str:
        """sha256 of the canonical rows in id order: the same content gives the same print,
        whatever the order of the rows (held compact, a row is decompressed, not rebuilt)."""
        digest = hashlib.sha256()
        for n in sorted(range(len(self)), key=lambda n: self.keys[n].id):
            digest.update(canonical_row(self._objects[n]) if self._objects is not None
                          else _decompress(self._rows[n]))
        return digest.hexdigest()


@cache
def _codec():
    import pyarrow as pa  # imported when a store first turns compact

    return pa.Codec("lz4")


def _compress(data: bytes) -> bytes:
    """An LZ4 frame behind the row's length (4 bytes), which decompressing needs."""
    return len(data).to_bytes(4, "little") + _codec().compress(data, asbytes=True)


def _decompress(data: bytes) -> bytes:
    size = int.from_bytes(data[:4], "little")
    return _codec().decompress(memoryview(data)[4:], decompressed_size=size, asbytes=True)
