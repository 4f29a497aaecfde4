"""The vetting TUI: label perturbations one key at a time, never losing work.

Layout and colours are in ``app.tcss``. Every action is written to this annotator's
event log (and fsynced) before the screen moves on; if the write fails, the error is
shown and the item stays where it was, unsaved. Other annotators' labels are never
read here.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Markdown, Static, TextArea

from fbi.diffing import word_diff
from fbi.records import Instance
from fbi.taxonomy import get_category
from fbi.trajectories import changed_step, step_changes
from fbi.vet import LABEL_KEYS, AnnotatorLog


def diff_text(gold: str, perturbed: str) -> Text:
    """The perturbed answer with deletions struck through in red, insertions in green."""
    text = Text()
    for op, chunk in word_diff(gold, perturbed):
        if op == "delete":
            text.append(chunk, style="strike red")
        elif op == "insert":
            text.append(chunk, style="bold green")
        else:
            text.append(chunk)
    return text


def trajectory_diff_text(gold: str, perturbed: str, changed: int | None) -> Text | None:
    """An agent's perturbed trajectory step by step (issue 54, `step_changes`): a
    removed step struck through in red, an added one in green, a changed one with its
    word diff, and ``changed`` — the step the rationale names — marked " changed ". None
    when the answers are not renderings of trajectories."""
    changes = step_changes(gold, perturbed)
    if changes is None:
        return None
    text = Text()
    for change in changes:
        if change.after is None:
            text.append(f"(removed) {change.before}\n", style="strike red")
            continue
        if change.number == changed:
            text.append(" changed ", style="bold reverse")
            text.append(" ")
        text.append(f"Step {change.number} · ", style="bold")
        text.append_text(Text(change.after, style="green") if change.before is None
                         else diff_text(change.before, change.after))
        text.append("\n")
    if changed is not None and changed > sum(c.after is not None for c in changes):
        text.append(f" changed  step {changed}: the trajectory now ends before it",
                    style="bold reverse")
    return text.rstrip() or text


class NoteScreen(ModalScreen[str | None]):
    """A one-line note about the current item."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, note: str | None):
        super().__init__()
        self.note = note or ""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Note for this item (Enter saves, Esc cancels)")
            yield Input(value=self.note, id="note")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class EditScreen(ModalScreen[str | None]):
    """Edit the perturbed answer. Keys type into the editor here, never label anything."""

    BINDINGS = [Binding("ctrl+s", "save", "save"), Binding("escape", "cancel", "cancel")]

    def __init__(self, answer: str):
        super().__init__()
        self.answer = answer

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("Edit the perturbed answer (Ctrl+S saves, Esc cancels)")
            yield TextArea(self.answer, id="editor")

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    # q quits from here too, as the help says; Esc and ? only close the help.
    BINDINGS = [Binding("escape,question_mark", "close", "close"),
                Binding("q", "app.quit", "quit")]

    def compose(self) -> ComposeResult:
        lines = ["[b]Keys[/b]", ""]
        lines += [f"  [b]{key}[/b]  {label}: {meaning}"
                  for key, (label, meaning) in LABEL_KEYS.items()]
        lines += ["", "  [b]→ / l[/b]  next item      [b]← / h[/b]  previous item",
                  "  [b]space[/b]  skip (recorded)  [b]z[/b]  undo the last label, note or edit",
                  "  [b]m[/b]  note   [b]e[/b]  edit the perturbed answer   [b]g[/b]  guidelines",
                  "  [b]?[/b]  this help   [b]q[/b]  quit (everything is already saved)",
                  "", "Esc closes this."]
        with Vertical(id="dialog"):
            yield Static("\n".join(lines))

    def action_close(self) -> None:
        self.dismiss(None)


class VettingApp(App):
    """Label a queue of perturbation candidates."""

    CSS_PATH = "app.tcss"
    TITLE = "fbi annotate"
    ENABLE_COMMAND_PALETTE = False  # nothing to run from it; its key took footer room
    # The footer shows help and quit first, then the labels: at 80 columns every one of
    # them fits. The other keys are in the help (?), always one key away.
    BINDINGS = [
        Binding("question_mark", "help", "keys"),
        Binding("q", "quit", "quit"),
        *[Binding(key, f"label('{label}')", label) for key, (label, _) in LABEL_KEYS.items()],
        Binding("right,l", "move(1)", "next", show=False),
        Binding("left,h", "move(-1)", "previous", show=False),
        Binding("space", "skip", "skip", show=False),
        Binding("z", "undo", "undo", show=False),
        Binding("m", "note", "note", show=False),
        Binding("e", "edit", "edit", show=False),
        Binding("g", "toggle_guidelines", "guidelines", show=False),
    ]

    def __init__(self, items: list[Instance], log: AnnotatorLog, guidelines: str):
        super().__init__()
        self.items = items
        self.annotations = log
        self.guidelines = guidelines
        unlabelled = [i for i, item in enumerate(items) if not log.label_of(item.id)]
        self.index = unlabelled[0] if unlabelled else 0  # resume where work stopped
        # Kept current on every event, so the status line costs nothing per key press.
        self.position = {item.id: i for i, item in enumerate(items)}
        self.labelled = len(items) - len(unlabelled)

    # -- layout --------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with Horizontal(id="body"):
            with VerticalScroll(id="item"):
                yield Static("Instruction", classes="section-title")
                yield Static(id="instruction")
                yield Static("Gold answer", classes="section-title")
                yield Static(id="gold")
                yield Static("Perturbed answer (red: removed, green: added)",
                             classes="section-title", id="perturbed-title")
                yield Static(id="perturbed")
                yield Static("What the generator says it changed", classes="section-title")
                yield Static(id="rationale")
                yield Static(id="flags", classes="flags")
                yield Static("Category", classes="section-title")
                yield Static(id="category")
                yield Static("Your note", classes="section-title")
                yield Static(id="note")
            yield Markdown(self.guidelines, id="guidelines")
        yield Static(id="message")
        yield Footer(compact=True)  # every key of the footer fits 80 columns

    def on_mount(self) -> None:
        self.show()
        if self.items and self.labelled == len(self.items):
            self.say("Every item is labelled; you can still review and change labels.")

    def _label_of(self, item: Instance) -> str | None:
        return self.annotations.label_of(item.id)

    def _record(self, instance_id: str, action: str, **fields) -> None:
        """Save an event and keep the labelled count current. Raises OSError."""
        had_label = bool(self.annotations.label_of(instance_id))
        self.annotations.record(instance_id, action, **fields)  # type: ignore[arg-type]
        if instance_id in self.position:
            self.labelled += bool(self.annotations.label_of(instance_id)) - had_label

    def show(self) -> None:
        if not self.items:
            self.query_one("#status", Static).update("Nothing to vet with these filters.")
            return
        item = self.items[self.index]
        state = self.annotations.state.get(item.id)
        done = self.labelled
        label = self._label_of(item) or "unlabelled"
        self.query_one("#status", Static).update(  # wraps, never cut, at 80 columns
            f"item {self.index + 1} of {len(self.items)} · {item.category} · {label} · "
            f"{done}/{len(self.items)} labelled ({100 * done // len(self.items)}%) · "
            f"{self.annotations.annotator}")
        perturbed = state.edited_answer if state and state.edited_answer else \
            item.perturbed_answer
        self.query_one("#instruction", Static).update(Text(item.question))
        self.query_one("#gold", Static).update(Text(item.gold_answer))
        changed = item.provenance.changed_step if item.provenance and not (
            state and state.edited_answer) else changed_step(item.gold_answer, perturbed)
        steps = trajectory_diff_text(item.gold_answer, perturbed, changed)
        self.query_one("#perturbed-title", Static).update(
            "Perturbed trajectory, step by step (red: removed, green: added)" if steps
            else "Perturbed answer (red: removed, green: added)")
        diff = steps or diff_text(item.gold_answer, perturbed)
        if state and state.edited_answer:
            diff = Text("(your edit) ", style="italic") + diff
        self.query_one("#perturbed", Static).update(diff)
        self.query_one("#rationale", Static).update(Text(item.rationale or "(none given)"))
        self.query_one("#flags", Static).update(
            Text("pre-screen flags: " + ", ".join(item.flags)) if item.flags else "")
        category = get_category(item.category)
        self.query_one("#category", Static).update(
            Text(f"{category.display_name}: {category.description}"))
        self.query_one("#note", Static).update(Text(state.note if state and state.note
                                                    else "(none)"))

    def say(self, message: str) -> None:
        self.query_one("#message", Static).update(Text(message))

    # -- actions -------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # While a dialog is open its keys belong to it: nothing labels or moves.
        return not isinstance(self.screen, ModalScreen) or action == "quit"

    def _save(self, action: str, **fields) -> bool:
        item = self.items[self.index]
        try:
            self._record(item.id, action, **fields)
        except OSError as error:
            self.say(f"NOT SAVED: {error}. The item stays here; fix the problem and retry.")
            self.bell()
            return False
        self.say("")
        return True

    def action_label(self, label: str) -> None:
        if self.items and self._save("label", label=label):
            self.action_move(1)

    def action_move(self, step: int) -> None:
        if self.items:
            self.index = max(0, min(len(self.items) - 1, self.index + step))
            self.show()

    def action_skip(self) -> None:
        if self.items and self._save("skip"):
            self.action_move(1)

    def action_undo(self) -> None:
        event = self.annotations.last_undoable()
        if event is None:
            self.say("Nothing to undo.")
            return
        if event.instance_id in self.position:
            self.index = self.position[event.instance_id]
        try:
            self._record(event.instance_id, "undo", undoes=event.event_id)
        except OSError as error:
            self.say(f"NOT SAVED: {error}.")
            return
        self.say(f"Undid the {event.action} on this item.")
        self.show()

    def action_note(self) -> None:
        if not self.items:
            return
        state = self.annotations.state.get(self.items[self.index].id)

        def done(note: str | None) -> None:
            if note is not None and self._save("note", note=note):
                self.show()

        self.push_screen(NoteScreen(state.note if state else None), done)

    def action_edit(self) -> None:
        if not self.items:
            return
        item = self.items[self.index]
        state = self.annotations.state.get(item.id)
        current = state.edited_answer if state and state.edited_answer else item.perturbed_answer

        def done(answer: str | None) -> None:
            if answer is not None and answer != current and \
                    self._save("edit", edited_answer=answer):
                self.show()

        self.push_screen(EditScreen(current), done)

    def action_toggle_guidelines(self) -> None:
        self.query_one("#guidelines").toggle_class("shown")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())


def default_guidelines() -> str:
    return (Path(__file__).with_name("guidelines.md")).read_text(encoding="utf-8")
