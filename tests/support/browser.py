"""Headless Chromium, driven by selenium, for the web console's tests in a real browser.

Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Without them the tests
that need a browser are skipped, unless `TESTS_NEED_BROWSER=1` (CI sets it) makes that a
failure. Every WebDriver call runs in a thread: the fakes a daemon talks to live on the
test's event loop, which must keep running while the browser waits for a page.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Where the screenshots go, to be looked at after a run (CI keeps the folder).
ARTIFACTS = Path(os.environ.get("LOREBOT_TEST_ARTIFACTS", ROOT / "test-artifacts"))


class Chromium:
    """One browser window; each method waits for what it asks."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    async def _do(self, call: Any, *args: Any) -> Any:
        return await asyncio.to_thread(call, *args)

    async def open(self, url: str) -> None:
        await self._do(self.driver.get, url)

    async def click(self, css: str) -> None:
        """Click the element and wait for the page it leads to."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.wait import WebDriverWait

        def click() -> None:
            old = self.driver.find_element(By.TAG_NAME, "main")
            self.driver.find_element(By.CSS_SELECTOR, css).click()
            # HTMX swaps the body in place of a navigation: wait until the old one is gone.
            WebDriverWait(self.driver, 20).until(expected_conditions.staleness_of(old))

        await self._do(click)

    async def type(self, css: str, text: str) -> None:
        from selenium.webdriver.common.by import By

        def type_text() -> None:
            field = self.driver.find_element(By.CSS_SELECTOR, css)
            field.clear()
            field.send_keys(text)

        await self._do(type_text)

    async def text(self, css: str = "main") -> str:
        from selenium.webdriver.common.by import By

        return str(await self._do(lambda: self.driver.find_element(By.CSS_SELECTOR, css).text))

    async def title(self) -> str:
        return str(await self._do(lambda: self.driver.title))

    async def run(self, script: str, *args: Any) -> Any:
        return await self._do(self.driver.execute_script, script, *args)

    async def screenshot(self, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        await self._do(self.driver.save_screenshot, str(path))
        return path


def _driver(profile: Path) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,900",
        f"--user-data-dir={profile}",
        # This machine's pages only: every other name fails to resolve.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@pytest.fixture
async def chromium(tmp_path: Path) -> AsyncIterator[Chromium]:
    if not (shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER)):
        if os.environ.get("TESTS_NEED_BROWSER") == "1":
            pytest.fail("Chromium is not installed: apt-get install -y chromium chromium-driver")
        pytest.skip("Chromium is not installed here (apt-get install chromium chromium-driver)")
    driver = await asyncio.to_thread(_driver, tmp_path / "chromium-profile")
    try:
        yield Chromium(driver)
    finally:
        await asyncio.to_thread(driver.quit)
