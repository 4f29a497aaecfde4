"""The vetting TUI through Textual's pilot, its event log, agreement, adjudication, export."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner
from fbi.annotate.app import VettingApp

from fbi import load_dataset, write_dataset
from fbi.cli import main
from fbi.vet import AnnotatorLog, load_queue, log_path


@pytest.fixture
def queue(tmp_path):
    path = tmp_path / "queue.jsonl"
    instances = [i for i in load_dataset("sample") if i.category in ("entity", "spelling")]
    write_dataset(instances, path)  # 6 items: 3 entity, 3 spelling
    return path


async def drive(queue, annotator, *keys, size=(120, 45)):
    """Press keys in the app; return what the screen showed at the end."""
    items = load_queue(queue)
    log = AnnotatorLog(queue, annotator)
    app = VettingApp(items, log, "# guidelines")
    async with app.run_test(size=size) as pilot:
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        main = app.screen_stack[0]
        seen = {
            "index": app.index,
            "status": str(main.query_one("#status").render()),
            "message": str(main.query_one("#message").render()),
            "screen": type(app.screen).__name__,
            "guidelines shown": main.query_one("#guidelines").has_class("shown"),
            "perturbed": main.query_one("#perturbed").render(),
        }
        return seen, log


def events(queue, annotator):
    return [json.loads(line) for line in log_path(queue, annotator).read_text().splitlines()]


async def test_labelling_saves_and_moves_on(queue):
    seen, _ = await drive(queue, "ana", "v", "x", "s")
    assert seen["index"] == 3
    assert [(e["action"], e["label"]) for e in events(queue, "ana")] == [
        ("label", "valid"), ("label", "invalid"), ("label", "score-invariant")]
    assert "item 4 of 6" in seen["status"] and "3/6 labelled" in seen["status"]
    ids = [i.id for i in load_queue(queue)]
    assert [e["instance_id"] for e in events(queue, "ana")] == ids[:3]


async def test_undo_skip_and_moving(queue):
    seen, log = await drive(queue, "bo", "v", "x", "z", "space", "left", "left", "right")
    state = log.state
    ids = [i.id for i in load_queue(queue)]
    assert state[ids[0]].label.value == "valid"
    assert ids[1] not in state  # undone
    actions = [e["action"] for e in events(queue, "bo")]
    assert actions == ["label", "label", "undo", "skip"]
    assert seen["index"] == 1  # undo went back to item 2, skip moved to 3, ←← to 1, → to 2


async def test_edit_on_a_modal_screen_keeps_label_keys_out(queue):
    _, log = await drive(queue, "cy", "e", "v", "x", "ctrl+s")
    (event,) = events(queue, "cy")
    first = load_queue(queue)[0]
    assert event["action"] == "edit" and event["edited_answer"] == "vx" + first.perturbed_answer
    assert log.state[first.id].label is None  # "v" and "x" typed, labelled nothing
    assert first.perturbed_answer == load_queue(queue)[0].perturbed_answer  # queue untouched


async def test_escape_cancels_an_edit_and_notes_are_saved(queue):
    await drive(queue, "dee", "e", "a", "escape", "m", "t", "y", "p", "o", "enter")
    (event,) = events(queue, "dee")
    assert event["action"] == "note" and event["note"] == "typo"


async def test_restart_resumes_at_the_first_unlabelled_item(queue):
    await drive(queue, "eve", "v", "v", "right", "v")  # labels items 1, 2 and 4
    seen, _ = await drive(queue, "eve")
    assert seen["index"] == 2 and "item 3 of 6" in seen["status"]
    other, _ = await drive(queue, "fay")  # another annotator starts at the top
    assert other["index"] == 0


async def test_a_failed_write_is_shown_and_the_item_stays(queue):
    # The log is a link into a folder that does not exist: every write fails.
    log_path(queue, "gus").symlink_to(queue.parent / "missing" / "log.jsonl")
    seen, log = await drive(queue, "gus", "v")
    assert seen["index"] == 0 and log.events == []
    assert "NOT SAVED" in seen["message"]


async def test_help_and_guidelines(queue):
    seen, _ = await drive(queue, "hal", "question_mark")
    assert seen["screen"] == "HelpScreen"
    seen, _ = await drive(queue, "hal", "g")
    assert seen["guidelines shown"]


async def test_the_diff_marks_deletions_and_insertions(queue):
    seen, _ = await drive(queue, "ivy")
    spans = {str(span.style) for span in seen["perturbed"].spans}
    assert any("strike" in s and "red" in s for s in spans)
    assert any("bold" in s and "green" in s for s in spans)


async def test_a_trajectory_is_shown_step_by_step_with_the_changed_step_marked(tmp_path):
    """Issue 54: the booking trajectory (1 search, 2 its result, 3 "Shall I book it?", 4
    "Yes", 5 book, 6 its result, 7 the answer) without its confirmation: steps 3 and 4
    shown removed, the booking call — now step 3 — marked, no later step shown changed
    for its new number; then a tool result turned into an error, marked."""
    from fbi.perturb import trajectory_candidates
    from fbi.trajectories import sample_trajectories

    booking = next(t for t in sample_trajectories() if t.domain == "booking")
    made, _ = trajectory_candidates([booking], ["trajectory/unconfirmed-action",
                                                "trajectory/ignored-error"])
    path = tmp_path / "agents.jsonl"
    write_dataset(made, path)
    seen, _ = await drive(path, "ivy")
    lines = seen["perturbed"].plain.splitlines()
    assert [line for line in lines if line.startswith("(removed)")] == [
        "(removed) assistant:", "(removed) user:"]
    assert " changed  Step 3 · assistant:" in lines
    assert lines[lines.index(" changed  Step 3 · assistant:") + 1].startswith(
        "  calls book_flight(")
    assert not any("green" in str(span.style) for span in seen["perturbed"].spans)
    seen, _ = await drive(path, "ivy", "l")
    marked = [line for line in seen["perturbed"].plain.splitlines() if " changed " in line]
    assert len(marked) == 1 and "returned an error" in marked[0]


def test_killing_the_app_loses_no_submitted_label(queue, tmp_path):
    """A real process labels three items and is killed with SIGKILL mid-session."""
    script = tmp_path / "session.py"
    script.write_text(textwrap.dedent(f"""
        import asyncio, os, signal
        from fbi.annotate.app import VettingApp
        from fbi.vet import AnnotatorLog, load_queue

        async def main():
            log = AnnotatorLog({str(queue)!r}, "kim")
            app = VettingApp(load_queue({str(queue)!r}), log, "")
            async with app.run_test() as pilot:
                for key in ("v", "x", "n"):
                    await pilot.press(key)
                os.kill(os.getpid(), signal.SIGKILL)

        asyncio.run(main())
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=120)
    assert result.returncode == -signal.SIGKILL
    assert [e["label"] for e in events(queue, "kim")] == ["valid", "invalid", "not-sure"]


def test_screenshot_of_the_tui(queue, tmp_path):
    import asyncio

    async def run():
        items = load_queue(queue)
        app = VettingApp(items, AnnotatorLog(queue, "shot"), "# g")
        async with app.run_test(size=(110, 40)) as pilot:
            await pilot.press("v")
            return app.export_screenshot()

    svg = asyncio.run(run())
    assert svg.startswith("<svg") and "item 2 of 6" in svg.replace("&#160;", " ")


# ----------------------------------------------------------------- agreement and beyond


def write_log(queue, annotator, labels: dict[str, str]):
    log = AnnotatorLog(queue, annotator)
    for instance_id, label in labels.items():
        log.record(instance_id, "label", label=label)


def test_agreement_matches_statsmodels_and_krippendorff():
    import krippendorff
    import numpy as np
    from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa

    from fbi.metrics import agreement_report, cohen_kappa, fleiss_table, krippendorff_alpha
    from fbi.metrics import fleiss_kappa as our_fleiss

    values = ["valid", "invalid", "not-sure"]
    a = ["valid", "valid", "invalid", "valid", "not-sure", "invalid", "valid", "valid"]
    b = ["valid", "invalid", "invalid", "valid", "not-sure", "valid", "valid", "invalid"]
    c = ["valid", "valid", "invalid", "invalid", "valid", "invalid", "valid", "valid"]
    table = {name: {f"i{n}": label for n, label in enumerate(labels)}
             for name, labels in (("a", a), ("b", b), ("c", c))}
    confusion = np.array([[sum(x == r and y == s for x, y in zip(a, b, strict=True))
                           for s in values]
                          for r in values])
    assert cohen_kappa(a, b) == pytest.approx(cohens_kappa(confusion).kappa)
    counts = fleiss_table(table)
    assert our_fleiss(counts) == pytest.approx(fleiss_kappa(counts, method="fleiss"))
    # the report `fbi annotate agreement` and the dataset card read: a typed model
    report = agreement_report(table, {f"i{n}": "entity" if n < 4 else "grammar"
                                      for n in range(8)})
    assert report.overall.items == 8
    assert report.overall.fleiss_kappa == pytest.approx(fleiss_kappa(counts, method="fleiss"))
    pair = next(p for p in report.pairs if (p.a, p.b) == ("a", "b"))
    assert pair.cohen_kappa == pytest.approx(cohens_kappa(confusion).kappa)
    assert pair.confusion == [[int(confusion[values.index(row), values.index(column)])
                               for column in pair.labels] for row in pair.labels]
    assert set(report.categories) == {"entity", "grammar"}
    # Krippendorff's alpha with a missing label
    del table["c"]["i3"]
    matrix = [[values.index(table[r][f"i{n}"]) if f"i{n}" in table[r] else np.nan
               for n in range(8)] for r in ("a", "b", "c")]
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    assert krippendorff_alpha(table) == pytest.approx(expected)


def test_agreement_edge_cases():
    from fbi.metrics import cohen_kappa, krippendorff_alpha, percent_agreement

    assert cohen_kappa(["valid"] * 4, ["valid"] * 4) is None  # p_e = 1: undefined
    assert percent_agreement({"a": {"x": "valid"}}) is None
    assert krippendorff_alpha({"a": {"x": "valid"}, "b": {"x": "valid"}}) is None
    assert percent_agreement({"a": {"x": "valid", "y": "invalid"},
                              "b": {"x": "valid", "y": "valid"}}) == 0.5


def test_agreement_over_one_item_says_n_a_not_minus_one(queue):
    (first, *_) = [i.id for i in load_queue(queue)]
    write_log(queue, "ann", {first: "valid"})
    write_log(queue, "ben", {first: "invalid"})
    result = CliRunner().invoke(main, ["annotate", "agreement", str(queue)],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines()
            if line.startswith(("│ all ", "│ spelling ", "│ entity "))]
    assert rows and all("n/a" in row and "-1.000" not in row for row in rows)
    assert "Cohen's κ ann × ben: n/a over 1 items" in result.output
    assert "0.0" in rows[0]  # the % agreement is still shown


def test_agreement_adjudication_and_export(queue, tmp_path):
    ids = [i.id for i in load_queue(queue)]
    write_log(queue, "ann", {ids[0]: "valid", ids[1]: "valid", ids[2]: "invalid",
                             ids[3]: "score-invariant", ids[4]: "not-relevant"})
    write_log(queue, "ben", {ids[0]: "valid", ids[1]: "invalid", ids[2]: "invalid",
                             ids[3]: "score-invariant", ids[4]: "not-relevant"})
    AnnotatorLog(queue, "ann").record(ids[0], "edit", edited_answer="An edited answer.")
    runner = CliRunner()
    result = runner.invoke(main, ["annotate", "agreement", str(queue)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "80.0" in result.output  # 4 of 5 items agree, in % like every other rate
    assert "Cohen's κ ann × ben" in result.output
    # export before adjudication: the disagreement is left out and counted
    out = tmp_path / "vetted.jsonl"
    result = runner.invoke(main, ["annotate", "export", str(queue), "--output", str(out)],
                           terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "dropped: disagreement" in result.output and "adjudicate" in result.output
    vetted = {i.id: i for i in load_dataset(str(out))}
    assert set(vetted) == {ids[0], ids[3]}
    assert vetted[ids[0]].perturbed_answer == "An edited answer."
    first = load_queue(queue)[0]
    assert vetted[ids[0]].label.value == "valid" and vetted[ids[0]].category == first.category
    assert vetted[ids[3]].category == "score-invariant"
    # adjudicate the disagreement with the TUI's keys: "v" for valid; the annotators'
    # notes and edits are shown
    AnnotatorLog(queue, "ben").record(ids[1], "note", note="Only a typo, not a real error.")
    result = runner.invoke(main, ["annotate", "adjudicate", str(queue), "--adjudicator",
                                  "lead"], input="v\n", terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "ann: valid" in result.output and "ben: invalid" in result.output
    assert "note: Only a typo, not a real error." in result.output
    assert "v=valid x=invalid s=score-invariant" in result.output
    record = json.loads(queue.with_name("queue.adjudications.jsonl").read_text())
    assert record["final_label"] == "valid" and record["adjudicator"] == "lead"
    assert record["labels_seen"] == {"ann": "valid", "ben": "invalid"}
    runner.invoke(main, ["annotate", "export", str(queue), "--output", str(out)])
    assert {i.id for i in load_dataset(str(out))} == {ids[0], ids[1], ids[3]}


def test_annotate_command_needs_an_annotator(queue):
    result = CliRunner().invoke(main, ["annotate", str(queue)])
    assert result.exit_code == 2 and "--annotator" in result.output
    bad = CliRunner().invoke(main, ["annotate", str(queue), "--annotator", "a/b"])
    assert bad.exit_code == 2 and "not usable in a file name" in bad.output


def test_default_guidelines_ship_with_the_package():
    from fbi.annotate.app import default_guidelines

    text = default_guidelines()
    assert "# Vetting guidelines" in text and "Copying numbers" in text


def test_a_torn_edit_of_100_kb_is_repaired_before_the_next_label(tmp_path):
    """Issue 22: an annotator killed while saving a long edit leaves a torn line larger
    than any fixed window; the next label must not glue onto it, and the log opens."""
    from fbi import load_dataset, write_dataset
    from fbi.vet import AnnotatorLog

    queue = tmp_path / "queue.jsonl"
    instances = [i for i in load_dataset("sample") if i.category == "entity"]
    write_dataset(instances, queue)
    log = AnnotatorLog(queue, "ann")
    log.record(instances[0].id, "label", label="valid")
    whole = log.path.read_bytes()
    edit = log.record(instances[1].id, "edit", edited_answer="long " * 20_000)  # 100 kB
    full = log.path.read_bytes()
    assert len(full) - len(whole) > 100_000
    torn = full[: len(whole) + 100_000]  # killed mid-write, 100 kB of it on disk
    log.path.write_bytes(torn)
    reopened = AnnotatorLog(queue, "ann")  # the torn tail is dropped when reading
    assert reopened.label_of(instances[0].id) == "valid"
    assert edit.event_id not in {e.event_id for e in reopened.events}
    reopened.record(instances[2].id, "label", label="invalid")
    assert log.path.read_bytes().startswith(whole)  # the torn line is gone, whole
    again = AnnotatorLog(queue, "ann")  # opens: no glued line
    assert again.label_of(instances[0].id) == "valid"
    assert again.label_of(instances[2].id) == "invalid"
    assert len(log.path.read_bytes().splitlines()) == 2


async def test_at_80_by_24_nothing_is_cut_and_q_quits_from_the_help(queue):
    """Issue 26: at 80×24 the status line lost the annotator, the footer hid ? and q,
    and q in the help window only closed the help."""
    import re

    items = load_queue(queue)
    app = VettingApp(items, AnnotatorLog(queue, "annotator-name"), "# g")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        text = re.sub(r"<[^>]+>", "", app.export_screenshot()).replace("&#160;", " ")
        assert "item 1 of 6" in text and "annotator-name" in text
        for key in ("keys", "quit", "valid", "invalid", "score-invariant", "not-relevant",
                    "not-sure"):
            assert key in text, key
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running and app.return_code in (0, None)
