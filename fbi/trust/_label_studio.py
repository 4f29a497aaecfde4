"""Human labels through Label Studio, the tool many teams label in: a run's instances
written as Label Studio tasks with a labeling config (`label_studio_tasks`,
`LABEL_CONFIG`), and Label Studio's JSON export read back as labels (`labels_of_task`;
``--human`` reads an export file as it is).

A task shows the question (earlier turns of a conversation before it) and the two answers
as "A" and "B" — never the judge's verdict — with the gold answer in slot A or B at
random (seeded per instance, so a person cannot learn the side); the task's data keeps
``fbi_instance_id``, ``fbi_version`` and ``fbi_a`` (which answer slot A holds), which a
labeling config does not show. The export's format is Label Studio's (its "JSON" export):
a list of tasks, each with ``data`` and ``annotations``, an annotation's ``result`` a list
of regions; the one read is the ``choices`` region of ``from_name`` ``verdict`` (A, B or
Tie). A cancelled (skipped) annotation is no label; its annotator is ``completed_by``
(Label Studio's user: an id, or an object with an e-mail).
"""

from __future__ import annotations

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

def label_studio_tasks(instances: Iterable[Instance], seed: int = 0) -> list[dict[str, Any]]:
    """One Label Studio task per instance (see the module docstring)."""
    tasks = []
    for instance in instances:
        gold_first = random.Random(f"{seed}:{instance.id}").random() < 0.5
        earlier = "".join(f"{role}: {text}\n\n" for role, text in instance.context)
        answers = (instance.gold_answer, instance.perturbed_answer)
        a, b = answers if gold_first else answers[::-1]
        tasks.append({"data": {
            "question": earlier + instance.instruction, "answer_a": a, "answer_b": b,
            "fbi_instance_id": instance.id, "fbi_a": "gold" if gold_first else "perturbed",
            "fbi_version": LABEL_STUDIO_VERSION}})
    return tasks


def is_label_studio_task(row: dict[str, Any]) -> bool:
    """Whether a row of a labels file is a task of Label Studio's JSON export."""
    return isinstance(row.get("data"), dict) and "annotations" in row


def labels_of_task(task: dict[str, Any]) -> list[dict[str, str] | None]:
    """The labels one exported task holds, as rows ``--human`` reads (``instance_id``,
    ``verdict`` a / b / tie, ``annotator``), and None for each annotation that chose no
    verdict (counted and said by the reader, never dropped unsaid); ValueError saying
    what is wrong."""
    data = task["data"]
    instance_id, slot_a = data.get("fbi_instance_id"), data.get("fbi_a")
    if not isinstance(instance_id, str) or slot_a not in ("gold", "perturbed"):
        raise ValueError("a Label Studio task without fbi_instance_id and fbi_a (was it "
                         "made by `fbi export label-studio`?)")
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
