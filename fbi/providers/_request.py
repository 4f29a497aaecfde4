"""A model request ([`ModelRequest`][fbi.providers.ModelRequest]: everything that decides
a reply) and its canonical JSON texts, made fast: its cache key's and its prompt
hash's. Their bytes are fixed forever (every cache fbi ever filled is keyed by them), so
they are built to equal ``json.dumps`` exactly, as ``tests/test_judge_runner.py`` checks
on random requests; only the work is saved: the part of a key that is the same for every
call of a strategy is dumped once, and messages are escaped string by string.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from fbi.providers._images import IMAGE_MARK, RequestImage, content_parts
from fbi.providers._registry import environment_endpoint

_MESSAGES_MARK = "\x00messages\x00"


def messages_json(messages: tuple[tuple[str, str], ...], ascii_only: bool) -> str:
    """``json.dumps(messages)`` (``ascii_only``, with its ", " separator) or the compact,
    unescaped form of the cache key, made by escaping each string directly: the same
    text, without building an encoder per call."""
    from json.encoder import encode_basestring, encode_basestring_ascii

    escape, comma = (encode_basestring_ascii, ", ") if ascii_only else (encode_basestring, ",")
    return "[" + comma.join(f"[{escape(role)}{comma}{escape(content)}]"
                            for role, content in messages) + "]"


#: The cache key's canonical JSON around the messages, per request shape (model,
#: sampling, schema, ...): (the schema object, before, after). The schema is held so its
#: id is never reused while its entry lives; bounded, as repairs make schemas per call.
_KEY_FRAMES: dict[tuple, tuple[object, str, str]] = {}


def _key_fields(request: Any, api_base: str | None, messages: Any) -> dict[str, Any]:
    """The fields of a request's cache key (``messages`` as given: the mark of the
    fast path, or the messages themselves)."""
    return {
        "model": request.model, "messages": messages,
        "temperature": request.temperature, "max_tokens": request.max_tokens,
        "response_schema": request.response_schema, "api_base": api_base,
        **({"top_logprobs": request.top_logprobs} if request.top_logprobs else {}),
        # only when set, so the keys of requests without them stay as they were
        **({"seed": request.seed} if request.seed is not None else {}),
        **({"model_args": request.model_args} if request.model_args else {}),
        **({"sample": request.sample} if request.sample else {}),
        **({"images": [image.sha256 for image in request.images]} if request.images
           else {}),
    }


def key_frame(request: Any) -> tuple[str, str]:
    """The cache key's canonical JSON before and after the messages of ``request`` (a
    [`ModelRequest`][fbi.providers.ModelRequest] without images)."""
    # without an api_base, the server the environment names (OPENAI_BASE_URL): a reply
    # a test server made is never the provider's
    api_base = request.api_base or environment_endpoint(request.model)
    shape = (request.model, request.temperature, request.max_tokens,
             id(request.response_schema), api_base, request.top_logprobs,
             request.seed, repr(request.model_args), request.sample)
    kept = _KEY_FRAMES.get(shape)
    if kept is None or kept[0] is not request.response_schema:
        canonical = json.dumps(_key_fields(request, api_base, _MESSAGES_MARK),
                               sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        head, _, tail = canonical.partition(json.dumps(_MESSAGES_MARK, ensure_ascii=False))
        if len(_KEY_FRAMES) >= 512:
            _KEY_FRAMES.clear()
        kept = _KEY_FRAMES[shape] = (request.response_schema, head, tail)
    return kept[1], kept[2]


@dataclass(frozen=True)
class ModelRequest:
    """Everything that decides a model's reply. API keys are never part of it."""

    model: str
    """The model string (``openai/gpt-4o``, ``local/smollm2-135m``)."""
    messages: tuple[tuple[str, str], ...]
    """(role, content) pairs."""
    temperature: float = 0.0
    """Sampling temperature (0: greedy, the paper's setting)."""
    max_tokens: int | None = None
    """The reply's token cap (None: the provider's default)."""
    response_schema: dict[str, Any] | None = None
    """JSON schema for structured output."""
    api_base: str | None = None
    """The server's URL, for self-hosted servers (a pool's first server)."""
    top_logprobs: int = 0
    """Ask for the top-k token log-probabilities (0: none)."""
    seed: int | None = None
    """The provider's sampling seed, when given."""
    model_args: tuple[tuple[str, Any], ...] = ()
    """Further provider parameters (--model-arg top_p=0.9), sorted by name."""
    sample: int = 0
    """The k-th asking of the same request (--samples): its own reply."""
    images: tuple[RequestImage, ...] = ()
    """The images of the messages' ``IMAGE_MARK`` characters, in order
    (`fbi.providers._images`); their hashes belong to the cache key and prompt hash."""

    def __post_init__(self) -> None:
        marks = sum(text.count(IMAGE_MARK) for _, text in self.messages) \
            if self.images or any(IMAGE_MARK in text for _, text in self.messages) else 0
        if marks != len(self.images):
            raise ValueError(f"a request's messages hold {marks} image marks for "
                             f"{len(self.images)} images")

    def cache_key(self) -> str:
        """sha256 of the canonical JSON of the fields that change the output.

        Time-outs and retry settings are left out: they change whether a reply arrives,
        not what it says. The api_base stays in: another server may serve another model.
        The text hashed is ``json.dumps`` of those fields (sorted keys, compact, not
        ASCII-escaped), built from two parts: everything but the messages, the same for
        every call of a strategy and so dumped once, and the messages, escaped string by
        string (a cached re-run makes 50,400 keys: `_messages_json`).
        """
        if self.images:  # (rare: the slow path, json.dumps itself)
            api_base = self.api_base or environment_endpoint(self.model)
            canonical = json.dumps(_key_fields(self, api_base, self.messages),
                                   sort_keys=True, ensure_ascii=False,
                                   separators=(",", ":"))
        else:
            head, tail = key_frame(self)
            canonical = head + messages_json(self.messages, ascii_only=False) + tail
        return hashlib.sha256(canonical.encode()).hexdigest()

    def prompt_hash(self) -> str:
        """sha256 of the rendered messages (as ``json.dumps(messages)`` writes them; with
        images, followed by ``json.dumps`` of their hashes): the one prompt hash every
        record carries."""
        text = messages_json(self.messages, ascii_only=True)
        if self.images:
            text += json.dumps([image.sha256 for image in self.images])
        return hashlib.sha256(text.encode()).hexdigest()

    def message_dicts(self) -> list[dict[str, Any]]:
        """The messages in OpenAI's chat format (with images: content parts)."""
        if self.images:
            return content_parts(self.messages, self.images)
        return [{"role": role, "content": content} for role, content in self.messages]
