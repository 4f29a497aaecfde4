"""A GGUF file's metadata and tensors, read straight from the file.

``gguf.GGUFReader`` (llama.cpp's reader) builds a NumPy view for every part of every
field, which for SmolLM2's 49,152 tokens and 48,900 merges takes ~3.8 s; the format is
simple enough to read in one pass (the GGUF specification, ggml's ``docs/gguf.md``,
version 3). Tensors stay in a memory map; `gguf.quants.dequantize` turns them into
float32.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class GgufError(ValueError):
    """The file is not a GGUF file this reader understands."""


@dataclass
class Tensor:
    name: str
    shape: tuple[int, ...]  # ggml's order: the fastest-moving dimension first
    kind: int  # ggml's type number (gguf.GGMLQuantizationType)
    data: np.ndarray  # the raw bytes


class GgufFile:
    """``fields`` (key → value) and ``tensors`` (name → `Tensor`) of one file."""

    def __init__(self, path: str):
        self._bytes = np.memmap(path, dtype=np.uint8, mode="r")
        self._view = memoryview(self._bytes)
        self._at = 0
        if bytes(self._view[:4]) != b"GGUF":
            raise GgufError(f"{path}: not a GGUF file")
        self._at = 4
        version, tensor_count, field_count = self._unpack("<I"), self._unpack("<Q"), \
            self._unpack("<Q")
        if version not in (2, 3):
            raise GgufError(f"{path}: GGUF version {version}; versions 2 and 3 are read")
        self.fields: dict[str, Any] = {}
        for _ in range(field_count):
            key = self._string()
            self.fields[key] = self._value(self._unpack("<I"))
        infos = []
        for _ in range(tensor_count):
            name = self._string()
            dims = tuple(self._unpack("<Q") for _ in range(self._unpack("<I")))
            infos.append((name, dims, self._unpack("<I"), self._unpack("<Q")))
        alignment = int(self.fields.get("general.alignment", 32))
        start = -(-self._at // alignment) * alignment
        from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

        self.tensors: dict[str, Tensor] = {}
        for name, dims, kind, offset in infos:
            block, block_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
            size = int(np.prod(dims)) // block * block_bytes
            data = self._bytes[start + offset:start + offset + size]
            self.tensors[name] = Tensor(name, dims, kind, data)

    def matrix(self, name: str) -> np.ndarray:
        """A tensor as float32, (rows, columns) with ggml's first dimension the columns."""
        from gguf.constants import GGMLQuantizationType
        from gguf.quants import dequantize

        tensor = self.tensors[name]
        rows = int(np.prod(tensor.shape[1:]))
        kind = GGMLQuantizationType(tensor.kind)
        if kind == GGMLQuantizationType.F32:
            values = tensor.data.view(np.float32)
        else:  # one row of blocks per output row
            values = dequantize(tensor.data.reshape(rows, -1), kind)
        return np.asarray(values, dtype=np.float32).reshape(rows, tensor.shape[0])

    def _unpack(self, fmt: str):
        size = struct.calcsize(fmt)
        (value,) = struct.unpack_from(fmt, self._view, self._at)
        self._at += size
        return value

    def _string(self) -> str:
        length = self._unpack("<Q")
        text = bytes(self._view[self._at:self._at + length]).decode("utf-8", errors="replace")
        self._at += length
        return text

    def _value(self, kind: int):
        if kind in _SCALARS:
            return self._unpack(_SCALARS[kind])
        if kind == _STRING:
            return self._string()
        if kind == _ARRAY:
            item_kind, count = self._unpack("<I"), self._unpack("<Q")
            if item_kind in _SCALARS:  # one read for the whole array
                dtype = np.dtype(_SCALARS[item_kind])
                values = np.frombuffer(self._view, dtype=dtype, count=count,
                                       offset=self._at)
                self._at += count * dtype.itemsize
                return values.tolist()
            return [self._value(item_kind) for _ in range(count)]
        raise GgufError(f"unknown GGUF value type {kind} at byte {self._at}")
