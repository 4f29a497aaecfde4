"""A llama.cpp decoding loop of fbi's own, for the embedded judge.

llama-cpp-python's ``create_chat_completion`` checks the JSON grammar against all 49,152
vocabulary entries at every token (measured: about 10 ms a token on 2 cores, more than
the model's own forward pass). This loop picks the token first and asks the grammar only
about that one; only when the grammar refuses it are all candidates filtered. A refused
token is resampled from the grammar-masked distribution, so the reply follows the same
distribution as filtering first (for greedy decoding: the same token).

The loop also reads the log-probabilities straight from the logits, so ``logprobs`` costs
no second pass and needs no ``logits_all`` buffer.

One sequence at a time, on purpose: the 135M model is compute-bound on a CPU, so
decoding several sequences in one llama.cpp batch gains little (on 2 cores: decoding
~100 → 150 tokens/s at 8 sequences, prompt evaluation nothing, whole calls 31.2 → 30.4 s
for 16), and it makes a reply depend on which other calls happened to share its batch
(11 of 16 replies changed). See benchmarks/RESULTS.md.
"""

from __future__ import annotations

import codecs
import ctypes
import json
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from fbi.providers.local._generation import (
    Generation,
    TokenLogprobs,
    check_fits,
    draw,
    token_logprobs,
)

BATCH_TOKENS = 512  # prompt tokens fed to llama.cpp at a time


#: What the loop uses of llama-cpp-python beyond its public API: llama.cpp's functions and
#: types, and two modules' helpers. A version without one of them gets the fallback
#: (`fbi.providers.local._fallback`).
LOW_LEVEL_NAMES = (
    "llama_batch_init", "llama_decode", "llama_get_logits_ith", "llama_get_memory",
    "llama_memory_seq_rm", "llama_model_get_vocab", "llama_sampler_accept",
    "llama_sampler_apply", "llama_sampler_free", "llama_sampler_init_grammar",
    "llama_token_data", "llama_token_data_array", "llama_token_to_piece",
    "llama_vocab_is_eog", "llama_vocab_n_tokens",
    "llama_chat_format.Jinja2ChatFormatter", "llama_grammar.json_schema_to_gbnf",
)


def missing_low_level_names() -> list[str]:
    """The names of `LOW_LEVEL_NAMES` this llama-cpp-python lacks."""
    import importlib

    import llama_cpp

    missing = []
    for name in LOW_LEVEL_NAMES:
        module, _, attribute = name.rpartition(".")
        try:
            owner = importlib.import_module(f"llama_cpp.{module}") if module else llama_cpp
        except ImportError:
            owner = None
        if owner is None or not hasattr(owner, attribute):
            missing.append(name)
    return missing


_LOADING = threading.Lock()


def load_llama(model_path: str, context_tokens: int, threads: int):
    """llama-cpp-python's ``Llama`` over the GGUF file, its weights in plain CPU buffers.

    llama.cpp otherwise moves weights into "extra" buffer types it repacks for the CPU.
    On Intel CPUs with AMX (Sapphire Rapids and later) a native build picks the AMX one,
    whose kernels crash the process on SmolLM2's Q4_1 weights under some hypervisors
    (a segmentation fault in ``ggml_backend_amx_mul_mat``, seen on a 2-core VM with
    amx_tile; a build without it, or this switch, runs). fbi's Q4_1 model gains nothing
    from the other repacked layouts (they are for Q4_0, IQ4_NL and Q4_K), so it loads
    without them. ``Llama`` takes no such option: its default-parameters function is
    swapped for the duration of the load, under a lock."""
    import llama_cpp.llama_cpp as low_level
    from llama_cpp import Llama

    defaults = low_level.llama_model_default_params

    def without_extra_buffers():
        params = defaults()
        if hasattr(params, "use_extra_bufts"):  # llama.cpp since mid-2025
            params.use_extra_bufts = False
        return params

    with _LOADING:
        low_level.llama_model_default_params = without_extra_buffers
        try:
            return Llama(model_path=model_path, n_ctx=context_tokens, n_batch=BATCH_TOKENS,
                         verbose=False, seed=0, n_threads=threads, n_threads_batch=threads)
        finally:
            low_level.llama_model_default_params = defaults


class LoopUnavailable(RuntimeError):
    """A private field the loop reads is not where this llama-cpp-python keeps it."""


class LlamaEngine:
    """One loaded GGUF model and a context to decode in; not thread-safe by itself:
    `generate` holds a lock for the whole call."""

    def __init__(self, model_path: str, context_tokens: int, threads: int):
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._llama_cpp = llama_cpp
        self._llama = load_llama(model_path, context_tokens, threads)
        try:  # private fields of llama-cpp-python, as of 0.3.x
            self._ctx = self._llama._ctx.ctx
            model = self._llama._model.model
            eos_text = self._llama._model.token_get_text(self._llama.token_eos())
            bos_text = self._llama._model.token_get_text(self._llama.token_bos())
        except AttributeError as error:
            raise LoopUnavailable(f"Llama.{error.name}") from None
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self._n_ctx = context_tokens
        self._batch = llama_cpp.llama_batch_init(BATCH_TOKENS, 0, 1)
        self._formatter = Jinja2ChatFormatter(
            template=self._llama.metadata["tokenizer.chat_template"], eos_token=eos_text,
            bos_token=bos_text, stop_token_ids=[self._llama.token_eos()])
        # one candidate array for asking the grammar about the chosen token, one for all
        self._one = (llama_cpp.llama_token_data * 1)()
        self._all = (llama_cpp.llama_token_data * self._n_vocab)()
        self._all_view = np.ctypeslib.as_array(self._all)
        self._ids = np.arange(self._n_vocab, dtype=np.int32)
        self._grammars: dict[str, str] = {}  # schema JSON → GBNF
        self._lock = threading.Lock()
        self._in_memory: list[int] = []  # the tokens whose keys and values the context holds

    # -- one call -----------------------------------------------------------------

    def generate(self, messages: list[dict[str, str]], *, max_tokens: int,
                 temperature: float = 0.0, seed: int = 0, schema: dict | None = None,
                 top_logprobs: int = 0, should_stop: Callable[[], bool] = lambda: False
                 ) -> Generation:
        """The reply to ``messages``. ``should_stop`` is asked before every token; when
        it says yes, `InterruptedError` is raised."""
        prompt = self.prompt_tokens(messages)
        check_fits(len(prompt), max_tokens, self._n_ctx)
        rng = np.random.default_rng(seed)
        with self._lock:
            if should_stop():
                raise InterruptedError("interrupted before the embedded model started")
            grammar = self._grammar_sampler(schema)
            try:
                return self._decode(prompt, max_tokens, temperature, rng, grammar,
                                    top_logprobs, should_stop)
            finally:
                if grammar is not None:
                    self._llama_cpp.llama_sampler_free(grammar)

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        """The tokens the model reads for ``messages``, chat template applied."""
        formatted = self._formatter(messages=messages)
        return self._llama.tokenize(formatted.prompt.encode("utf-8"),
                                    add_bos=not formatted.added_special, special=True)

    def _decode(self, prompt: list[int], max_tokens: int, temperature: float, rng,
                grammar, top_logprobs: int, should_stop) -> Generation:
        cpp = self._llama_cpp
        # The prompt's opening tokens that are already in the context (the judge
        # instructions every call shares) are kept, the rest is dropped and fed anew.
        # A token's keys and values depend only on the tokens before it, so the reply is
        # the one a fresh context gives (checked: 24 of 24 replies identical) — at least
        # one token is always fed, for the logits to start from.
        kept = 0
        while kept < min(len(prompt) - 1, len(self._in_memory)) and \
                prompt[kept] == self._in_memory[kept]:
            kept += 1
        memory = cpp.llama_get_memory(self._ctx)
        cpp.llama_memory_seq_rm(memory, 0, kept, -1)
        self._in_memory = []  # unknown until the prompt is in
        for start in range(kept, len(prompt), BATCH_TOKENS):
            self._feed(prompt[start:start + BATCH_TOKENS], start,
                       last=start + BATCH_TOKENS >= len(prompt))
        self._in_memory = list(prompt)
        pieces: list[str] = []
        logprobs: list[TokenLogprobs] = []
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        finish_reason, generated = "length", 0
        for position in range(len(prompt), len(prompt) + max_tokens):
            if should_stop():
                raise InterruptedError("interrupted while the embedded model was generating")
            logits = np.ctypeslib.as_array(cpp.llama_get_logits_ith(self._ctx, -1),
                                           shape=(self._n_vocab,))
            token = self._pick(logits, temperature, rng, grammar)
            if cpp.llama_vocab_is_eog(self._vocab, token):
                finish_reason = "stop"
                break
            # Text pieces that join to exactly the reply, even when a character's bytes
            # span two tokens (the first token then gets "").
            piece = decoder.decode(self._piece(token))
            pieces.append(piece)
            generated += 1
            if top_logprobs:
                logprobs.append(token_logprobs(
                    logits, token, piece, top_logprobs,
                    lambda t: self._piece(t).decode("utf-8", errors="replace")))
            self._feed([token], position, last=True)
            self._in_memory.append(token)
        pieces.append(decoder.decode(b"", final=True))
        return Generation("".join(pieces), len(prompt), generated, finish_reason, logprobs)

    def _feed(self, tokens: list[int], start: int, last: bool) -> None:
        batch = self._batch
        batch.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, start + i, 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = last and i == len(tokens) - 1
        code = self._llama_cpp.llama_decode(self._ctx, batch)
        if code != 0:
            raise RuntimeError(f"llama_decode failed with code {code}")

    # -- choosing a token ---------------------------------------------------------

    def _pick(self, logits: np.ndarray, temperature: float, rng, grammar) -> int:
        token = draw(logits, temperature, rng)
        if grammar is not None and not self._allowed(grammar, token):
            token = draw(self._masked(grammar, logits), temperature, rng)
        if grammar is not None:
            self._llama_cpp.llama_sampler_accept(grammar, token)
        return token

    def _allowed(self, grammar, token: int) -> bool:
        cpp = self._llama_cpp
        self._one[0].id, self._one[0].logit, self._one[0].p = token, 0.0, 0.0
        candidates = cpp.llama_token_data_array(data=self._one, size=1, selected=-1,
                                                sorted=False)
        cpp.llama_sampler_apply(grammar, ctypes.byref(candidates))
        return bool(np.isfinite(self._one[0].logit))

    def _masked(self, grammar, logits: np.ndarray) -> np.ndarray:
        """``logits`` with every token the grammar refuses at -inf."""
        cpp = self._llama_cpp
        view = self._all_view
        view["id"], view["logit"], view["p"] = self._ids, logits, 0.0
        candidates = cpp.llama_token_data_array(data=self._all, size=self._n_vocab,
                                                selected=-1, sorted=False)
        cpp.llama_sampler_apply(grammar, ctypes.byref(candidates))
        masked = np.full(self._n_vocab, -np.inf, dtype=np.float32)
        kept = view[:candidates.size]
        masked[kept["id"]] = kept["logit"]
        return masked

    def _piece(self, token: int) -> bytes:
        buffer = ctypes.create_string_buffer(64)
        size = self._llama_cpp.llama_token_to_piece(self._vocab, token, buffer, 64, 0, False)
        return buffer.raw[:max(size, 0)]

    def _grammar_sampler(self, schema: dict | None) -> Any:
        if schema is None:
            return None
        from llama_cpp.llama_grammar import json_schema_to_gbnf

        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = json_schema_to_gbnf(key)
        sampler = self._llama_cpp.llama_sampler_init_grammar(
            self._vocab, self._grammars[key].encode(), b"root")
        if not sampler:
            raise ValueError("llama.cpp could not build a grammar from the JSON schema")
        return sampler
