"""The labelling TUI (`fbi label`): a person's verdict on a run's instances, one key at a
time, in the planner's order, with the vetting TUI's look (``app.tcss``).

The person sees the question and two answers, never the judge's verdict, the category
(it names the planted error) or which answer is the gold one: which is shown first is a
coin flip seeded by the plan's seed and the instance. Every label is on disk before the
next item is shown; if the write fails, the error is shown and the item stays.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from fbi.errors import InputError
from fbi.records import Instance
from fbi.trust import LabelFile

#: key → (what the footer says, verdict when the gold answer is shown first)
KEYS = {"1": ("answer 1 better", "a"), "2": ("answer 2 better", "b"), "t": ("tie", "tie")}


def gold_first(instance_id: str, seed: int) -> bool:
    """Whether the gold answer is Answer 1 for this instance (a seeded coin flip)."""
    return hashlib.sha256(f"{seed}:{instance_id}".encode()).digest()[0] % 2 == 0


@dataclass(frozen=True)
class LabelItem:
    """One instance as the person sees it."""

    instance: Instance
    gold_first: bool

    @property
    def answers(self) -> tuple[str, str]:
        gold, perturbed = self.instance.gold_answer, self.instance.perturbed_answer
        return (gold, perturbed) if self.gold_first else (perturbed, gold)

    def verdict(self, key: str) -> str:
        """The verdict (a: the gold answer better) a key gives."""
        verdict = KEYS[key][1]
        flipped = {"a": "b", "b": "a"}
        return verdict if self.gold_first else flipped.get(verdict, verdict)


class LabelHelp(ModalScreen[None]):
    BINDINGS = [Binding("escape,question_mark", "close", "close"),
                Binding("q", "app.quit", "quit")]

    def compose(self) -> ComposeResult:
        lines = ["[b]Keys[/b]", ""]
        lines += [f"  [b]{key}[/b]  {meaning}" for key, (meaning, _) in KEYS.items()]
        lines += ["  [b]space[/b]  skip (shown again next time)",
                  "  [b]z[/b]  undo your last label   [b]?[/b]  this help",
                  "  [b]q[/b]  quit (every label is already saved)", "",
                  "Which answer is better for the question? Judge the answers only; "
                  "tie when neither is.", "", "Esc closes this."]
        with Vertical(id="dialog"):
            yield Static("\n".join(lines))

    def action_close(self) -> None:
        self.dismiss(None)


class LabellingApp(App):
    """Label instances in the planner's order."""

    CSS_PATH = "app.tcss"
    TITLE = "fbi label"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("question_mark", "help", "keys"),
        Binding("q", "quit", "quit"),
        *[Binding(key, f"label('{key}')", meaning) for key, (meaning, _) in KEYS.items()],
        Binding("space", "skip", "skip"),
        Binding("z", "undo", "undo"),
    ]

    def __init__(self, items: list[LabelItem], labels: LabelFile, annotator: str):
        super().__init__()
        self.items, self.labels, self.annotator = items, labels, annotator
        done = labels.labelled_by(annotator)
        self.queue = [item for item in items if item.instance.id not in done]
        self.position = 0
        self.added = 0
        """Labels added this session."""

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with Horizontal(id="body"), VerticalScroll(id="item"):
            yield Static("Question", classes="section-title")
            yield Static(id="question")
            yield Static("Answer 1", classes="section-title")
            yield Static(id="answer1")
            yield Static("Answer 2", classes="section-title")
            yield Static(id="answer2")
        yield Static(id="message")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.show()

    @property
    def current(self) -> LabelItem | None:
        return self.queue[self.position] if self.position < len(self.queue) else None

    def show(self) -> None:
        done = len(self.labels.labelled_by(self.annotator))
        item = self.current
        status = f"{done} of {len(self.items)} labelled by {self.annotator}"
        if item is None:
            self.query_one("#status", Static).update(status + " · nothing left to label")
            for part in ("#question", "#answer1", "#answer2"):
                self.query_one(part, Static).update("")
            return
        self.query_one("#status", Static).update(
            f"{status} · item {self.position + 1} of {len(self.queue)} left")
        first, second = item.answers
        self.query_one("#question", Static).update(Text(item.instance.question))
        self.query_one("#answer1", Static).update(Text(first))
        self.query_one("#answer2", Static).update(Text(second))

    def say(self, message: str) -> None:
        self.query_one("#message", Static).update(Text(message))

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return not isinstance(self.screen, ModalScreen) or action == "quit"

    def action_label(self, key: str) -> None:
        item = self.current
        if item is None:
            return
        try:
            added = self.labels.add(item.instance.id, item.verdict(key), self.annotator,
                                    "gold" if item.gold_first else "perturbed")
        except (OSError, InputError) as error:
            self.say(f"NOT SAVED: {error}. The item stays here; fix the problem and retry.")
            self.bell()
            return
        self.added += added is not None
        self.queue.pop(self.position)
        self.say("" if added else "You had labelled this item already (in another "
                 "session); your first label stands.")
        self.show()

    def action_skip(self) -> None:
        if self.current is not None:
            self.position += 1
            self.show()

    def action_undo(self) -> None:
        try:
            removed = self.labels.undo(self.annotator)
        except (OSError, InputError) as error:
            self.say(f"NOT SAVED: {error}.")
            return
        if removed is None:
            self.say("Nothing to undo.")
            return
        self.added -= 1
        item = next((i for i in self.items if i.instance.id == removed.instance_id), None)
        if item is not None and item not in self.queue:
            self.queue.insert(self.position, item)
        self.say("Undid your last label; it is shown again.")
        self.show()

    def action_help(self) -> None:
        self.push_screen(LabelHelp())
