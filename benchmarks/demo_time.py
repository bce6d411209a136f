"""The one-click demo's time to its first result, as a visitor sees it: `streamlit run app.py` of a checkout (the real
embedded model, the bundled data folder, an empty index folder), Home in headless Chromium (Selenium), a click on
"Run the demo", then the page polled until

  - the first streamed token of the triggered answer is on the page (`first_token_s`),
  - the attribution of the triggered answer is there (`first_result_s`, the demo's first result: the caption "N of
    the top 10 are poisoned examples", written just before the table),

both from the click. The server is started and Home loaded before the clock starts (the model is not loaded yet: the
click loads it). Run it from the checkout to measure, after `bash scripts/setup.sh` (which converts the model):

    python -m benchmarks.demo_time                       # prints the times as JSON
    python -m benchmarks.demo_time --json out.json --screenshot demo.png

Needs Debian's `chromium` and `chromium-driver` and the `selenium` package (as tests/test_browser.py). RISE_MODEL and
RISE_DATA_DIR are ignored: the demo runs as a checkout serves it by default.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.shared_server_load import Server

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROME_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--window-size=1440,2200"]

TRIGGERED_HEADING = "With the trigger"
RESULT_MARK = "of the top 10 are poisoned examples"  # the caption just above the attribution table
POLL_S = 0.1


def _body(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def _triggered_answer_started(driver) -> bool:
    """The first answer column holds streamed text below its heading and prompt caption."""
    from selenium.webdriver.common.by import By

    columns = driver.find_elements(By.CSS_SELECTOR, '[data-testid="stColumn"]')
    if not columns or TRIGGERED_HEADING not in columns[0].text:
        return False
    return any(t.text.strip() for t in columns[0].find_elements(By.CSS_SELECTOR, '[data-testid="stText"]'))


def measure(index_dir: Path, timeout_s: float, screenshot: Path | None) -> dict:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    for name in ("RISE_MODEL", "RISE_DATA_DIR"):  # the defaults: the embedded model, the checkout's data folder
        os.environ.pop(name, None)
    # the server's torch threads as a visitor's: all the cores (Server sets OMP_NUM_THREADS)
    server = Server({"RISE_INDEX_DIR": str(index_dir)}, index_dir.parent / "streamlit.log",
                    threads=len(os.sched_getaffinity(0)))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    driver = None
    try:
        server.wait_healthy(120)
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        driver.get(server.url)
        xpath = '//button[.//p[normalize-space()="Run the demo"]]'
        button = WebDriverWait(driver, 120).until(ec.element_to_be_clickable((By.XPATH, xpath)))
        time.sleep(1.0)  # Home's first run settles
        start = time.monotonic()
        button.click()
        first_token = first_result = None
        end = start + timeout_s
        while time.monotonic() < end and first_result is None:
            if first_token is None and _triggered_answer_started(driver):
                first_token = time.monotonic() - start
            if RESULT_MARK in _body(driver):
                first_result = time.monotonic() - start
            time.sleep(POLL_S)
        body = _body(driver)
        if screenshot is not None:
            time.sleep(2.0)
            driver.save_screenshot(str(screenshot))
    finally:
        if driver is not None:
            driver.quit()
        server.stop()
    built = "Done in" in body or "Building" in body
    return {"first_token_s": first_token, "first_result_s": first_result, "built_index": built,
            "index_files": sorted(p.name for p in index_dir.glob("*.duckdb")),
            "traceback": "Traceback" in server.log_path.read_text(errors="replace"), "cores": len(os.sched_getaffinity(0)),
            "load_average": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--timeout", type=float, default=1800, help="give up after this many seconds from the click")
    p.add_argument("--json", type=Path, help="write the result here too")
    p.add_argument("--screenshot", type=Path, help="save the page once the result is there")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        index_dir = Path(tmp) / "indexes"  # a fresh index folder, as in a new checkout
        index_dir.mkdir()
        result = measure(index_dir, args.timeout, args.screenshot)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["first_result_s"] is not None and not result["traceback"] else 1


if __name__ == "__main__":
    sys.exit(main())
