"""Human labels through Label Studio, the tool many teams label in: a run's instances
written as Label Studio tasks with a labeling config (`label_studio_tasks`,
`LABEL_CONFIG`), and Label Studio's JSON export read back as labels (`labels_of_task`;
``--human`` reads an export file as it is).

A task shows the question (earlier turns of a conversation before it) and the two answers
as "A" and "B" — never the judge's verdict — with the gold answer in slot A or B at
random (seeded per instance, so a person cannot learn the side). **Tasks are blind**:
Label Studio's data manager shows every data field to annotators, so a task's data holds
only the texts shown and ``fbi_task``, an opaque token (a keyed hash; no instance id,
which names the planted category, and no mark of the gold side). Which instance a token
is and which side slot A holds is kept beside the export in fbi's own file,
``fbi_tasks.json`` (`task_mapping`). Reading an export back, each task is found **by its
texts** among the runs' instances — the question and the two answers, in the order
shown, must be exactly an instance's, which also says which slot held the gold answer:
a verdict is read against the texts the person saw, whatever a field says of the side,
and a task of another run's export (same tokens, other texts) is refused, never read as
this run's label. The export's format is Label
Studio's (its "JSON" export):
a list of tasks, each with ``data`` and ``annotations``, an annotation's ``result`` a list
of regions; the one read is the ``choices`` region of ``from_name`` ``verdict`` (A, B or
Tie). A cancelled (skipped) annotation is no label; its annotator is ``completed_by``
(Label Studio's user: an id, or an object with an e-mail).
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Iterable
from typing import Any

from fbi.records import Instance

LABEL_STUDIO_VERSION = 1

#: The labeling config of the tasks (Label Studio's XML): the question, the answers, and
#: one choice of A, B or Tie.
LABEL_CONFIG = """<View>
  <Header value="Question"/>
  <Text name="question" value="$question"/>
  <Header value="Answer A"/>
  <Text name="answer_a" value="$answer_a"/>
  <Header value="Answer B"/>
  <Text name="answer_b" value="$answer_b"/>
  <Header value="Which answer is better?"/>
  <Choices name="verdict" toName="question" choice="single" showInLine="true"
           required="true">
    <Choice value="A"/>
    <Choice value="B"/>
    <Choice value="Tie"/>
  </Choices>
</View>
"""

#: fbi's file beside the export: token → instance and side.
MAPPING_FILE = "fbi_tasks.json"


def _shown_question(instance: Any) -> str:
    earlier = "".join(f"{role}: {text}\n\n" for role, text in instance.context)
    return earlier + instance.instruction


def label_studio_tasks(instances: Iterable[Instance], seed: int = 0, key: str = ""
                       ) -> list[dict[str, Any]]:
    """One blind Label Studio task per instance (see the module docstring); ``key``
    keys the tokens (`task_mapping` writes it)."""
    tasks = []
    for instance in instances:
        gold_first = _gold_first(instance.id, seed)
        answers = (instance.gold_answer, instance.perturbed_answer)
        a, b = answers if gold_first else answers[::-1]
        tasks.append({"data": {"question": _shown_question(instance), "answer_a": a,
                               "answer_b": b, "fbi_task": task_token(key, instance.id)}})
    return tasks


def _gold_first(instance_id: str, seed: int) -> bool:
    return random.Random(f"{seed}:{instance_id}").random() < 0.5


def task_token(key: str, instance_id: str) -> str:
    """The opaque token of an instance's task: a keyed hash, which says nothing of the
    instance without the key."""
    return hmac.new(key.encode(), instance_id.encode(), hashlib.sha256).hexdigest()[:20]


def task_mapping(instances: Iterable[Instance], seed: int, key: str) -> dict[str, Any]:
    """``fbi_tasks.json``: the export's key and seed, and each token's instance and which
    answer slot A holds — never put in a task."""
    return {"version": LABEL_STUDIO_VERSION, "seed": seed, "key": key, "tasks": {
        task_token(key, i.id): {"instance_id": i.id,
                                "a": "gold" if _gold_first(i.id, seed) else "perturbed"}
        for i in instances}}


def is_label_studio_task(row: dict[str, Any]) -> bool:
    """Whether a row of a labels file is a task of Label Studio's JSON export."""
    return isinstance(row.get("data"), dict) and "annotations" in row


class TaskIndex:
    """The runs' instances by the texts a task shows: (question, answer A, answer B) →
    (instance id, which answer slot A holds)."""

    def __init__(self, instances: Iterable[Any]):
        self.found: dict[tuple[str, str, str], tuple[str, str] | None] = {}
        for instance in instances:
            question = _shown_question(instance)
            gold, perturbed = instance.gold_answer, instance.perturbed_answer
            for key, side in (((question, gold, perturbed), "gold"),
                              ((question, perturbed, gold), "perturbed")):
                seen = self.found.get(key, (instance.id, side))
                # texts two instances share, or equal answers, say no instance or side
                self.found[key] = (instance.id, side) if seen == (instance.id, side) and \
                    gold != perturbed else None

    def of(self, data: dict[str, Any]) -> tuple[str, str]:
        texts = tuple(data.get(name) for name in ("question", "answer_a", "answer_b"))
        if not all(isinstance(t, str) for t in texts):
            raise ValueError("a Label Studio task without the question, answer_a and "
                             "answer_b `fbi export label-studio` wrote")
        if texts not in self.found:
            raise ValueError("a Label Studio task whose question and answers are no "
                             "instance of these runs (another run's export, or its texts "
                             "edited or swapped); only tasks this run's export made are read")
        found = self.found[texts]  # type: ignore[index]
        if found is None:
            raise ValueError("a Label Studio task whose texts several instances share (or "
                             "whose two answers are the same), so which was gold cannot be "
                             "told; label such instances with fbi label")
        return found


def labels_of_task(task: dict[str, Any], index: TaskIndex) -> list[dict[str, str] | None]:
    """The labels one exported task holds, as rows ``--human`` reads (``instance_id``,
    ``verdict`` a / b / tie, ``annotator``), and None for each annotation that chose no
    verdict (counted and said by the reader, never dropped unsaid); ValueError saying
    what is wrong. The task's instance and gold side are its texts' (`TaskIndex`)."""
    instance_id, slot_a = index.of(task["data"])
    annotations = task["annotations"]
    if not isinstance(annotations, list):
        raise ValueError("its annotations are not a list")
    found: list[dict[str, str] | None] = []
    for annotation in annotations:
        if not isinstance(annotation, dict) or annotation.get("was_cancelled"):
            continue
        choice = _choice(annotation.get("result"))
        if choice is None:
            found.append(None)
            continue
        verdict = {"A": "a" if slot_a == "gold" else "b",
                   "B": "b" if slot_a == "gold" else "a", "Tie": "tie"}[choice]
        found.append({"instance_id": instance_id, "verdict": verdict,
                      "annotator": _annotator(annotation.get("completed_by"))})
    return found


def _choice(result: Any) -> str | None:
    """The A / B / Tie chosen in an annotation's ``verdict`` region (None: none)."""
    if not isinstance(result, list):
        raise ValueError("an annotation's result is not a list of regions")
    for region in result:
        if isinstance(region, dict) and region.get("from_name") == "verdict":
            value = region.get("value")
            choices = value.get("choices") if isinstance(value, dict) else None
            if not (isinstance(choices, list) and len(choices) == 1 and
                    choices[0] in ("A", "B", "Tie")):
                raise ValueError(f"the verdict region chooses {choices!r}: one of A, B, Tie")
            return choices[0]
    return None


def _annotator(who: Any) -> str:
    if isinstance(who, dict):
        who = who.get("email") or who.get("id")
    if isinstance(who, bool) or not isinstance(who, int | str) or who == "":
        raise ValueError(f"completed_by {who!r} names no annotator")
    return f"label-studio:{who}"
