"""Reward models as judges: a model that returns one scalar for a conversation whose
last turn is the answer under test (the sequence-classifier reward models RewardBench,
JudgeBench, RM-Bench and PPE rank beside generative judges).

Two transports, chosen by the model string's prefix like every provider
([`fbi.providers`][fbi.providers]), so a reward model's calls are cached, retried,
logged and resumed as chat calls are; the reply's text is the reward:

* ``reward/NAME`` with ``--api-base``: a vLLM server running the model as a pooling model
  (``vllm serve NAME --runner pooling``), through vLLM's **Pooling API**: ``POST
  {server}/pooling`` with ``{"model", "messages"}`` (the server applies the model's chat
  template); the reward is the one value of ``data[0].data`` (a number, or a list holding
  one: a sequence classifier with one label). A reply holding several values — a
  classifier of several labels, or per-token rewards — is refused: fbi reads one reward a
  sequence. (``--api-base`` may end with ``/v1``; the Pooling API is beside it.)
* ``hf-reward/PATH_OR_ID``: a Hugging Face ``AutoModelForSequenceClassification`` with one
  label, run here (``pip install fbi[reward]``): the tokenizer's chat template renders the
  conversation, and the reward is the label's logit.

The judge stage asks a reward model with the ``reward`` strategy (single-answer: the
instance's conversation with the answer as the assistant's last turn) or
``reward_pairwise``: a request marked ``reward_pair`` (`REWARD_PAIR`) whose last two
turns are the two answers asks for the rewards of both conversations (the shared turns
and one answer each) in one call, and its reply is the two rewards, ``[A, B]``.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from typing import Any

from fbi.errors import ConfigError
from fbi.providers._errors import BadReply, http_error
from fbi.providers._registry import Provider, register_provider
from fbi.providers._response import ModelResponse, token_count
from fbi.providers._wire import BoundedHTTP, RawResponse

#: The request argument that asks a reward model for a pair of rewards: the last two
#: messages are the answers A and B, each the last turn of its own conversation.
REWARD_PAIR = "reward_pair"

#: The request argument that asks a process reward model for one reward a step: its
#: value is the number of steps the assistant's turn holds, each ended by the step tag.
REWARD_STEPS = "reward_steps"
#: The request argument naming which label of a step's probabilities means "correct"
#: (default 1: Qwen2.5-Math-PRM's [wrong, correct]; Math-Shepherd served with
#: returned_token_ids [+, -] takes 0).
POSITIVE_LABEL = "positive_label"

#: The prefixes of reward-model strings.
REWARD_PREFIXES = ("reward", "hf-reward")


def is_reward_model(model: str) -> bool:
    """Whether ``model`` names a reward model (``reward/NAME``, ``hf-reward/PATH``)."""
    return model.split("/", 1)[0] in REWARD_PREFIXES and "/" in model


def reward_of(value: Any) -> float:
    """The one finite number a reward reply holds (a number, or nested one-element
    lists of one); BadReply for anything else."""
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int | float):
        shape = f"{len(value)} values" if isinstance(value, list) else type(value).__name__
        raise BadReply(f"the reward model's reply holds {shape}, not one reward (serve a "
                       "sequence classifier with one label)")
    if not math.isfinite(value):
        raise BadReply(f"the reward {value!r} is not a finite number")
    return float(value)


def step_rewards_of(value: Any, steps: int, positive: int) -> list[float]:
    """The probability that each step is correct, from a process reward model's reply
    (vLLM's STEP pooling: one entry a step tag, each the labels' probabilities, or one
    probability); BadReply unless there is one entry a step, each a probability."""
    if not isinstance(value, list) or len(value) != steps:
        found = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
        raise BadReply(f"the process reward model's reply holds {found} for {steps} steps "
                       "(one a step tag: is the model's step tag the one fbi sent? "
                       "--model-arg step_tag=TOKEN)")
    probabilities = []
    for number, entry in enumerate(value, 1):
        if isinstance(entry, list):
            if not -len(entry) <= positive < len(entry):
                raise BadReply(f"a step's entry holds {len(entry)} labels: no label "
                               f"{positive} (--model-arg {POSITIVE_LABEL}=INDEX)")
            if len(entry) < 2 or not all(_is_probability(p) for p in entry) or \
                    abs(sum(entry) - 1) > DISTRIBUTION_TOLERANCE:
                raise BadReply(f"step {number}'s entry {entry!r:.120} is not a probability "
                               "distribution over the labels (each in [0, 1], summing to "
                               "1): serve the PRM with STEP pooling and softmax")
            entry = entry[positive]
        if isinstance(entry, bool) or not isinstance(entry, int | float) or \
                not 0 <= entry <= 1:
            raise BadReply(f"a step's reward {entry!r} is not a probability (serve the "
                           "PRM with STEP pooling and softmax)")
        probabilities.append(float(entry))
    return probabilities


#: How far a step's label probabilities may sum from 1 (a float32 softmax is off by
#: about 1e-7; a reply off by more is not a softmax).
DISTRIBUTION_TOLERANCE = 1e-3


def _is_probability(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and \
        math.isfinite(value) and 0 <= value <= 1


def reward_text(value: float) -> str:
    """The reward as a reply's text (the shortest form that reads back exactly)."""
    return json.dumps(value)


def _conversations(arguments: dict[str, Any]) -> list[list[dict[str, str]]]:
    """The conversations to reward: the request's, or for a pair (`REWARD_PAIR`) the
    shared turns with answer A, then with answer B."""
    messages = [{"role": m["role"], "content": m["content"]} for m in arguments["messages"]]
    if not arguments.get(REWARD_PAIR):
        return [messages]
    return [messages[:-1], [*messages[:-2], messages[-1]]]


def _reply(rewards: list[float], prompt_tokens: int, latency: float) -> ModelResponse:
    """One reward as its text; a pair as ``[A, B]``."""
    text = reward_text(rewards[0]) if len(rewards) == 1 else json.dumps(rewards)
    return ModelResponse(text=text, prompt_tokens=prompt_tokens, finish_reason="stop",
                         latency_s=latency)


class PoolingTransport:
    """vLLM's Pooling API (see the module docstring)."""

    def __init__(self, timeout_s: float = 120.0, max_reply_bytes: int | None = None):
        self.http = BoundedHTTP(timeout_s, max_reply_bytes)

    def _requests(self, arguments: dict[str, Any], server: str | None, api_key: str | None
                  ) -> list[tuple[str, bytes, dict[str, str]]]:
        if not server:
            raise ConfigError(f"{arguments['model']}: a reward model's server is needed. "
                              "Fix: give --api-base (a vLLM server: vllm serve NAME "
                              "--runner pooling)")
        name = arguments["model"].split("/", 1)[1]
        base = server.rstrip("/").removesuffix("/v1")
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        return [(base + "/pooling", json.dumps({"model": name, "messages": messages},
                                               ensure_ascii=False).encode(), headers)
                for messages in _conversations(arguments)]

    @staticmethod
    def _read(found: RawResponse, arguments: dict[str, Any]) -> tuple[Any, int]:
        """(the reward — or a process reward model's per-step rewards, `REWARD_STEPS` —,
        the prompt's tokens) of one Pooling API reply."""
        if found.status_code >= 400:
            raise http_error(found.status_code, found.text[:300], found)
        try:
            body = json.loads(found.content)
            entries = body["data"]
            value = entries[0]["data"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise BadReply("the reply is not a Pooling API response (data[0].data)") from None
        # one conversation was sent: its one result, matched by identity, never by place
        if not isinstance(entries, list) or len(entries) != 1 or \
                entries[0].get("index", 0) != 0:
            raise BadReply(f"the reply holds {len(entries)} results (or one for another "
                           "input) for the one conversation sent")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        tokens = token_count(usage, "prompt_tokens")
        if arguments.get(REWARD_STEPS):
            return step_rewards_of(value, int(arguments[REWARD_STEPS]),
                                   int(arguments.get(POSITIVE_LABEL, 1))), tokens
        return reward_of(value), tokens

    def _replied(self, found: list[RawResponse], arguments: dict[str, Any],
                 latency: float) -> ModelResponse:
        read = [self._read(response, arguments) for response in found]
        if arguments.get(REWARD_STEPS):  # one conversation: its steps' rewards
            return ModelResponse(text=json.dumps(read[0][0]), prompt_tokens=read[0][1],
                                 finish_reason="stop", latency_s=latency)
        return _reply([reward for reward, _ in read], sum(n for _, n in read), latency)

    async def send(self, arguments: dict[str, Any], server: str | None,
                   api_key: str | None) -> ModelResponse:
        started = time.perf_counter()
        found = await asyncio.gather(*(self.http.post(url, body, headers) for url, body, headers
                                       in self._requests(arguments, server, api_key)))
        return self._replied(list(found), arguments, time.perf_counter() - started)

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> ModelResponse:
        started = time.perf_counter()
        found = [self.http.post_now(url, body, headers) for url, body, headers
                 in self._requests(arguments, server, api_key)]
        return self._replied(found, arguments, time.perf_counter() - started)

    async def aclose(self) -> None:
        await self.http.aclose()


class SequenceClassifierTransport:
    """A local Hugging Face sequence classifier (see the module docstring), loaded once
    per path, one call at a time (in a worker thread: the event loop stays free)."""

    def __init__(self, timeout_s: float = 120.0, max_reply_bytes: int | None = None):
        self._models: dict[str, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def _load(self, path: str) -> tuple[Any, Any]:
        if path not in self._models:
            try:
                import torch  # noqa: F401
                from transformers import AutoModelForSequenceClassification, AutoTokenizer
            except ImportError:
                raise ConfigError("hf-reward/ models need transformers and torch. Fix: pip "
                                  "install fbi[reward]") from None
            try:
                tokenizer = AutoTokenizer.from_pretrained(path)
                model = AutoModelForSequenceClassification.from_pretrained(path).eval()
            except (OSError, ValueError) as error:
                raise ConfigError(f"hf-reward/{path}: cannot load a sequence classifier "
                                  f"({str(error).splitlines()[0][:200]}). Fix: give the "
                                  "folder or Hub id of one") from None
            if model.config.num_labels != 1:
                raise ConfigError(f"hf-reward/{path}: the classifier has "
                                  f"{model.config.num_labels} labels; a reward model has "
                                  "one. Fix: give a reward model")
            if not getattr(tokenizer, "chat_template", None):
                raise ConfigError(f"hf-reward/{path}: the tokenizer has no chat template, so "
                                  "fbi cannot write the conversation as the model was "
                                  "trained on it. Fix: give a reward model with one")
            self._models[path] = (tokenizer, model)
        return self._models[path]

    def send_now(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> ModelResponse:
        import torch

        path = arguments["model"].split("/", 1)[1]
        if arguments.get(REWARD_STEPS):
            raise ConfigError(f"hf-reward/{path}: a local sequence classifier gives one "
                              "reward a conversation, not one a step. Fix: serve the "
                              "process reward model with vLLM (reward/NAME --api-base URL)")
        started = time.perf_counter()
        rewards, tokens = [], 0
        with self._lock:
            tokenizer, model = self._load(path)
            for messages in _conversations(arguments):
                text = tokenizer.apply_chat_template(messages, tokenize=False)
                inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False)
                with torch.no_grad():
                    rewards.append(reward_of(model(**inputs).logits[0].tolist()))
                tokens += int(inputs["input_ids"].shape[-1])
        return _reply(rewards, tokens, time.perf_counter() - started)

    async def send(self, arguments: dict[str, Any], server: str | None,
                   api_key: str | None) -> ModelResponse:
        return await asyncio.to_thread(self.send_now, arguments, server, api_key)

    async def aclose(self) -> None:
        return None


register_provider(Provider("reward", PoolingTransport,
                           server_help="a vLLM server: vllm serve NAME --runner pooling",
                           sees_images=False))
register_provider(Provider("hf-reward", SequenceClassifierTransport, on_this_machine=True,
                           sees_images=False))
