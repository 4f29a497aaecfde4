"""Makes docs/annotate.svg, the TUI screenshot in docs/how-to/vetting.md: the vetting app on a queue
of the built-in sample's entity and number-error items, after one label.

    python docs/tui_screenshot.py
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from fbi.annotate.app import VettingApp, default_guidelines

from fbi import load_dataset, write_dataset
from fbi.vet import AnnotatorLog, load_queue


async def main() -> None:
    queue = Path(tempfile.mkdtemp()) / "queue.jsonl"
    write_dataset([i for i in load_dataset("sample")
                   if i.category in ("number-errors", "entity")], queue)
    app = VettingApp(load_queue(queue), AnnotatorLog(queue, "screenshot"), default_guidelines())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("v")
        await pilot.pause()
        app.save_screenshot(str(Path(__file__).with_name("annotate.svg")))


if __name__ == "__main__":
    asyncio.run(main())
