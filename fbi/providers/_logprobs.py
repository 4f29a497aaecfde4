"""Log-probabilities as a server sends them, read and checked: the only numbers a
``--logprobs`` judge's expected score rests on, so a lying server's (NaN, infinite,
above 0, not numbers) never reach a score or a record (issue 50)."""

from __future__ import annotations

import math

from fbi.escaping import without_surrogates


def token_logprobs_of(choice) -> list | str | None:
    """Per generated token, (text, log-probability) of the chosen token and then its top
    alternatives, from an OpenAI-shaped choice (litellm's object, or a batch file's
    dict), the numbers as the server wrote them (`fbi.providers.ModelResponse` checks them); a
    sentence saying what is wrong when their shape is not OpenAI's."""
    logprobs = choice.get("logprobs") if isinstance(choice, dict) else \
        getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if content is None and isinstance(logprobs, dict):
        content = logprobs.get("content")
    if not content:
        return None
    tokens = []
    try:
        for token in content:
            token = token if isinstance(token, dict) else token.model_dump()
            chosen = (token.get("token") or "", token["logprob"])
            others = [(t.get("token") or "", t["logprob"])
                      for t in token.get("top_logprobs") or [] if t.get("token") != chosen[0]]
            tokens.append([chosen, *others][:21])
    except (KeyError, TypeError, AttributeError) as error:
        return f"log-probabilities not in OpenAI's shape ({type(error).__name__})"
    return tokens


#: A log-probability above this is no probability (rounding may leave a hair above 0).
LOGPROB_CEILING = 1e-6


def checked_token_logprobs(tokens) -> tuple[list[list[tuple[str, float]]] | None,
                                            str | None]:
    """Stored or received token log-probabilities as (text, log-probability) pairs, each
    a finite number no greater than 0 — and None with the reason when any is not (NaN,
    infinite, above 0, not a number): a lying server's numbers never reach a score or a
    record. Cache entries written before fbi kept the texts hold bare numbers: their
    texts are unknown ("")."""
    if not tokens:
        return None, None
    checked = []
    try:
        for index, top in enumerate(tokens):
            row = []
            for candidate in top:
                text, value = (candidate[0], candidate[1]) if isinstance(
                    candidate, (list, tuple)) else ("", candidate)
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    return None, f"token {index + 1}'s log-probability {value!r} is not a " \
                                 "number"
                if not math.isfinite(value) or value > LOGPROB_CEILING:
                    return None, f"token {index + 1}'s log-probability {value!r} is no " \
                                 "probability's (finite and at most 0)"
                row.append((without_surrogates(str(text)), min(float(value), 0.0)))
            checked.append(row)
    except TypeError:
        return None, "log-probabilities not in OpenAI's shape"
    return checked, None
