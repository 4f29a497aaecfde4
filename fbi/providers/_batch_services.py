"""The providers' batch services behind one interface, so the batch engine
([`fbi.runs._batch`][fbi.runs.batches_path]'s `BatchRunner`) does the same work on each:
submit a batch of requests, see its state, read its results as OpenAI-shaped output lines
(``{"custom_id", "response": {"status_code", "body"}}`` or ``{"custom_id", "error"}``),
find batches fbi submitted but never recorded, cancel one.

* `LitellmBatches`: OpenAI, Azure and Mistral through litellm's files and batches API;
* `AnthropicBatches`: Anthropic's Message Batches through the official ``anthropic`` SDK
  (``pip install fbi[anthropic]``). Its custom ids allow letters, digits, ``_`` and ``-``
  up to 64 characters, so a request's id is its log's tag and a hash of its call id,
  mapped back when read; its batches carry no metadata, so an orphan is recognised by
  those ids once it has ended (before that a resumed run cannot tell it is fbi's);
* `GeminiBatches`: the Gemini API's batch mode through the official ``google-genai`` SDK
  (``pip install fbi[gemini]``), inline requests each with its call id as its metadata
  ``key``, the batch's display name holding the log's tag; an orphan is adopted once it
  has ended, when its responses name its requests.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from fbi.errors import ConfigError, FbiWarning, ModelError
from fbi.providers._errors import describe_error
from fbi.providers._images import anthropic_blocks, gemini_parts, text_of
from fbi.providers._litellm import import_litellm

#: OpenAI's chat-completions endpoint, where batch lines of its format go.
ENDPOINT = "/v1/chat/completions"
#: Pages of 100 of the provider's batches searched for orphans (the newest come first).
ORPHAN_PAGES = 5


@dataclass(frozen=True)
class BatchState:
    """A batch as the provider reports it."""

    status: str
    """OpenAI's words: validating, in_progress, finalizing, completed, expired, failed,
    cancelling, cancelled."""
    output_file_id: str | None = None
    """Where its replies are read from."""
    error_file_id: str | None = None
    """Where its failed requests are read from."""
    completed: int | None = None
    """Requests answered so far, when the provider counts them."""
    failed: int | None = None
    """Requests failed so far, when the provider counts them."""


@dataclass(frozen=True)
class Orphan:
    """A batch with this log's tag that fbi never recorded."""

    batch_id: str
    """The provider's id."""
    input_file_id: str
    """Its input file (empty where the provider keeps none)."""
    custom_ids: list[str]
    """The call ids it holds."""
    status: str
    """Its state, in OpenAI's words."""


class BatchService(Protocol):
    """One provider's batch service (see the module docstring)."""

    name: str
    can_cancel: bool
    tag: str

    def line(self, call_id: str, body: dict[str, Any]) -> dict[str, Any]: ...

    def submit(self, lines: list[dict[str, Any]], data: bytes, metadata: dict[str, str]
               ) -> tuple[str, str, str]: ...

    def retrieve(self, batch_id: str) -> BatchState: ...

    def content(self, file_id: str) -> bytes: ...

    def orphans(self, tag: str, known: Iterable[str],
                content: Callable[[str], list[dict]]) -> list[Orphan]: ...

    def cancel(self, batch_id: str) -> None: ...

    def index(self, call_ids: Iterable[str]) -> None: ...


def _provider(model: str, what: str, action: Callable[[], Any]) -> Any:
    """One call to a batch API; its failures become a ModelError saying what."""
    try:
        return action()
    except ConfigError:
        raise
    except Exception as error:
        raise ModelError(f"{model}: the batch API failed to {what}: "
                         f"{describe_error(error)}") from error


class LitellmBatches:
    """OpenAI, Azure and Mistral, through litellm's files and batches API (an input file
    of lines, the batch's ``metadata`` holding fbi's tag)."""

    def __init__(self, name: str, provider: str, model: str, api_base: str | None,
                 api_key: str | None, line: Callable[[str, dict], dict],
                 model_on_job: bool = False, can_cancel: bool = True, can_list: bool = True):
        self.name, self.provider, self.model = name, provider, model
        self._line, self.can_cancel, self.can_list = line, can_cancel, can_list
        self.tag = ""  # set by the engine (the batches' metadata carries it)
        self._access: dict[str, Any] = {"custom_llm_provider": provider}
        if model_on_job:
            self._access["model"] = model
        if api_base:
            self._access["api_base"] = api_base
        if api_key:
            self._access["api_key"] = api_key

    def _files_access(self) -> dict[str, Any]:
        return {k: v for k, v in self._access.items() if k != "model"}

    def line(self, call_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._line(call_id, body)

    def index(self, call_ids: Iterable[str]) -> None:
        return None  # the call ids are the custom ids

    def submit(self, lines: list[dict[str, Any]], data: bytes, metadata: dict[str, str]
               ) -> tuple[str, str, str]:
        litellm = import_litellm()
        uploaded = _provider(self.model, "upload a batch file", lambda: litellm.create_file(
            file=("fbi-batch.jsonl", data), purpose="batch", **self._files_access()))
        batch = _provider(self.model, "create a batch", lambda: litellm.create_batch(
            completion_window="24h", endpoint=ENDPOINT, input_file_id=uploaded.id,
            metadata=metadata, **self._access))
        return batch.id, uploaded.id, batch.status

    def retrieve(self, batch_id: str) -> BatchState:
        litellm = import_litellm()
        state = _provider(self.model, f"retrieve batch {batch_id}",
                          lambda: litellm.retrieve_batch(batch_id=batch_id, **self._access))
        counts = getattr(state, "request_counts", None)
        return BatchState(state.status, state.output_file_id, state.error_file_id,
                          getattr(counts, "completed", None), getattr(counts, "failed", None))

    def content(self, file_id: str) -> bytes:
        litellm = import_litellm()
        reply = _provider(self.model, f"read file {file_id}", lambda: litellm.file_content(
            file_id=file_id, **self._files_access()))
        return bytes(reply.content)

    def orphans(self, tag: str, known: Iterable[str],
                content: Callable[[str], list[dict]]) -> list[Orphan]:
        if not self.can_list:
            return []
        litellm, known = import_litellm(), set(known)
        found_all: list[Orphan] = []
        after = None
        for _ in range(ORPHAN_PAGES):
            page = _provider(self.model, "list batches", lambda after=after:
                             litellm.list_batches(after=after, limit=100,
                                                  **self._files_access()))
            found = list(getattr(page, "data", None) or [])
            for batch in found:
                metadata = getattr(batch, "metadata", None) or {}
                if metadata.get("fbi_run") != tag or batch.id in known:
                    continue
                rows = content(batch.input_file_id)
                found_all.append(Orphan(batch.id, batch.input_file_id, [
                    str(row["custom_id"]) for row in rows if "custom_id" in row],
                    batch.status))
            if not getattr(page, "has_more", False) or not found:
                break
            after = found[-1].id
        return found_all

    def cancel(self, batch_id: str) -> None:
        if not self.can_cancel:
            raise ConfigError(f"{self.model}: litellm cannot cancel {self.provider} batches. "
                              f"Fix: cancel {batch_id} in the provider's console; the next "
                              "run collects what it finished")
        litellm = import_litellm()
        _provider(self.model, f"cancel batch {batch_id}",
                  lambda: litellm.cancel_batch(batch_id=batch_id, **self._access))


#: Anthropic's processing states in OpenAI's words (``ended`` is read from the results:
#: fbi collects whatever came back, and sends the rest again).
_ANTHROPIC_STATES = {"in_progress": "in_progress", "canceling": "cancelling",
                     "ended": "completed"}


class AnthropicBatches:
    """Anthropic's Message Batches, through the ``anthropic`` SDK (see the module
    docstring). Its results are read as OpenAI-shaped output lines: a succeeded request
    as a chat completion (text blocks joined, thinking blocks as reasoning), any other
    as an error line."""

    name = "Anthropic"
    can_cancel = True

    def __init__(self, model: str, model_name: str, api_base: str | None,
                 api_key: str | None, timeout_s: float):
        try:
            import anthropic
        except ImportError:
            raise ConfigError("Anthropic's batches need its SDK. Fix: pip install "
                              "fbi[anthropic]") from None
        self.model, self.model_name = model, model_name
        self._client = anthropic.Anthropic(api_key=api_key or None, base_url=api_base or None,
                                           timeout=timeout_s, max_retries=2)
        self.tag = ""  # set by the engine: the prefix of every custom id
        self._calls: dict[str, str] = {}  # custom id → call id

    def custom_id(self, call_id: str) -> str:
        """The call's id as Anthropic allows one: ``TAG-HASH``, 64 characters at most."""
        return f"{self.tag[:12]}-" + hashlib.sha256(call_id.encode()).hexdigest()[:40]

    def index(self, call_ids: Iterable[str]) -> None:
        self._calls.update((self.custom_id(c), c) for c in call_ids)

    def line(self, call_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """An OpenAI chat body as a Messages request (the system message apart; the reply
        schema is in the prompt, as Anthropic takes no ``response_format``)."""
        system = [text_of(m["content"]) for m in body["messages"] if m["role"] == "system"]
        params: dict[str, Any] = {
            "model": self.model_name, "max_tokens": body.get("max_tokens") or 1024,
            "messages": [{**m, "content": anthropic_blocks(m["content"])}
                         for m in body["messages"] if m["role"] != "system"]}
        if system:
            params["system"] = "\n\n".join(system)
        for name in ("temperature", "top_p", "top_k", "stop_sequences", "thinking",
                     "metadata"):
            if name in body:
                params[name] = body[name]
        self._calls[self.custom_id(call_id)] = call_id
        return {"custom_id": self.custom_id(call_id), "params": params}

    def submit(self, lines: list[dict[str, Any]], data: bytes, metadata: dict[str, str]
               ) -> tuple[str, str, str]:
        batch = _provider(self.model, "create a batch",
                          lambda: self._client.messages.batches.create(requests=lines))
        return batch.id, "", _ANTHROPIC_STATES.get(batch.processing_status, "in_progress")

    def retrieve(self, batch_id: str) -> BatchState:
        batch = _provider(self.model, f"retrieve batch {batch_id}",
                          lambda: self._client.messages.batches.retrieve(batch_id))
        status = _ANTHROPIC_STATES.get(batch.processing_status, "in_progress")
        counts = batch.request_counts
        return BatchState(status, batch_id if status == "completed" else None, None,
                          counts.succeeded, counts.errored + counts.canceled + counts.expired)

    def content(self, file_id: str) -> bytes:
        """The batch's results (``file_id`` is its id) as OpenAI-shaped output lines."""
        def raw() -> bytes:  # the bytes as sent: a bad line is counted, not a crash
            decoder = self._client.messages.batches.results(file_id)
            try:
                return decoder.http_response.read()
            finally:
                decoder.close()

        results = _provider(self.model, f"read the results of {file_id}", raw)
        lines = []
        for raw in bytes(results).split(b"\n"):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError:
                lines.append(raw)  # the engine counts it as a bad line
                continue
            lines.append(json.dumps(self._as_openai(row)).encode()
                         if isinstance(row, dict) else raw)
        return b"\n".join(lines) + b"\n"

    def _as_openai(self, row: dict) -> Any:
        custom_id = self._calls.get(str(row.get("custom_id")), str(row.get("custom_id")))
        result = row.get("result") if isinstance(row.get("result"), dict) else {}
        message = result.get("message") if isinstance(result.get("message"), dict) else None
        if result.get("type") != "succeeded" or message is None:
            return {"custom_id": custom_id, "error": {"message": str(result.get("type"))}}
        blocks = message.get("content") if isinstance(message.get("content"), list) else []
        if not all(isinstance(b, dict) for b in blocks):
            return ["not a reply"]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        thinking = "".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking")
        usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
        chat = {"id": message.get("id"), "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": message.get("stop_reason"),
                             "message": {"role": "assistant", "content": text,
                                         **({"reasoning_content": thinking}
                                            if thinking else {})}}],
                "usage": {"prompt_tokens": usage.get("input_tokens", 0),
                          "completion_tokens": usage.get("output_tokens", 0)}}
        return {"custom_id": custom_id, "response": {"status_code": 200, "body": chat}}

    def orphans(self, tag: str, known: Iterable[str],
                content: Callable[[str], list[dict]]) -> list[Orphan]:
        known, calls, found = set(known), set(self._calls.values()), []
        page = _provider(self.model, "list batches",
                         lambda: self._client.messages.batches.list(limit=100))
        for batch in list(page.data)[:100 * ORPHAN_PAGES]:
            if batch.id in known or batch.processing_status != "ended":
                continue  # an unended batch shows no custom ids: it cannot be told as fbi's
            rows = content(batch.id)
            ids = [str(r.get("custom_id")) for r in rows if isinstance(r, dict)]
            # (an id this log made is read back as its call id; any other stays raw)
            if ids and all(i in calls for i in ids):
                found.append(Orphan(batch.id, "", ids, "completed"))
        return found

    def cancel(self, batch_id: str) -> None:
        _provider(self.model, f"cancel batch {batch_id}",
                  lambda: self._client.messages.batches.cancel(batch_id))


#: The Gemini API's batch states in OpenAI's words.
_GEMINI_STATES = {"JOB_STATE_PENDING": "validating", "JOB_STATE_RUNNING": "in_progress",
                  "JOB_STATE_SUCCEEDED": "completed", "JOB_STATE_FAILED": "failed",
                  "JOB_STATE_CANCELLED": "cancelled", "JOB_STATE_EXPIRED": "expired"}


def _state(value: Any) -> str:
    return str(getattr(value, "value", value) or "")


class GeminiBatches:
    """The Gemini API's batch mode, through the ``google-genai`` SDK (see the module
    docstring). Its inline responses are read as OpenAI-shaped output lines: the text
    parts joined (thought parts as reasoning), the usage counts as tokens."""

    name = "Gemini"
    can_cancel = True

    def __init__(self, model: str, model_name: str, api_base: str | None,
                 api_key: str | None, timeout_s: float):
        try:
            from google import genai
            from google.genai import types
        except ImportError:
            raise ConfigError("Gemini's batches need its SDK. Fix: pip install "
                              "fbi[gemini]") from None
        self.model, self.model_name = model, model_name
        options = types.HttpOptions(base_url=api_base, timeout=int(timeout_s * 1000)) \
            if api_base else types.HttpOptions(timeout=int(timeout_s * 1000))
        self._client = genai.Client(api_key=api_key or "no-key", http_options=options)
        self.tag = ""
        self._jobs: dict[str, Any] = {}  # batch id → the job last read

    def index(self, call_ids: Iterable[str]) -> None:
        return None  # the call ids are the keys

    def line(self, call_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """An OpenAI chat body as an inline request (the system message as the system
        instruction; the reply schema is in the prompt)."""
        system = [text_of(m["content"]) for m in body["messages"] if m["role"] == "system"]
        config: dict[str, Any] = {}
        if system:
            config["system_instruction"] = "\n\n".join(system)
        for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p"),
                             ("max_tokens", "max_output_tokens"), ("seed", "seed")):
            if body.get(ours) is not None:
                config[theirs] = body[ours]
        contents = [{"role": "model" if m["role"] == "assistant" else "user",
                     "parts": gemini_parts(m["content"])}
                    for m in body["messages"] if m["role"] != "system"]
        return {"contents": contents, "config": config, "metadata": {"key": call_id}}

    def submit(self, lines: list[dict[str, Any]], data: bytes, metadata: dict[str, str]
               ) -> tuple[str, str, str]:
        job = _provider(self.model, "create a batch", lambda: self._client.batches.create(
            model=self.model_name, src=lines,
            config={"display_name": f"fbi-{metadata['fbi_run']}"}))
        return job.name, "", _GEMINI_STATES.get(_state(job.state), "validating")

    def retrieve(self, batch_id: str) -> BatchState:
        from pydantic import ValidationError

        def get() -> Any:
            try:
                return self._client.batches.get(name=batch_id)
            except ValidationError as error:  # the SDK reads the whole job at once
                return error

        job = _provider(self.model, f"retrieve batch {batch_id}", get)
        if isinstance(job, ValidationError):
            # results no reply can be read from (a count that is no number): the batch
            # ended, none of its lines is trusted, and its requests go back to pending
            self._jobs[batch_id] = None
            problem = str(job).splitlines()
            warnings.warn(f"batch {batch_id}: the provider's results do not read as "
                          f"replies ({problem[1] if len(problem) > 1 else problem[0]}: "
                          f"{problem[2].strip() if len(problem) > 2 else ''}); its "
                          "requests go back to pending", FbiWarning, stacklevel=2)
            return BatchState("completed", batch_id)
        self._jobs[batch_id] = job
        status = _GEMINI_STATES.get(_state(job.state), "in_progress")
        done = status in ("completed", "failed", "cancelled", "expired")
        return BatchState(status, batch_id if done else None)

    def content(self, file_id: str) -> bytes:
        """The batch's inline responses (``file_id`` is its name) as output lines."""
        if file_id in self._jobs and self._jobs[file_id] is None:
            return b""  # unreadable results (see retrieve)
        job = self._jobs.get(file_id) or (self.retrieve(file_id) and self._jobs[file_id])
        if job is None:
            return b""
        responses = list(getattr(getattr(job, "dest", None), "inlined_responses", None)
                         or [])
        return b"".join(json.dumps(self._as_openai(r)).encode() + b"\n"
                        for r in responses)

    @staticmethod
    def _as_openai(item: Any) -> Any:
        key = (getattr(item, "metadata", None) or {}).get("key")
        if key is None:
            return ["a response without its request's key"]
        response = getattr(item, "response", None)
        if getattr(item, "error", None) is not None or response is None:
            return {"custom_id": key, "error": {"message": str(getattr(item, "error", ""))}}
        candidates = response.candidates or []
        parts = (candidates[0].content.parts or []) if candidates and \
            candidates[0].content else []
        text = "".join(p.text or "" for p in parts if not p.thought)
        thought = "".join(p.text or "" for p in parts if p.thought)
        usage = response.usage_metadata
        finish = _state(candidates[0].finish_reason).lower() if candidates else None
        chat = {"object": "chat.completion", "model": response.model_version,
                "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": text,
                                         **({"reasoning_content": thought}
                                            if thought else {})}}] if candidates else [],
                "usage": {"prompt_tokens": getattr(usage, "prompt_token_count", 0) or 0,
                          "completion_tokens": (getattr(usage, "candidates_token_count", 0)
                                                or 0) + (getattr(
                                                    usage, "thoughts_token_count", 0) or 0),
                          "completion_tokens_details": {"reasoning_tokens": getattr(
                              usage, "thoughts_token_count", 0) or 0}}}
        return {"custom_id": key, "response": {"status_code": 200, "body": chat}}

    def orphans(self, tag: str, known: Iterable[str],
                content: Callable[[str], list[dict]]) -> list[Orphan]:
        from pydantic import ValidationError

        known, found = set(known), []

        def listed() -> list[Any]:
            try:
                return list(self._client.batches.list(config={"page_size": 100}))
            except ValidationError as error:  # a listed batch's results do not read
                warnings.warn(f"the provider's list of batches does not read "
                              f"({str(error).splitlines()[1]}): a batch fbi started and "
                              "did not record, if there is one, is not adopted this time",
                              FbiWarning, stacklevel=2)
                return []

        jobs = _provider(self.model, "list batches", listed)
        for job in jobs[:100 * ORPHAN_PAGES]:
            status = _GEMINI_STATES.get(_state(job.state), "in_progress")
            if job.display_name != f"fbi-{tag}" or job.name in known or \
                    status != "completed":
                continue  # an unended batch shows no keys: its requests are not known yet
            self._jobs[job.name] = job
            ids = [str(r.get("custom_id")) for r in content(job.name) if isinstance(r, dict)]
            if ids:
                found.append(Orphan(job.name, "", ids, status))
        return found

    def cancel(self, batch_id: str) -> None:
        _provider(self.model, f"cancel batch {batch_id}",
                  lambda: self._client.batches.cancel(name=batch_id))
