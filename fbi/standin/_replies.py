"""What the stand-in answers: the reply a prompt asks for, read from the prompt itself.

Every prompt fbi sends ends by stating the reply's shape; the stand-in answers in it:

* a judge's score (``an integer from LOW to HIGH``) or pairwise verdict (``"verdict"``):
  a hash of the prompt, so the same prompt always gets the same verdict (with a
  ``seed``, each seed its own);
* an answer perturber's ``perturbed_answer``: the answer with one planted change (a
  number moved by one, else a word doubled), and its rationale;
* a trajectory perturber's ``steps``: the final step's text with an admission appended;
* an explanation check's ``points_out_error``, a describer's ``hypotheses`` (none);
* a QA model's ``answer`` and ``confidence`` (the first option of a multiple choice),
  and a rewriter's ``rewrites``;
* fbi's probe call (``Reply with OK.``): ``OK``; anything else, the QA model's answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

_SCORE_RANGE = re.compile(r"an integer from (\d+) to (\d+)")
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w.]\d)")
_WORD = re.compile(r"\b([A-Za-z]{4,})\b")


def _prompt(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in request.get("messages") or ()
                     if isinstance(m, dict))


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(), 16)


def _section(prompt: str, name: str) -> str | None:
    found = re.search(rf"<{name}>\n(.*?)\n</{name}>", prompt, re.DOTALL)
    return found.group(1) if found else None


def reply_text(request: dict[str, Any]) -> str:
    """The stand-in's reply to one chat request (see the module docstring)."""
    prompt = _prompt(request)
    if prompt.strip() == "Reply with OK.":  # fbi's probe call
        return "OK"
    if "<steps>\n" in prompt and '"steps"' in prompt:
        return _trajectory_edit(prompt)
    if '"perturbed_answer"' in prompt:
        return _answer_edit(prompt)
    if '"points_out_error"' in prompt:
        return json.dumps({"points_out_error": _digest(prompt) % 2 == 0})
    if '"hypotheses"' in prompt:
        return json.dumps({"hypotheses": []})
    if '"verdict"' in prompt or _SCORE_RANGE.search(prompt):
        return verdict_reply(request)
    return qa_reply(request)


def verdict_reply(request: dict[str, Any]) -> str:
    """A judge's verdict, a hash of the prompt (with a ``seed``, each seed its own): a
    pairwise verdict when the prompt asks for one, else a score in the last range it
    names; ``OK`` for a prompt that asks for neither (fbi's probe call)."""
    prompt = _prompt(request)
    if request.get("seed") is not None:  # --samples: each asking its own verdict
        prompt += f"\nseed {request['seed']}"
    digest = _digest(prompt)
    if '"verdict"' in prompt:
        verdict = ("A", "B", "tie", "both_bad")[digest % 4]
        return json.dumps({"explanation": "Compared both answers.", "verdict": verdict})
    ranges = _SCORE_RANGE.findall(prompt)
    if not ranges:
        return "OK"
    low, high = (int(x) for x in ranges[-1])
    return json.dumps({"explanation": "Checked the answer.",
                       "score": low + digest % (high - low + 1)})


def qa_reply(request: dict[str, Any]) -> str:
    """A QA model for the robustness suites: rewrites when asked, else a fixed answer
    (the first option of a multiple choice, else "Paris"), confidence 60."""
    prompt = _prompt(request)
    if "Rewrite the question" in prompt:
        question = prompt.split("Question: ", 1)[-1].split("\n", 1)[0]
        return json.dumps({"rewrites": [f"{question} (put another way {n})"
                                        for n in range(1, 4)]})
    if re.search(r"^A\. ", prompt, re.M):
        return json.dumps({"answer": "A", "confidence": 60})
    return json.dumps({"answer": "Paris", "confidence": 60})


def trajectory_reply(request: dict[str, Any]) -> str:
    """A trajectory perturber's reply (perturbations/trajectory.jinja)."""
    return _trajectory_edit(_prompt(request))


def _answer_edit(prompt: str) -> str:
    """One planted change: the answer's first number moved by one, else its first long
    word doubled."""
    answer = _section(prompt, "answer") or ""
    number = _NUMBER.search(answer)
    if number:
        changed = str(int(number.group(1)) + 1)
        edited = answer[:number.start(1)] + changed + answer[number.end(1):]
        rationale = f"changed {number.group(1)!r} to {changed!r}"
    else:
        word = _WORD.search(answer)
        if word is None:
            edited, rationale = answer + " (unchecked)", "added '(unchecked)' at the end"
        else:
            edited = answer[:word.end()] + " " + word.group(1) + answer[word.end():]
            rationale = f"repeated the word {word.group(1)!r}"
    return json.dumps({"rationale": rationale, "perturbed_answer": edited})


def _trajectory_edit(prompt: str) -> str:
    """The final step's text with an admission appended, that step claimed."""
    try:
        steps = json.loads(prompt.split("<steps>\n", 1)[1].split("\n</steps>", 1)[0])
    except (ValueError, IndexError):
        return "OK"
    if not isinstance(steps, list) or not steps or not isinstance(steps[-1], dict):
        return "OK"
    last = {**steps[-1], "text": str(steps[-1].get("text") or "") + " (I did not check.)"}
    return json.dumps({"rationale": "the final answer admits no check", "step": len(steps),
                       "steps": [*steps[:-1], last]})
