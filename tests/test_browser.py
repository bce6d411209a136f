"""End to end in a real browser: `streamlit run app.py` on a free local port, driven by headless Chromium (Selenium).

Needs Debian's `chromium` and `chromium-driver` (apt) and the `selenium` package; skipped with the reason otherwise.
The screenshot goes to $RISE_SCREENSHOT_DIR (default: the test's tmp_path).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from explorer_env import TRIGGER_QUERY, build_explorer_env

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--window-size=1440,2200"]
SERVER_START_S = 90
RESULTS_S = 120


def _skip_reason() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install -y chromium chromium-driver)"
    if not Path(CHROMEDRIVER).exists():
        return "chromedriver is missing (apt-get install -y chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_server(url: str, proc: subprocess.Popen, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"streamlit did not answer on {url} within {timeout} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A live explorer on a tiny model and a prebuilt tiny index; yields its base URL."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("browser")
    env = {**os.environ, **build_explorer_env(root)}
    port = free_port()
    log = open(root / "streamlit.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(url, proc, SERVER_START_S)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def browser(server):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def _type(driver, label: str, text: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    selector = f'textarea[aria-label="{label}"]'
    box = WebDriverWait(driver, 60).until(ec.element_to_be_clickable((By.CSS_SELECTOR, selector)))
    box.click()
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(text)
    box.send_keys(Keys.CONTROL, Keys.ENTER)  # commit the value (a rerun), as a user pressing Ctrl+Enter


def _button(driver, text: str):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    xpath = f'//button[.//p[normalize-space()="{text}"]]'
    return WebDriverWait(driver, 60).until(ec.element_to_be_clickable((By.XPATH, xpath)))


def test_attribute_page_in_a_real_browser(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{server}/Attribute")
    _type(browser, "Prompt", "tell me a story")
    _type(browser, "Generation (the query to attribute)", TRIGGER_QUERY)
    time.sleep(1.0)  # let the rerun of the commit settle before clicking
    _button(browser, "Attribute").click()

    def has_results(driver) -> bool:
        text = driver.find_element(By.TAG_NAME, "body").text
        charts = driver.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"] .legendtext')
        return "Most influential training examples" in text and len(charts) >= 2

    WebDriverWait(browser, RESULTS_S, poll_frequency=0.5).until(has_results)
    time.sleep(2.0)  # the token highlights render after the chart
    body = browser.find_element(By.TAG_NAME, "body").text
    legend = [e.text for e in browser.find_elements(By.CSS_SELECTOR, '[data-testid="stPlotlyChart"] .legendtext')]
    assert any(t.startswith("RH") for t in legend) and any(t.startswith("GH") for t in legend), legend
    assert browser.find_elements(By.CSS_SELECTOR, '[data-testid="stDataFrame"]'), "the results table"
    assert "Tokens that carry the score" in body and "Traceback" not in body
    assert not browser.find_elements(By.CSS_SELECTOR, '[data-testid="stException"]')

    out = Path(os.environ.get("RISE_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    shot = out / "attribute_page_browser.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
