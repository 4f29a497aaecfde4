"""Makes the screenshots of docs/how-to/view.md and docs/how-to/inspect.md: the embedded
SmolLM2 judge on the built-in sample's quick set (two strategies), served by `fbi view`,
and the same run exported to Inspect and shown by `inspect view`, photographed in
Debian's headless chromium through Selenium (the dev extra).

    python docs/view_screenshot.py [WORK_DIR]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # tests/browser.py drives chromium

from browser import chromium  # noqa: E402

from fbi.view import Viewer, ViewServer  # noqa: E402


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
    run = work / "fbi-runs" / "smollm2-135m__quick"
    subprocess.run([sys.executable, "-m", "fbi", "evaluate", "--strategy", "vanilla",
                    "--strategy", "pairwise", "--output", str(run)], check=True,
                   env={**os.environ, "FBI_CACHE": str(work / "cache.sqlite")})
    server = ViewServer(Viewer([work / "fbi-runs"]), port=0)
    server.start()
    from selenium.webdriver.common.by import By

    with chromium(work / "profile", width=1280, height=900) as driver:
        driver.get(server.url + "grid")
        driver.save_screenshot(str(HERE / "view-grid.png"))
        driver.find_element(By.CSS_SELECTOR, "#grid a.rate").click()
        driver.find_element(By.CSS_SELECTOR, "#instances tbody tr a").click()
        driver.set_window_size(1280, 1400)
        driver.save_screenshot(str(HERE / "view-instance.png"))
    server.shutdown()
    subprocess.run([sys.executable, "-m", "fbi", "export", "inspect", str(run), "--output",
                    str(work / "inspect-logs")], check=True)
    inspect_view = subprocess.Popen(
        [sys.executable, "-m", "inspect_ai", "view", "start", "--log-dir",
         str(work / "inspect-logs"), "--host", "127.0.0.1", "--port", "7576"])
    try:
        with chromium(work / "profile", width=1280, height=800) as driver:
            for _ in range(60):  # until the viewer answers and has drawn the samples
                try:
                    driver.get("http://127.0.0.1:7576/")
                    driver.find_element(By.XPATH, "//*[contains(text(), 'Samples')]")
                    break
                except Exception:
                    time.sleep(1)
            time.sleep(3)
            driver.save_screenshot(str(HERE / "inspect-view.png"))
    finally:
        inspect_view.terminate()
    print(f"wrote view-grid.png, view-instance.png and inspect-view.png in {HERE} from "
          f"{work}")


if __name__ == "__main__":
    main()
