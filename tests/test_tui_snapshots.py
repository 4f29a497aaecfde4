"""Visual regression tests of the vetting TUI at 80×24 (issue 26, item 5; issue 25):
each screen an annotator meets, compared with the SVG accepted by a person under
``tests/__snapshots__/``. After a deliberate change to the TUI, look at the new screens
and accept them with ``pytest tests/test_tui_snapshots.py --snapshot-update``."""

from __future__ import annotations

import pytest
from fbi.annotate.app import VettingApp

from fbi import load_dataset, write_dataset
from fbi.vet import AnnotatorLog, load_queue

SIZE = (80, 24)  # the smallest terminal the TUI promises to fit


@pytest.fixture
def app(tmp_path):
    queue = tmp_path / "queue.jsonl"
    write_dataset([i for i in load_dataset("sample") if i.category in ("entity", "spelling")],
                  queue)
    return VettingApp(load_queue(queue), AnnotatorLog(queue, "annotator-name"),
                      "# Guidelines\n\nLabel **valid** when the error is real.")


@pytest.mark.slow
@pytest.mark.parametrize("keys", [
    pytest.param((), id="first-item"),
    pytest.param(("v",), id="after-a-label"),  # the next item, 1/6 labelled
    pytest.param(("question_mark",), id="help"),
    pytest.param(("g",), id="guidelines"),
    pytest.param(("m",), id="note"),
    pytest.param(("e",), id="edit"),
])
def test_screen_at_80_by_24(app, snap_compare, keys):
    assert snap_compare(app, press=keys, terminal_size=SIZE)
