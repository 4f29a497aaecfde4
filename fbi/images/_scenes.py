"""Scenes: images drawn from a description, so a gold image and a perturbed one differ in
exactly one planted attribute (issue 67, item 3).

A judge of generated images is asked whether an image shows what its prompt asked for.
To measure which errors it misses, fbi needs pairs of images that differ in one known
way — MJ-Bench's alignment categories (Chen et al., "MJ-Bench: Is Your Multimodal Reward
Model Really a Good Judge for Text-to-Image Generation?", NeurIPS 2025, §3.1: object,
attribute, count, spatial relation, text). A [`Scene`][fbi.images.Scene] is a grid of
cells, each empty or holding one coloured shape, and an optional line of written text
below it; [`render_scene`][fbi.images.render_scene] draws it with Pillow (flat colours,
no anti-aliasing, so the pixels of a cell depend on that cell alone), and
[`plant_change`][fbi.images.plant_change] changes one attribute and says which cells it
touched: rendered, the two images differ in those cells and nowhere else
(tests/test_images.py checks it pixel by pixel).

| category | what changes |
|---|---|
| ``object`` | one shape becomes another shape (a circle where a square was asked for) |
| ``attribute`` | one shape's colour |
| ``count`` | one more shape of a kind the scene has, or one fewer where it has two or more |
| ``spatial`` | two shapes of different kinds swap places (the relation between them inverted) |
| ``text`` | one letter of the written text |
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from fbi.images._intake import pillow

SCENE_VERSION = 1
CELL = 64
"""A grid cell's side, in pixels."""
TEXT_BAND = 48
"""The height of the band below the grid that holds the written text."""
SHAPES = ("circle", "square", "triangle")
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (215, 38, 38), "blue": (37, 84, 219), "green": (34, 160, 64),
    "yellow": (238, 196, 24), "purple": (128, 52, 168), "orange": (240, 128, 24)}
BACKGROUND = (255, 255, 255)
INK = (20, 20, 20)
CATEGORIES = ("object", "attribute", "count", "spatial", "text")


class Shape(BaseModel):
    """One coloured shape in one cell of the grid."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    shape: str
    colour: str
    column: int = Field(ge=0)
    row: int = Field(ge=0)

    @property
    def kind(self) -> str:
        return f"{self.colour} {self.shape}"


class Scene(BaseModel):
    """What an image shows: shapes on a grid and a line of text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = SCENE_VERSION
    id: str
    columns: int = Field(default=5, ge=1, le=12)
    rows: int = Field(default=3, ge=1, le=8)
    shapes: tuple[Shape, ...] = ()
    text: str = ""
    """Written below the grid (capital letters and digits read best)."""

    def model_post_init(self, _context: object) -> None:
        cells = [(s.column, s.row) for s in self.shapes]
        if len(set(cells)) != len(cells):
            raise ValueError(f"scene {self.id}: two shapes in one cell")
        for s in self.shapes:
            if s.column >= self.columns or s.row >= self.rows:
                raise ValueError(f"scene {self.id}: a shape outside the grid")
            if s.shape not in SHAPES or s.colour not in COLOURS:
                raise ValueError(f"scene {self.id}: unknown shape or colour {s.kind!r}")

    @property
    def size(self) -> tuple[int, int]:
        return self.columns * CELL, self.rows * CELL + (TEXT_BAND if self.text else 0)

    def count(self, kind: str) -> int:
        return sum(s.kind == kind for s in self.shapes)

    def describe(self) -> str:
        """The scene as a text-to-image prompt ("two red circles, a blue square to the
        right of them, and the word OPEN below")."""
        kinds = list(dict.fromkeys(s.kind for s in self.shapes))
        parts = [counted(self.count(k), k) for k in kinds]
        said = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1] \
            if parts else "an empty grid"
        where = "; left to right: " + ", ".join(
            s.kind for s in sorted(self.shapes, key=lambda s: (s.column, s.row)))
        text = f", with the text \"{self.text}\" written below" if self.text else ""
        return f"A white {self.columns}×{self.rows} grid with {said}{text}{where}."


_NUMBERS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def counted(n: int, kind: str) -> str:
    """"a red circle", "two red circles" (every shape's name takes an s)."""
    word = _NUMBERS[n] if n < len(_NUMBERS) else str(n)
    if n == 1:
        return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    return f"{word} {kind}s"


def cell_box(column: int, row: int) -> tuple[int, int, int, int]:
    """A cell's pixels: left, top, right, bottom (exclusive)."""
    return column * CELL, row * CELL, (column + 1) * CELL, (row + 1) * CELL


def text_box(scene: Scene) -> tuple[int, int, int, int]:
    width, height = scene.size
    return 0, scene.rows * CELL, width, height


def render_scene(scene: Scene) -> bytes:
    """The scene as PNG bytes (deterministic for one version of Pillow)."""
    Image = pillow()
    from PIL import ImageDraw, ImageFont

    image = Image.new("RGB", scene.size, BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"  # no anti-aliasing: a letter's pixels are its own
    pad = CELL // 8
    for s in scene.shapes:
        left, top, right, bottom = cell_box(s.column, s.row)
        box = (left + pad, top + pad, right - pad - 1, bottom - pad - 1)
        colour = COLOURS[s.colour]
        if s.shape == "circle":
            draw.ellipse(box, fill=colour)
        elif s.shape == "square":
            draw.rectangle(box, fill=colour)
        else:
            draw.polygon([((box[0] + box[2]) // 2, box[1]), (box[2], box[3]),
                          (box[0], box[3])], fill=colour)
    if scene.text:
        font = ImageFont.load_default(size=28)
        left, top, right, bottom = text_box(scene)
        draw.text(((left + right) // 2, (top + bottom) // 2), scene.text, fill=INK,
                  font=font, anchor="mm")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


@dataclass(frozen=True)
class PlantedChange:
    """What `plant_change` changed."""

    category: str
    summary: str
    """In words: "the blue square became red"."""
    cells: tuple[tuple[int, int], ...]
    """The grid cells it touched (column, row)."""
    text_changed: bool = False


class CannotPlant(ValueError):
    """The scene holds nothing the category can change (no text to misspell, ...)."""


def plant_change(scene: Scene, category: str, rng: random.Random
                 ) -> tuple[Scene, PlantedChange]:
    """``scene`` with one attribute of ``category`` changed (the module docstring)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown scene category {category!r}; one of {CATEGORIES}")
    return _PLANTERS[category](scene, rng)


def _replace(scene: Scene, old: Shape, new: Shape | None) -> tuple[Shape, ...]:
    kept = [s for s in scene.shapes if s is not old]
    return tuple(kept + ([new] if new else []))


def _pick(scene: Scene, rng: random.Random) -> Shape:
    if not scene.shapes:
        raise CannotPlant(f"scene {scene.id} has no shape to change")
    return rng.choice(scene.shapes)


def _one_field(scene: Scene, rng: random.Random, category: str, name: str,
               values: tuple[str, ...] | list[str]) -> tuple[Scene, PlantedChange]:
    """One shape's ``name`` (its form or its colour) changed to another of ``values``."""
    old = _pick(scene, rng)
    value = rng.choice([v for v in values if v != getattr(old, name)])
    new = old.model_copy(update={name: value})
    became = f"a {new.kind}" if name == "shape" else value
    return scene.model_copy(update={"shapes": _replace(scene, old, new)}), PlantedChange(
        category, f"the {old.kind} became {became}", ((old.column, old.row),))


def _object(scene: Scene, rng: random.Random) -> tuple[Scene, PlantedChange]:
    return _one_field(scene, rng, "object", "shape", SHAPES)


def _attribute(scene: Scene, rng: random.Random) -> tuple[Scene, PlantedChange]:
    return _one_field(scene, rng, "attribute", "colour", list(COLOURS))


def _count(scene: Scene, rng: random.Random) -> tuple[Scene, PlantedChange]:
    old = _pick(scene, rng)
    n = scene.count(old.kind)
    free = [(c, r) for c in range(scene.columns) for r in range(scene.rows)
            if all((s.column, s.row) != (c, r) for s in scene.shapes)]
    if n >= 2 and (not free or rng.random() < 0.5):
        shapes = _replace(scene, old, None)
        change = f"one {old.kind} fewer ({n} → {n - 1})"
        cell = (old.column, old.row)
    elif free:
        cell = rng.choice(free)
        shapes = (*scene.shapes, old.model_copy(update={"column": cell[0],
                                                        "row": cell[1]}))
        change = f"one {old.kind} more ({n} → {n + 1})"
    else:
        raise CannotPlant(f"scene {scene.id}: no free cell and no kind twice")
    return scene.model_copy(update={"shapes": shapes}), PlantedChange("count", change,
                                                                      (cell,))


def _spatial(scene: Scene, rng: random.Random) -> tuple[Scene, PlantedChange]:
    pairs = [(a, b) for i, a in enumerate(scene.shapes) for b in scene.shapes[i + 1:]
             if a.kind != b.kind and a.column != b.column]
    if not pairs:
        raise CannotPlant(f"scene {scene.id}: no two shapes of different kinds apart")
    a, b = rng.choice(pairs)
    moved_a = a.model_copy(update={"column": b.column, "row": b.row})
    moved_b = b.model_copy(update={"column": a.column, "row": a.row})
    shapes = tuple(moved_a if s is a else moved_b if s is b else s for s in scene.shapes)
    left, right = sorted((a, b), key=lambda s: s.column)
    return scene.model_copy(update={"shapes": shapes}), PlantedChange(
        "spatial", f"the {left.kind} and the {right.kind} swapped places (the {left.kind} "
        f"is now right of the {right.kind})", ((a.column, a.row), (b.column, b.row)))


_LETTERS = "ABCDEFGHJKLMNPRSTUVWXYZ"


def _text(scene: Scene, rng: random.Random) -> tuple[Scene, PlantedChange]:
    places = [i for i, ch in enumerate(scene.text) if ch.isalpha()]
    if not places:
        raise CannotPlant(f"scene {scene.id} has no written text")
    i = rng.choice(places)
    letter = rng.choice([c for c in _LETTERS if c != scene.text[i].upper()])
    text = scene.text[:i] + letter + scene.text[i + 1:]
    return scene.model_copy(update={"text": text}), PlantedChange(
        "text", f"the text \"{scene.text}\" became \"{text}\"", (), text_changed=True)


_PLANTERS = {"object": _object, "attribute": _attribute, "count": _count,
             "spatial": _spatial, "text": _text}
