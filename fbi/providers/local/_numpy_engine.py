"""The embedded judge's NumPy runtime: calls decoded together, one thread running the
model (issue 51: an install with nothing to compile).

Calls arrive from the runner's threads and wait; one worker thread takes every waiting
call into the next forward pass — a new call's whole prompt and one token for each call
already decoding, stacked into one matrix product per weight (continuous batching).
Stacking is safe for the replies because a row's products do not depend on the rows
beside it (`fbi.providers.local._numpy_model`), so a call's reply is the same alone or in any
company, and the same whether its prompt opening was kept from an earlier call.

Choosing a token follows fbi's llama.cpp loop (`fbi.providers.local._engine`): the most likely
token (or a draw at the temperature), asked of the JSON grammar; only when the grammar
refuses it are the others asked, most likely first (for greedy decoding the same token
as filtering first). Log-probabilities are the model's own, before the grammar.
"""

from __future__ import annotations

import codecs
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import fbi.providers.local._json_grammar as grammar
from fbi.providers.local._generation import (
    Generation,
    TokenLogprobs,
    check_fits,
    draw,
    token_logprobs,
)
from fbi.providers.local._numpy_model import CHUNK, KVCache, Step, load

KEPT_CHUNKS = 64  # prompt chunks whose keys and values are kept for later calls (~94 MB)


@dataclass
class _Call:
    prompt: list[int]
    max_tokens: int
    temperature: float
    rng: np.random.Generator
    state: grammar.State | None
    top_logprobs: int
    should_stop: Callable[[], bool]
    cache: KVCache | None = None
    kept: int = 0
    tokens: list[int] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)
    logprobs: list[TokenLogprobs] = field(default_factory=list)
    decoder: codecs.IncrementalDecoder = field(
        default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace"))
    finish_reason: str = "length"
    done: threading.Event = field(default_factory=threading.Event)
    result: Generation | None = None
    error: BaseException | None = None


class NumpyEngine:
    """One loaded model; `generate` may be called from many threads at once."""

    def __init__(self, model_path: str, context_tokens: int, threads: int):
        # OpenBLAS's threads wait for each other at the end of every product, as
        # llama.cpp's do at every token: a thread whose core other work holds stalls the
        # rest, so the BLAS gets the cores other work leaves free (issue 26's rule,
        # `fbi.providers.local._provider.llama_threads`). The limit is the process's: NumPy's BLAS
        # serves nothing else heavy while the judge runs.
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads, user_api="blas")
        self.model, self.tokenizer = load(model_path)
        self._n_ctx = min(context_tokens, self.model.shape.context)
        self._pieces = self.tokenizer.pieces
        self._waiting: list[_Call] = []
        self._wake = threading.Condition()
        self._kept: OrderedDict[bytes, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        worker = threading.Thread(target=self._work, name="fbi-embedded", daemon=True)
        worker.start()

    # -- one call -----------------------------------------------------------------

    def generate(self, messages: list[dict[str, str]], *, max_tokens: int,
                 temperature: float = 0.0, seed: int = 0, schema: dict | None = None,
                 top_logprobs: int = 0, should_stop: Callable[[], bool] = lambda: False
                 ) -> Generation:
        """The reply to ``messages``. ``should_stop`` is asked before every token; when
        it says yes, `InterruptedError` is raised."""
        prompt = self.prompt_tokens(messages)
        check_fits(len(prompt), max_tokens, self._n_ctx)
        state = grammar.start(schema) if schema is not None else None
        call = _Call(prompt, max_tokens, temperature, np.random.default_rng(seed), state,
                     top_logprobs, should_stop)
        if should_stop():
            raise InterruptedError("interrupted before the embedded model started")
        with self._wake:
            self._waiting.append(call)
            self._wake.notify()
        call.done.wait()
        if call.error is not None:
            raise call.error
        assert call.result is not None
        return call.result

    def prompt_tokens(self, messages: list[dict[str, str]]) -> list[int]:
        """The tokens the model reads for ``messages``, chat template applied."""
        return self.tokenizer.chat_prompt(messages)

    # -- the worker ------------------------------------------------------------------

    def _work(self) -> None:
        active: list[_Call] = []
        while True:
            with self._wake:
                while not self._waiting and not active:
                    self._wake.wait()
                arrived, self._waiting = self._waiting, []
            try:
                for call in arrived:
                    self._admit(call)
                active += arrived
                active = self._step(active)
            except Exception as error:  # a failed pass fails its calls, not the worker
                for call in {id(c): c for c in active + arrived}.values():
                    if not call.done.is_set():
                        self._finish(call, error=error)
                active = []

    def _admit(self, call: _Call) -> None:
        """Room for the call's tokens, and the whole prompt chunks an earlier call left."""
        call.cache = self.model.new_cache(len(call.prompt) + call.max_tokens)
        whole = (len(call.prompt) - 1) // CHUNK  # at least one token is always fed
        for chunk in range(whole):
            end = (chunk + 1) * CHUNK
            key = _prefix_key(call.prompt[:end])
            kept = self._kept.get(key)
            if kept is None:
                break
            self._kept.move_to_end(key)
            keys, values = kept
            call.cache.keys[:, :, end - CHUNK:end] = keys
            call.cache.values[:, :, end - CHUNK:end] = values
            call.kept = end
        call.cache.length = call.kept

    def _step(self, active: list[_Call]) -> list[_Call]:
        still = []
        for call in active:
            if call.should_stop():
                self._finish(call, error=InterruptedError(
                    "interrupted while the embedded model was generating"))
            else:
                still.append(call)
        if not still:
            return []
        steps = []
        for call in still:
            assert call.cache is not None
            fresh = call.cache.length < len(call.prompt)
            tokens = call.prompt[call.cache.length:] if fresh else call.tokens[-1:]
            steps.append(Step(call.cache, tokens, logits=True))
        logits = self.model.forward(steps)
        going = []
        for call, row in zip(still, logits, strict=True):
            if len(call.tokens) == 0:
                self._keep_prompt(call)
            try:
                if self._next_token(call, row):
                    going.append(call)
            except Exception as error:  # this call's own failure, not its neighbours'
                self._finish(call, error=error)
        return going

    def _keep_prompt(self, call: _Call) -> None:
        cache = call.cache
        assert cache is not None
        for end in range(call.kept + CHUNK, len(call.prompt) + 1, CHUNK):
            key = _prefix_key(call.prompt[:end])
            if key not in self._kept:
                self._kept[key] = (cache.keys[:, :, end - CHUNK:end].copy(),
                                   cache.values[:, :, end - CHUNK:end].copy())
            self._kept.move_to_end(key)
        while len(self._kept) > KEPT_CHUNKS:
            self._kept.popitem(last=False)

    def _next_token(self, call: _Call, logits: np.ndarray) -> bool:
        """Choose and record the call's next token; False when the call is over."""
        token = self._pick(call, logits)
        if token in self.tokenizer.end_ids:
            call.finish_reason = "stop"
            self._finish(call)
            return False
        piece = call.decoder.decode(self._pieces[token])
        call.pieces.append(piece)
        call.tokens.append(token)
        if call.top_logprobs:
            call.logprobs.append(token_logprobs(
                logits, token, piece, call.top_logprobs,
                lambda t: self._pieces[t].decode("utf-8", errors="replace")))
        if len(call.tokens) >= call.max_tokens:
            self._finish(call)
            return False
        return True

    def _finish(self, call: _Call, error: BaseException | None = None) -> None:
        if error is None:
            call.pieces.append(call.decoder.decode(b"", final=True))
            call.result = Generation("".join(call.pieces), len(call.prompt),
                                     len(call.tokens), call.finish_reason, call.logprobs)
        call.error = error
        call.cache = None  # its memory goes now, not when the caller lets go
        call.done.set()

    # -- choosing a token ---------------------------------------------------------------

    def _pick(self, call: _Call, logits: np.ndarray) -> int:
        token = draw(logits, call.temperature, call.rng)
        if call.state is None:
            return token
        after = self._advance(call.state, token)
        if after is None:
            token, after = self._allowed(call, logits)
        call.state = after
        return token

    def _advance(self, state: grammar.State, token: int) -> grammar.State | None:
        """The grammar's state after ``token``; None when refused (an end-of-generation
        token is allowed only where the reply may end, and a token with no text never)."""
        if token in self.tokenizer.end_ids:
            return state if state.complete() else None
        piece = self._pieces[token]
        return grammar.feed(state, piece) if piece else None

    def _allowed(self, call: _Call, logits: np.ndarray) -> tuple[int, grammar.State]:
        """A token the grammar allows: for greedy decoding the most likely; otherwise a
        draw from the distribution restricted to the allowed tokens."""
        order = np.argsort(-logits, kind="stable")
        assert call.state is not None
        if call.temperature <= 0:
            for token in order:
                after = self._advance(call.state, int(token))
                if after is not None:
                    return int(token), after
        else:
            masked = np.full_like(logits, -np.inf)
            states = {}
            for token in order:
                after = self._advance(call.state, int(token))
                if after is not None:
                    masked[token], states[int(token)] = logits[token], after
            if states:
                token = draw(masked, call.temperature, call.rng)
                return token, states[token]
        raise ValueError("the JSON schema allows no token here (the reply cannot go on)")


def _prefix_key(tokens: list[int]) -> bytes:
    return hashlib.blake2b(np.asarray(tokens, dtype=np.int32).tobytes(),
                           digest_size=16).digest()
