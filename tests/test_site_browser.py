"""The specification site in a real browser: headless Chromium (Debian's chromium and
chromium-driver, driven by Selenium) loads the site `kraftspec site` builds, served on a free
loopback port. It searches for a rule by its id and by a word of its title, opens the rule's page
and finds its evidence there, and checks that the pages render (no console errors, a title and a
heading). A screenshot of the rule's page is kept: in $KRAFTSPEC_ARTIFACTS if that is set, else in
the test's temporary folder, whose path the test prints.

Every wait is on a condition with a deadline (WebDriverWait), never a sleep; the server and the
browser are the test's own and are stopped when it ends.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from kraftspec.cli import main

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    # this machine's network is closed: Chromium's own background connections would only fail
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1280,1600",
)
WAIT_S = 30


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once (with the proofs run, so that their results show), served on 127.0.0.1 at a free port while the module's tests run."""
    out = tmp_path_factory.mktemp("site")
    assert main(["site", str(out), "--run-proofs"]) == 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", out
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def browser():
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        assert Path(path).is_file(), f"{path} is missing: install Debian's {package} (.ci/run does)"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


def search(driver, base: str, words: str) -> list[str]:
    """The links of the search results for ``words``, typed into the site's search box."""
    driver.get(base)
    box = WebDriverWait(driver, WAIT_S).until(lambda d: d.find_element(By.CSS_SELECTOR, "input.md-search__input"))
    driver.execute_script("arguments[0].focus()", box)
    box.send_keys(words)

    def results(d):
        links = [a.get_attribute("href") for a in d.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")]
        return links or None

    try:
        # the results are drawn again at each key the box takes, so a link found may go stale before
        # it is read: the wait then looks again
        return WebDriverWait(driver, WAIT_S, ignored_exceptions=(StaleElementReferenceException,)).until(results)
    except TimeoutException:
        return []


def console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def test_search_finds_a_rule_by_its_id_and_by_a_word_of_its_title(site, browser):
    base, _ = site
    by_id = search(browser, base, "LEASE-8")
    assert any("lease-8" in link.lower() for link in by_id), by_id
    by_title = search(browser, base, "lapses")  # LEASE-8: "A lease lapses ..." (spec/leases.md)
    assert any("lease-8" in link.lower() for link in by_title), by_title


def test_a_rule_page_shows_its_evidence_and_a_screenshot_is_kept(site, browser, tmp_path):
    base, out = site
    [link] = [link for link in search(browser, base, "LEASE-8") if link.lower().endswith("#lease-8")][:1] or [None]
    assert link is not None
    browser.get(link)
    body = WebDriverWait(browser, WAIT_S).until(lambda d: d.find_element(By.TAG_NAME, "body").text or None)
    for evidence in ("model/", "test_lease_8", "kip-631", "kafka", "fails, as it must"):
        assert evidence in body, f"LEASE-8's page does not show {evidence!r}"
    folder = Path(os.environ.get("KRAFTSPEC_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    shot = folder / "rule-lease-8.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"screenshot of LEASE-8's page: {shot}")


def test_every_page_renders(site, browser):
    base, out = site
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html") if "assets" not in p.parts and p.name != "404.html")
    assert len(pages) >= 10, pages
    for page in pages:
        browser.get(base + page)
        title = WebDriverWait(browser, WAIT_S).until(lambda d: d.title or None)
        heading = browser.find_elements(By.CSS_SELECTOR, "article h1")
        assert title and heading, f"{page} has no title or no heading"
        assert console_errors(browser) == [], f"{page}: {console_errors(browser)}"
