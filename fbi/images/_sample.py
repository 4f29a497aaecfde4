"""The built-in sample of scenes (issue 67, item 3): questions about images, their gold
answers and gold images, everything offline.

48 scenes are made from a fixed seed (the same on every machine): two to five shapes on
a 5×3 grid, and on every other scene a word or code written below it. Each comes with
one question whose answer the scene decides — how many shapes of a kind, what colour
the only shape of its form is, which of two shapes is further left, what the text says,
whether a kind of shape is there — and with the prompt that describes it, for judges of
generated images (`Scene.describe`). The gold image is the scene rendered
(`render_scene`), so nothing generated is shipped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

from fbi.images._scenes import COLOURS, SHAPES, Scene, Shape

SAMPLE_VERSION = 1
SCENES = 48
_WORDS = ("OPEN", "EXIT", "SALE", "GATE B7", "STOP", "ROOM 12", "PARK", "BUS 42",
          "CAFE", "LAB 3", "NORTH", "DOCK 9")
QUESTION_KINDS = ("count", "colour", "spatial", "text", "presence")


@dataclass(frozen=True)
class SceneItem:
    """A question about a scene's image, with its gold answer."""

    id: str
    scene: Scene
    kind: str
    """What the question asks (`QUESTION_KINDS`)."""
    question: str
    gold_answer: str


def _scene(number: int, rng: random.Random, text: bool) -> Scene:
    cells = [(c, r) for c in range(5) for r in range(3)]
    rng.shuffle(cells)
    n = rng.randint(2, 5)
    every = [(shape, colour) for shape in SHAPES for colour in sorted(COLOURS)]
    kinds = rng.sample(every, rng.randint(2, min(4, n)))
    drawn = kinds + [rng.choice(kinds) for _ in range(n - len(kinds))]
    rng.shuffle(drawn)
    shapes = tuple(Shape(shape=shape, colour=colour, column=column, row=row)
                   for (shape, colour), (column, row) in zip(drawn, cells, strict=False))
    return Scene(id=f"scene-{number + 1}", shapes=shapes,
                 text=_WORDS[number % len(_WORDS)] if text else "")


def _question(scene: Scene, kind: str, rng: random.Random) -> tuple[str, str] | None:
    """The question of ``kind`` about ``scene`` and its answer; None when the scene
    cannot decide one."""
    kinds = sorted({s.kind for s in scene.shapes})
    if kind == "count":
        k = rng.choice(kinds)
        n = scene.count(k)
        return (f"How many {k}s are in the image?",
                f"There is one {k}." if n == 1 else f"There are {n} {k}s.")
    if kind == "colour":
        forms = [f for f in SHAPES if sum(s.shape == f for s in scene.shapes) == 1]
        if not forms:
            return None
        form = rng.choice(forms)
        colour = next(s.colour for s in scene.shapes if s.shape == form)
        return f"What colour is the {form} in the image?", f"The {form} is {colour}."
    if kind == "spatial":
        unique = [s for s in scene.shapes if scene.count(s.kind) == 1]
        pairs = [(a, b) for a in unique for b in unique if a.column < b.column]
        if not pairs:
            return None
        a, b = rng.choice(pairs)
        if rng.random() < 0.5:
            return (f"Is the {a.kind} to the left or to the right of the {b.kind}?",
                    f"The {a.kind} is to the left of the {b.kind}.")
        return (f"Is the {b.kind} to the left or to the right of the {a.kind}?",
                f"The {b.kind} is to the right of the {a.kind}.")
    if kind == "text":
        if not scene.text:
            return None
        return "What does the text below the shapes say?", f"It says \"{scene.text}\"."
    absent = [f"{c} {s}" for s in SHAPES for c in sorted(COLOURS)
              if f"{c} {s}" not in kinds]
    if rng.random() < 0.5 and absent:
        k = rng.choice(absent)
        return f"Is there a {k} in the image?", f"No, there is no {k} in the image."
    k = rng.choice(kinds)
    return f"Is there a {k} in the image?", f"Yes, there is a {k} in the image."


@cache
def sample_scenes() -> tuple[SceneItem, ...]:
    """The built-in sample (the module docstring), the same on every call: the question
    kinds in turn, each scene drawn again until it decides its question."""
    rng = random.Random(f"fbi-scenes:{SAMPLE_VERSION}")
    items = []
    for number in range(SCENES):
        kind = QUESTION_KINDS[number % len(QUESTION_KINDS)]
        asked = None
        while asked is None:
            scene = _scene(number, rng, text=kind == "text" or number % 2 == 0)
            asked = _question(scene, kind, rng)
        items.append(SceneItem(scene.id, scene, kind, *asked))
    return tuple(items)
