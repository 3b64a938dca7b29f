"""End to end in a real browser: ``streamlit run app.py`` on a loopback port, Debian's Chromium
driven by Playwright. From an empty store: the first-run button, its progress, the alpha
profile drawn, a page switch, a screenshot.

Skipped (with the reason) only when /usr/bin/chromium is missing outside CI; with ``CI`` set a
missing browser is a failure. No browser is ever downloaded.
"""

from __future__ import annotations

import os

import pytest

from magdash.dashboard.jobs import first_run_label
from tests.support import CHROMIUM, CHROMIUM_ARGS, require_chromium, streamlit_server

# Hang guards, not speed assumptions: the first run (two models and their controls) takes one to
# three minutes on a 2-core CPU, far longer on a machine shared with other work; a run that does
# not end within these limits is stuck.
FIRST_RUN_TIMEOUT_MS = 1_500_000
TEST_TIMEOUT_S = 1_800

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(TEST_TIMEOUT_S)]


@pytest.fixture
def app_server(tmp_path):
    require_chromium()
    env = {**os.environ, "MAGDASH_STORE": str(tmp_path / "store.duckdb"), "HF_HUB_OFFLINE": "1"}
    with streamlit_server(env, tmp_path / "streamlit.log") as url:
        yield url


def test_first_run_then_page_switch_in_chromium(app_server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            # Offline: no request may leave the server (the page icon once came from fonts.gstatic.com).
            outside = []
            page.on("request", lambda request: outside.append(request.url)
                    if not request.url.startswith((app_server, "data:", "blob:")) else None)
            page.goto(app_server, wait_until="domcontentloaded")
            button = page.get_by_role("button", name=f"Run the paper's protocol on {first_run_label()}")
            button.click()
            expect(page.get_by_text(f"first run: {first_run_label()} —")).to_be_visible(timeout=120_000)
            expect(page.get_by_role("button", name="Cancel")).to_be_visible()
            # The run ends, the page reruns once and draws the results.
            expect(page.get_by_text("Results: minilm on paper")).to_be_visible(timeout=FIRST_RUN_TIMEOUT_MS)
            profile = page.locator("[data-testid=stVegaLiteChart]").filter(
                has_text="Scaling exponent alpha by layer"
            )
            expect(profile).to_have_count(1, timeout=120_000)
            expect(profile.locator("svg path").first).to_be_attached()
            expect(page.get_by_test_id("stDownloadButton").filter(has_text="PNG").first).to_be_visible()

            page.locator("[data-testid=stSidebar]").get_by_role("link", name="Scaling").click()
            expect(page.get_by_role("heading", name="Scaling of variability with magnitude")).to_be_visible(timeout=120_000)
            # V against n, alpha by layer, and alpha raw and adjusted for tokenization (the run recorded the token facts)
            expect(page.locator("[data-testid=stVegaLiteChart]")).to_have_count(3, timeout=120_000)
            expect(page.locator("[data-testid=stVegaLiteChart]").filter(
                has_text="Alpha by layer, raw and adjusted for tokenization")).to_have_count(1)
            assert "/scaling" in page.url and "model=minilm" in page.url
            assert page.locator("[data-testid=stException]").count() == 0
            assert outside == []
            shot = tmp_path / "scaling.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
        finally:
            browser.close()


def test_hostile_store_urls_are_refused_and_harm_nothing_in_chromium(tmp_path):
    """The URL as someone who can reach a lab's dashboard would craft it: a FIFO and a device
    stand-in beside the store, ``..`` out of the allowed folder, a new folder elsewhere. Each page
    answers with a message (its script run ends: nothing blocks), and nothing is created,
    changed or deleted."""
    from urllib.parse import quote

    from playwright.sync_api import expect, sync_playwright

    from magdash.store import Store
    from tests.support import make_device_stand_in, tree_state

    require_chromium()
    folder = tmp_path / "lab"
    folder.mkdir()
    Store(folder / "store.duckdb")
    os.mkfifo(folder / "pipe.duckdb")
    make_device_stand_in(folder / "zero.duckdb")
    paths = {
        str(folder / "pipe.duckdb"): "is a FIFO",
        str(folder / "zero.duckdb"): "is a character device",
        "../../../elsewhere/z.duckdb": "opens stores only inside",
        str(tmp_path / "any" / "new" / "folder" / "x.duckdb"): "opens stores only inside",
        str(folder / "new.duckdb"): "No store at",
    }
    env = {**os.environ, "MAGDASH_STORE": str(folder / "store.duckdb"), "HF_HUB_OFFLINE": "1"}
    def state() -> dict:  # all but the server's own log
        return {path: entry for path, entry in tree_state(tmp_path).items() if not path.endswith("streamlit.log")}

    with streamlit_server(env, tmp_path / "streamlit.log") as url, sync_playwright() as playwright:
        before = state()
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            for path, message in paths.items():
                page.goto(f"{url}/scaling?store={quote(path)}", wait_until="domcontentloaded")
                expect(page.locator("[data-testid=stSidebar]").get_by_text(message).first).to_be_visible(timeout=120_000)
                assert page.locator("[data-testid=stException]").count() == 0, path
        finally:
            browser.close()
        assert state() == before
