"""A real browser for the staff console and the public pages: Debian's chromium and
chromium-driver, headless, driving them through Django's live server. `make test`
installs both when they are missing and it runs as root; without them these tests skip,
saying what to install.
A failing test leaves a screenshot in SCREENSHOT_DIR (default .artifacts/screenshots),
which `make test` names when the run fails; the preference page's test also keeps one of
the page at phone width there."""

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM_BINARY", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
SCREENSHOT_DIR = Path(
    os.environ.get(
        "SCREENSHOT_DIR", Path(__file__).resolve().parents[2] / ".artifacts" / "screenshots"
    )
)
MISSING = (
    "The browser tests need Debian's chromium and chromium-driver: "
    "sudo apt-get install -y chromium chromium-driver "
    "(or set CHROMIUM_BINARY and CHROMEDRIVER to where they are)."
)


def _found(path: str) -> bool:
    return Path(path).exists() or shutil.which(path) is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def browser(request: pytest.FixtureRequest) -> Iterator[Any]:
    if not (_found(CHROMIUM) and _found(CHROMEDRIVER)):
        pytest.skip(MISSING)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1100",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)
            driver.save_screenshot(str(SCREENSHOT_DIR / f"{name}.png"))
        driver.quit()
