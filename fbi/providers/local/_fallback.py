"""The embedded judge without fbi's decoding loop: llama-cpp-python's own
``create_chat_completion``, with the same JSON grammar (issue 25).

The loop in `fbi.providers.local._engine` calls llama.cpp's low-level functions and two
private fields of llama-cpp-python, which a new version may rename. When one is missing,
the judge still works through the public API — the same replies for greedy decoding, at
the speed the loop was written to beat, and without token log-probabilities (asking the
public API for them means a logits buffer of the whole context, ~400 MB) — and says so
once ([`fbi.providers.local._provider.load_engine`][fbi.providers.local.load_engine]).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from fbi.errors import ConfigError
from fbi.providers.local._engine import load_llama
from fbi.providers.local._generation import Generation


class ChatCompletionEngine:
    """One loaded GGUF model answering through ``create_chat_completion``; a fresh
    context per call, one call at a time."""

    def __init__(self, model_path: str, context_tokens: int, threads: int):
        self._llama = load_llama(model_path, context_tokens, threads)
        self._lock = threading.Lock()

    def generate(self, messages: list[dict[str, str]], *, max_tokens: int,
                 temperature: float = 0.0, seed: int = 0, schema: dict | None = None,
                 top_logprobs: int = 0, should_stop: Callable[[], bool] = lambda: False
                 ) -> Generation:
        if top_logprobs:
            raise ConfigError("--logprobs needs the embedded judge's own decoding loop, which "
                              "this llama-cpp-python cannot run. Fix: pip install "
                              "'llama-cpp-python>=0.3.36,<0.4', or leave out --logprobs")
        with self._lock:
            if should_stop():
                raise InterruptedError("interrupted before the embedded model started")
            self._llama.reset()  # a fresh context, as every call of the loop sees it
            self._llama.set_seed(seed)
            reply = self._llama.create_chat_completion(
                messages=messages, max_tokens=max_tokens, temperature=temperature,
                response_format=None if schema is None else {"type": "json_object",
                                                              "schema": schema})
        choice, usage = reply["choices"][0], reply["usage"]
        return Generation(choice["message"]["content"] or "", usage["prompt_tokens"],
                          usage["completion_tokens"], choice["finish_reason"] or "stop")
