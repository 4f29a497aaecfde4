"""SmolLM2's forward pass in NumPy, from the weights of its GGUF file.

The embedded judge's runtime without a compiler: NumPy's wheels carry OpenBLAS for
Linux x86-64 and aarch64, and ``gguf`` (llama.cpp's own reader, pure Python) reads and
dequantizes the shipped Q4_1/Q8_0 weights to float32 once at load. The architecture is
llama.cpp's ``llama`` graph (``src/models/llama.cpp``): RMS norm, rotary positions in
the GGUF's adjacent-pair layout (the converter permuted Q and K for it), grouped-query
attention, SwiGLU feed-forward, the output head tied to the token embeddings when the
file has no ``output.weight``.

**Replies that do not depend on the company they keep.** Several sequences' rows are
stacked into one matrix product per weight (prompts and decoding steps together), which
is what makes this runtime fast on two cores. A row's product must then not depend on
how many rows share the call: OpenBLAS takes other kernels, and other splits between
its threads, for other row counts (a matrix-vector path for one row, a small-matrix
path below 16; with OpenBLAS 0.3.31 a row's sums round differently from 16 rows on with
one thread and from 17 with two), and which counts switch kernels changes between
releases. So every product is made in blocks of exactly `ROWS` rows (the last padded
with zeros): one shape, one kernel, one thread split, whatever shares the call — a row
equal bit for bit alone and beside any others, at any position, on any BLAS that gives
a row of one shape the same sums (tests/test_embedded_runtime.py checks it on the
machine it runs on). Blocks of 8 rows cost a long prompt about twice the time of one
product (2 cores), and a lone decoding step less than the 4 padded rows used before.
Attention is computed per sequence, in fixed chunks of `CHUNK` prompt tokens from
position 0, so its shapes depend on the sequence alone, and a prompt opening kept from
an earlier call gives exactly what computing it anew gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fbi.providers.local._tokenizer import Tokenizer

ROWS = 8  # the rows of every block a matrix product is made in (the module docstring)
CHUNK = 32  # prompt tokens attended together; prompt openings are kept in whole chunks


@dataclass
class Shape:
    layers: int
    width: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    rope_base: float
    norm_eps: float
    context: int


@dataclass
class Layer:
    attn_norm: np.ndarray
    qkv: np.ndarray  # (width, width + 2 · kv width), Q, K and V side by side
    out: np.ndarray
    ffn_norm: np.ndarray
    gate_up: np.ndarray  # (width, 2 · hidden)
    down: np.ndarray


class KVCache:
    """One sequence's keys and values, every layer, room for ``capacity`` tokens."""

    def __init__(self, shape: Shape, capacity: int):
        size = (shape.layers, shape.kv_heads, capacity, shape.head_dim)
        self.keys = np.zeros(size, dtype=np.float32)
        self.values = np.zeros(size, dtype=np.float32)
        self.length = 0
        self.capacity = capacity


@dataclass
class Step:
    """Tokens to append to one sequence in a forward pass."""

    cache: KVCache
    tokens: list[int]
    logits: bool  # the next token's logits are wanted (after the last of ``tokens``)


def load(path: str) -> tuple[NumpyLlama, Tokenizer]:
    """The model and tokenizer of a llama-architecture GGUF file."""
    from fbi.providers.local._gguf import GgufFile

    reader = GgufFile(path)

    def field(name: str, default=None):
        return reader.fields.get(name, default)

    arch = field("general.architecture")
    if arch != "llama":
        raise ValueError(f"{path}: a {arch!r} model; the NumPy runtime runs llama models")
    heads = int(field("llama.attention.head_count"))
    width = int(field("llama.embedding_length"))
    shape = Shape(
        layers=int(field("llama.block_count")), width=width,
        hidden=int(field("llama.feed_forward_length")), heads=heads,
        kv_heads=int(field("llama.attention.head_count_kv", heads)),
        head_dim=width // heads, rope_base=float(field("llama.rope.freq_base", 10_000.0)),
        norm_eps=float(field("llama.attention.layer_norm_rms_epsilon")),
        context=int(field("llama.context_length")))
    tensors = reader.tensors
    matrix = reader.matrix

    def vector(name: str) -> np.ndarray:  # a copy: nothing keeps the file mapped
        return matrix(name).reshape(-1).copy()

    def side_by_side(*names: str) -> np.ndarray:
        """The matrices transposed, (in, out), their outputs side by side."""
        parts = [matrix(name) for name in names]
        fused = np.empty((parts[0].shape[1], sum(p.shape[0] for p in parts)), np.float32)
        column = 0
        for part in parts:
            fused[:, column:column + part.shape[0]] = part.T
            column += part.shape[0]
        return fused

    layers = []
    for i in range(shape.layers):
        block = f"blk.{i}."
        layers.append(Layer(
            attn_norm=vector(block + "attn_norm.weight"),
            qkv=side_by_side(*(block + f"attn_{x}.weight" for x in "qkv")),
            out=side_by_side(block + "attn_output.weight"),
            ffn_norm=vector(block + "ffn_norm.weight"),
            gate_up=side_by_side(block + "ffn_gate.weight", block + "ffn_up.weight"),
            down=side_by_side(block + "ffn_down.weight")))
    embeddings = matrix("token_embd.weight")
    # tied to the embeddings unless the file has its own; a transposed view, not a copy
    head = matrix("output.weight") if "output.weight" in tensors else embeddings
    tokenizer = Tokenizer(
        tokens=list(field("tokenizer.ggml.tokens")),
        token_types=[int(t) for t in field("tokenizer.ggml.token_type")],
        merges=list(field("tokenizer.ggml.merges")),
        bos_id=int(field("tokenizer.ggml.bos_token_id")),
        eos_id=int(field("tokenizer.ggml.eos_token_id")),
        chat_template=str(field("tokenizer.chat_template")))
    model = NumpyLlama(shape, layers, embeddings, head.T,
                       vector("output_norm.weight"))
    return model, tokenizer


class NumpyLlama:
    """The forward pass over several sequences at once."""

    def __init__(self, shape: Shape, layers: list[Layer], embeddings: np.ndarray,
                 head: np.ndarray, output_norm: np.ndarray):
        self.shape = shape
        self.layers = layers
        self.embeddings = embeddings
        self.head = head  # (width, vocabulary): a transposed view, not a copy
        self.output_norm = output_norm
        self.vocabulary = head.shape[1]
        half = shape.head_dim // 2
        frequencies = shape.rope_base ** (-np.arange(half, dtype=np.float64) * 2
                                          / shape.head_dim)
        angles = np.arange(shape.context, dtype=np.float64)[:, None] * frequencies
        self._cos = np.cos(angles).astype(np.float32)
        self._sin = np.sin(angles).astype(np.float32)

    def new_cache(self, capacity: int) -> KVCache:
        return KVCache(self.shape, capacity)

    def forward(self, steps: list[Step]) -> np.ndarray:
        """Append each step's tokens to its sequence; the logits after the last token of
        each step that wants them, in order (one row each)."""
        s = self.shape
        tokens = np.array([t for step in steps for t in step.tokens], dtype=np.int64)
        positions = np.concatenate([
            np.arange(step.cache.length, step.cache.length + len(step.tokens))
            for step in steps])
        if positions.size and positions.max() >= s.context:
            raise ValueError(f"position {positions.max()} is past the model's context")
        cos, sin = self._cos[positions][:, None, :], self._sin[positions][:, None, :]
        x = self.embeddings[tokens]
        kv_width = s.kv_heads * s.head_dim
        scale = np.float32(1 / np.sqrt(s.head_dim))
        for index, layer in enumerate(self.layers):
            qkv = _matmul(self._norm(x, layer.attn_norm), layer.qkv)
            q = _rope(qkv[:, :s.width].reshape(-1, s.heads, s.head_dim), cos, sin) * scale
            k = _rope(qkv[:, s.width:s.width + kv_width].reshape(-1, s.kv_heads, s.head_dim),
                      cos, sin)
            v = qkv[:, s.width + kv_width:].reshape(-1, s.kv_heads, s.head_dim)
            attended = np.empty((len(tokens), s.width), dtype=np.float32)
            row = 0
            for step in steps:
                n = len(step.tokens)
                self._attend(index, step.cache, q[row:row + n], k[row:row + n],
                             v[row:row + n], attended[row:row + n])
                row += n
            x = x + _matmul(attended, layer.out)
            gate_up = _matmul(self._norm(x, layer.ffn_norm), layer.gate_up)
            gate, up = gate_up[:, :s.hidden], gate_up[:, s.hidden:]
            x = x + _matmul(gate / (1 + np.exp(-gate)) * up, layer.down)
        ends, row = [], 0
        for step in steps:
            row += len(step.tokens)
            step.cache.length += len(step.tokens)
            if step.logits:
                ends.append(row - 1)
        if not ends:
            return np.empty((0, self.vocabulary), dtype=np.float32)
        return _matmul(self._norm(x[ends], self.output_norm), self.head)

    def _attend(self, layer: int, cache: KVCache, q, k, v, out) -> None:
        """Attention of one sequence's new rows (``q`` already scaled), written into
        ``out``; its keys and values stored first. Prompt rows are taken in chunks
        aligned at multiples of `CHUNK` from position 0, so the sums have the same shapes
        however much of the prompt was kept from before."""
        s = self.shape
        start, n = cache.length, len(q)
        if start + n > cache.capacity:
            raise ValueError("the sequence outgrew the room set aside for it")
        keys, values = cache.keys[layer], cache.values[layer]
        keys[:, start:start + n] = k.transpose(1, 0, 2)
        values[:, start:start + n] = v.transpose(1, 0, 2)
        group = s.heads // s.kv_heads
        if n == 1:  # a decoding step: head h reads KV head h // group
            scores = q.reshape(s.kv_heads, group, s.head_dim) \
                @ keys[:, :start + 1].transpose(0, 2, 1)
            out[0] = (_softmax(scores) @ values[:, :start + 1]).reshape(s.width)
            return
        offset = 0
        while offset < n:
            first = start + offset
            size = min(n - offset, CHUNK - first % CHUNK)
            end = first + size
            # (kv heads, rows · group, head_dim): a KV head's query heads side by side
            queries = q[offset:offset + size].reshape(size, s.kv_heads, group, s.head_dim) \
                .transpose(1, 0, 2, 3).reshape(s.kv_heads, size * group, s.head_dim)
            scores = queries @ keys[:, :end].transpose(0, 2, 1)
            scores[:, :, first:] += _causal_mask(size, group)
            mixed = _softmax(scores) @ values[:, :end]
            out[offset:offset + size] = mixed.reshape(s.kv_heads, size, group, s.head_dim) \
                .transpose(1, 0, 2, 3).reshape(size, s.width)
            offset += size

    def _norm(self, x: np.ndarray, weight: np.ndarray) -> np.ndarray:
        scale = 1 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.shape.norm_eps)
        return (x * scale.astype(np.float32)) * weight


@lru_cache(maxsize=CHUNK)
def _causal_mask(size: int, group: int) -> np.ndarray:
    """What hides a chunk's later positions from its earlier rows: -inf where the key
    (column) comes after the query row's own position, rows repeated per query head."""
    later = np.arange(size)[None, :] > np.arange(size).repeat(group)[:, None]
    return np.where(later, np.float32(-np.inf), np.float32(0))


def _softmax(scores: np.ndarray) -> np.ndarray:
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights


def _rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Rotary positions on adjacent pairs (llama.cpp's ``LLAMA_ROPE_TYPE_NORM``)."""
    even, odd = x[..., 0::2], x[..., 1::2]
    rotated = np.empty_like(x)
    rotated[..., 0::2] = even * cos - odd * sin
    rotated[..., 1::2] = even * sin + odd * cos
    return rotated


def _matmul(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``x @ weight`` made in blocks of exactly `ROWS` rows (the last padded with zeros,
    dropped after), so a row's result is the same whatever shares the call."""
    rows = len(x)
    whole = -(-rows // ROWS) * ROWS
    if whole == rows and x.flags.c_contiguous:
        padded = x
    else:
        padded = np.zeros((whole, x.shape[1]), dtype=np.float32)
        padded[:rows] = x
    out = np.empty((whole, weight.shape[1]), dtype=np.float32)
    for start in range(0, whole, ROWS):
        np.matmul(padded[start:start + ROWS], weight, out=out[start:start + ROWS])
    return out[:rows]
