"""The dashboard as a person waits for it: real Chromium, the real server, a populated store.

``bench/ui.py`` times script runs in-process (AppTest); this script times what a browser
shows: ``streamlit run app.py`` on a loopback port, Debian's Chromium driven by Playwright,
every interaction timed from the click (or the navigation) until the page is settled: the
expected heading shown, every chart drawn (a Vega canvas or SVG in each chart element), no
element left stale from the previous run and Streamlit's "running" indicator gone.

Measured, as medians of ``--passes`` passes (the store's analyses are cached first, and every
page is opened once, as a user who has the dashboard open would have):

- page switch: a click in the sidebar navigation, per page;
- layer change and measure change on the Scaling page;
- first load of the app in a new browser context (no browser cache) and a bookmarked URL
  (a page with a full view in its query string) opened in a new tab;
- the first-run button on an empty store (one run; ``--first-run``).

Every request the pages make to a host other than the server is counted and printed: the
dashboard must work offline. ``--screenshots DIR`` saves a full-page screenshot of every page.

Run: ``python bench/browser.py [--passes 5] [--store PATH] [--first-run] [--screenshots DIR] [--width PX]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from magdash.dashboard.jobs import first_run_label  # noqa: E402
from magdash.presentation.page_figures import When, page_figures  # noqa: E402
from tests.support import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

HEADINGS = {  # url path: (navigation title, heading)
    "home": ("Home", "Results: minilm on paper"),
    "extract": ("Extract", "Extract hidden states"),
    "stimuli": ("Stimuli", "Stimuli"),
    "scaling": ("Scaling", "Scaling of variability with magnitude"),
    "weber": ("Weber", "Weber's law and scalar variability"),
    "frequency": ("Frequency", "Variability and corpus frequency (E5)"),
    "compare": ("Compare", "Compare two models"),
    "geometry": ("Geometry", "Log-compressive geometry"),
    "probes": ("Probes", "Probes: is magnitude decodable?"),
    "depth": ("Depth", "Depth: liquid or solid?"),
    "behaviour": ("Behaviour", "Behaviour: does the model compare numbers by Weber's law?"),
    "steering": ("Steering", "Steering: does the model use its magnitude direction?"),
    "controls": ("Controls", "Robustness controls"),
    "design": ("Design", "Study design"),
}
# The charts each page draws on the populated store, from its declared figures: every model has its @random
# control (compared once on the Controls page); at least those drawn whatever else holds (no massive dimensions:
# the Depth page's raw view alone).
PAGES = {path: (title, heading, len(page_figures(path, When.EACH_COMPARED))) for path, (title, heading) in HEADINGS.items()}
TIMEOUT_MS = 300_000
VIEWPORT = {"width": 1400, "height": 1000}


def settled(page, heading: str, charts: int, timeout_ms: float = TIMEOUT_MS) -> None:
    """Wait until the page shows ``heading`` and ``charts`` drawn charts, nothing is stale and
    the script is no longer running."""
    page.wait_for_function(
        """([heading, charts]) => {
            const text = document.body.innerText;
            if (!text.includes(heading)) return false;
            if (document.querySelector('[data-stale="true"]')) return false;
            const status = document.querySelector('[data-testid="stStatusWidget"]');
            if (status && status.innerText.trim()) return false;
            const drawn = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')]
                .filter(el => el.querySelector('canvas, svg.marks'));
            return drawn.length >= charts;
        }""",
        arg=[heading, charts],
        timeout=timeout_ms,
        polling=25,
    )


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def external_requests(context, server: str) -> list[str]:
    """Every request of ``context`` to a host other than the server's (filled as pages load)."""
    host = urlparse(server).hostname
    seen: list[str] = []
    context.on("request", lambda request: seen.append(request.url)
               if urlparse(request.url).hostname not in (host, "localhost", "127.0.0.1")
               and not request.url.startswith(("data:", "blob:")) else None)
    return seen


def go(page, server: str, path: str, query: str = "") -> None:
    title, heading, charts = PAGES[path]
    page.goto(f"{server}/{'' if path == 'home' else path}{query}", wait_until="commit")
    settled(page, heading, charts)


def click_page(page, path: str) -> None:
    title, heading, charts = PAGES[path]
    page.locator("[data-testid=stSidebar]").get_by_role("link", name=title, exact=True).click()
    settled(page, heading, charts)


def query_value(page, name: str) -> str | None:
    from urllib.parse import parse_qs

    values = parse_qs(urlparse(page.url).query).get(name)
    return values[0] if values else None


def change_layer(page) -> None:
    """Move the Scaling page's layer slider one step (left at the top, else right)."""
    before = query_value(page, "layer")
    thumb = page.locator('input[type=range][aria-label="Layer"]')
    thumb.focus()
    thumb.press("ArrowLeft" if thumb.get_attribute("value") == thumb.get_attribute("max") else "ArrowRight")
    page.wait_for_function(
        "before => new URLSearchParams(location.search).get('layer') !== before", arg=before, timeout=TIMEOUT_MS
    )
    settled(page, *PAGES["scaling"][1:])


def change_measure(page, label: str) -> None:
    # The measure's widget key holds the measure, so the previous change's selectbox can linger
    # beside the new one until Streamlit removes it: act on the one that stays.
    from playwright.sync_api import Error as PlaywrightError

    box = page.locator("[data-testid=stSidebar] [data-testid=stSelectbox]").filter(has_text="Measure")
    combobox = box.get_by_role("combobox")
    for attempt in range(5):
        page.wait_for_function("() => document.querySelectorAll('[data-testid=stSidebar] input[aria-label=Measure]')"
                               ".length === 1", timeout=TIMEOUT_MS)
        try:
            combobox.focus(timeout=2_000)
            break
        except PlaywrightError:  # the other selectbox came back between the wait and the focus
            if attempt == 4:
                raise
    # Streamlit's react-aria combobox (1.67) opens its list from the keyboard; a click on the
    # field only focuses it in headless Chromium.
    if combobox.get_attribute("aria-expanded") != "true":
        combobox.press("ArrowDown")
    page.get_by_role("option", name=label, exact=True).click()
    # Until the rerun has drawn the new choice: the default measure leaves no trace in the URL, and a
    # quick rerun can finish before a stale element is ever seen.
    page.wait_for_function(
        "label => [...document.querySelectorAll('[data-testid=stSidebar] input[aria-label=Measure]')]"
        ".every(box => box.value === label)", arg=label, timeout=TIMEOUT_MS)
    settled(page, *PAGES["scaling"][1:])


def screenshot(page, target: Path) -> None:
    """The whole page: Streamlit scrolls its main area, not the document, so the viewport is
    made as tall as the content for the shot."""
    height = page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    page.set_viewport_size({**VIEWPORT, "height": max(VIEWPORT["height"], int(height))})
    time.sleep(0.5)  # let the charts redraw at the new size before the shot
    page.screenshot(path=str(target), full_page=True)
    page.set_viewport_size(VIEWPORT)
    from PIL import Image  # a dashboard has few colours: a 256-colour palette keeps it sharp, a third the size

    with Image.open(target) as image:
        image.convert("RGB").quantize(256).save(target, optimize=True)


def median_line(name: str, values: list[float]) -> str:
    return (f"{name:<34}{statistics.median(values):>8.2f} s   max {max(values):5.2f} s   "
            f"({len(values)} passes)")


def measure(server: str, passes: int, screenshots: Path | None) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    timings: dict[str, list[float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport=VIEWPORT)
            outside = external_requests(context, server)
            page = context.new_page()
            go(page, server, "home")
            for path in PAGES:  # every analysis computed and cached, every page seen once
                click_page(page, path)
                if screenshots is not None:
                    screenshot(page, screenshots / f"{path}.png")
            for _ in range(passes):
                for path in PAGES:
                    timings.setdefault(f"page switch: {path}", []).append(timed(lambda p=path: click_page(page, p)))
            click_page(page, "scaling")
            for _ in range(passes):
                timings.setdefault("layer change (Scaling)", []).append(timed(lambda: change_layer(page)))
            for index in range(passes):
                label = ("V_residual", "V_eucl")[index % 2]
                timings.setdefault("measure change (Scaling)", []).append(
                    timed(lambda label=label: change_measure(page, label)))
            bookmark = page.url
            path = urlparse(bookmark).path.strip("/") or "home"
            query = "?" + urlparse(bookmark).query
            for _ in range(passes):
                tab = context.new_page()  # noqa: B023 (used at once)
                timings.setdefault("bookmarked URL, new tab", []).append(
                    timed(lambda tab=tab: go(tab, server, path, query)))
                tab.close()
            for _ in range(passes):
                fresh = browser.new_context(viewport=VIEWPORT)
                outside += external_requests(fresh, server)
                first = fresh.new_page()
                timings.setdefault("first load, new browser", []).append(
                    timed(lambda first=first: go(first, server, "home")))
                fresh.close()
            context.close()
        finally:
            browser.close()
    timings["requests outside the server"] = [float(len(outside))]
    for url in sorted(set(outside)):
        print(f"request outside the server: {url}")
    return timings


def first_run(folder: Path) -> float:
    """Seconds from the click on the first-run button until the results are drawn."""
    from playwright.sync_api import sync_playwright

    env = {**os.environ, "MAGDASH_STORE": str(folder / "fresh.duckdb"), "HF_HUB_OFFLINE": "1"}
    with streamlit_server(env, folder / "first-run.log") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(server, wait_until="commit")
            button = page.get_by_role("button", name=f"Run the paper's protocol on {first_run_label()}")
            button.wait_for(timeout=TIMEOUT_MS)
            started = time.perf_counter()
            button.click()
            settled(page, *PAGES["home"][1:], timeout_ms=900_000)
            return time.perf_counter() - started
        finally:
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--store", type=Path, default=None, help="a populated store (default: build one)")
    parser.add_argument("--first-run", action="store_true", help="also time the first-run button on an empty store")
    parser.add_argument("--screenshots", type=Path, default=None, help="save a screenshot of every page here")
    parser.add_argument("--width", type=int, default=VIEWPORT["width"],
                        help=f"the browser window's width in px (default {VIEWPORT['width']}; a laptop 1280, a desktop 1920)")
    args = parser.parse_args()
    VIEWPORT["width"] = args.width
    os.chdir(ROOT)
    if args.screenshots is not None:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        store = args.store
        if store is None:
            from magdash import dashboard
            from magdash.dashboard.jobs import run_first_protocol
            from magdash.store import Store

            store = folder / "bench.duckdb"
            run_first_protocol(Store(store), dashboard.analysis_params(dashboard.ViewState(store=str(store))))
        env = {**os.environ, "MAGDASH_STORE": str(store), "HF_HUB_OFFLINE": "1"}
        with streamlit_server(env, folder / "server.log") as server:
            timings = measure(server, args.passes, args.screenshots)
        if args.first_run:
            timings["first-run button (1 run)"] = [first_run(folder)]
    print(f"\nChromium, medians of {args.passes} passes; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    for name, values in timings.items():
        if not values:
            continue
        if name == "requests outside the server":
            print(f"{name:<34}{int(values[0]):>8d}")
        else:
            print(median_line(name, values))
    switches = [statistics.median(v) for k, v in timings.items() if k.startswith("page switch")]
    if switches:
        print(median_line("page switch, median over pages", switches))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
