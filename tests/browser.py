"""Headless Chromium for the web pages' tests (fbi view), driven by Selenium through
Debian's chromedriver: no browser is downloaded (Selenium Manager is told to stay
offline). A test that needs it skips, with the reason, where Chromium, its driver or
Selenium is missing; `.ci/run` installs Debian's chromium and chromium-driver."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest


def _found() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.skip("Debian's chromium and chromium-driver are not installed "
                    "(apt-get install chromium chromium-driver)")
    pytest.importorskip("selenium", reason="selenium is in the dev extra")
    return browser, driver


@contextlib.contextmanager
def chromium(profile: Path, width: int = 1280, height: int = 1000) -> Iterator:
    """A headless Chromium session (a Selenium WebDriver) with its own profile folder."""
    browser, driver_path = _found()
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager: never fetch a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--disable-dev-shm-usage",
                     f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def resource_urls(driver) -> list[str]:
    """Every URL the open page fetched (the document, stylesheets, images, …)."""
    return [driver.current_url, *driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")]


def click_and_load(driver, element, timeout_s: float = 300) -> None:
    """Click ``element`` and wait until the page it opens has replaced this one and
    loaded: on a busy machine the next lookup could otherwise run between the pages
    (no element) or on the old one. A deadline for a page that never comes, not a bound
    on how fast it comes."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    old = driver.find_element(By.TAG_NAME, "html")
    element.click()
    wait = WebDriverWait(driver, timeout_s)
    wait.until(expected_conditions.staleness_of(old))
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")

