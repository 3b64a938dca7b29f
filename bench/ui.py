"""Dashboard responsiveness: a page switch and a layer change on a populated store.

Drives the real app (app.py and pages/) with Streamlit's AppTest, which runs the whole script
as a browser interaction would (widgets, caches, chart specs, the element tree), in-process.
The store holds the first-run protocol (minilm, smollm2 and their controls on the paper's stimuli),
built here unless ``--store`` names one. Every page is visited once first, so the timings are
those of a user moving around a dashboard they have opened: medians of ``--repeats`` runs.

Side by side, the same interactions with Streamlit's data caches cleared before each run show
what the caches buy (the store's own analysis cache stays warm in both).

Target: under 300 ms for each.
Run: ``python bench/ui.py [--repeats 15] [--store PATH]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_MS = 300.0
SWITCH_PAGES = tuple(
    page for page in ("pages/scaling.py", "pages/weber.py", "pages/frequency.py", "pages/compare.py",
                      "pages/geometry.py", "pages/depth.py", "pages/home.py")
    if (ROOT / page).is_file()
)


def steady_apptest():
    """AppTest that behaves like a running server for multipage apps (see tests/support.py)."""
    from streamlit.testing.v1 import AppTest, app_test

    from tests.support import running_server_pages_manager

    app_test.PagesManager = running_server_pages_manager
    return AppTest


def populated_store(path: Path) -> None:
    from magdash import dashboard
    from magdash.dashboard.jobs import run_first_protocol
    from magdash.store import Store

    started = time.perf_counter()
    run_first_protocol(Store(path), dashboard.analysis_params(dashboard.ViewState(store=str(path))))
    print(f"built the store (first-run protocol) in {time.perf_counter() - started:.1f} s")


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000.0


def check(at) -> None:
    if at.exception:
        raise SystemExit(f"the app raised: {at.exception[0].message}")


def measure(at, repeats: int, *, cold: bool) -> dict[str, list[float]]:
    """Page switches, then layer changes on Scaling: first to layers not shown yet (their
    vectors are read from the store and the chart built), then back to layers seen before."""
    import streamlit as st

    def prepare() -> None:
        if cold:
            st.cache_data.clear()

    timings: dict[str, list[float]] = {"page switch": [], "new layer": [], "seen layer": []}
    for index in range(repeats):
        page = SWITCH_PAGES[index % len(SWITCH_PAGES)]
        prepare()
        timings["page switch"].append(timed(lambda page=page: at.switch_page(page).run()))
        check(at)
    at.switch_page("pages/scaling.py").run()
    options = next(w for w in at.select_slider if w.label == "Layer").options
    seen = {next(w for w in at.select_slider if w.label == "Layer").value}
    sequence = [o for o in options if o not in seen] if not cold else []
    sequence += [options[i % len(options)] for i in range(repeats)]
    for option in sequence:
        slider = next(w for w in at.select_slider if w.label == "Layer")
        if option == slider.value:
            continue
        kind = "seen layer" if cold or option in seen else "new layer"
        prepare()
        timings[kind].append(timed(lambda slider=slider, option=option: slider.set_value(option).run()))
        seen.add(option)
        check(at)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--store", type=Path, default=None, help="a populated store (default: build one)")
    args = parser.parse_args()
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory() as folder:
        store = args.store or Path(folder) / "bench.duckdb"
        if args.store is None:
            populated_store(store)
        os.environ["MAGDASH_STORE"] = str(store)
        AppTest = steady_apptest()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
        check(at)
        for page in SWITCH_PAGES:  # open every page once, as a user would
            at.switch_page(page).run()
            check(at)
        warm = measure(at, args.repeats, cold=False)
        cold = measure(at, max(3, args.repeats // 3), cold=True)
    n_cold = max(3, args.repeats // 3)
    print(f"\nmedians (cached: {args.repeats} runs; cold: {n_cold} runs with st.cache_data cleared before each)")
    print(f"{'interaction':<30}{'cached ms':>11}{'cold ms':>10}{'cold/cached':>13}{'vs 300 ms':>11}")
    labels = {
        "page switch": "page switch",
        "new layer": "layer change, layer not seen",
        "seen layer": "layer change, layer seen",
    }
    failed = False
    for kind, label in labels.items():
        median = statistics.median(warm[kind])
        cold_ms = statistics.median(cold["page switch" if kind == "page switch" else "seen layer"])
        failed |= median >= TARGET_MS
        print(f"{label:<30}{median:>11.0f}{cold_ms:>10.0f}{cold_ms / median:>12.1f}x{median / TARGET_MS:>10.2f}x")
    print("(cold: caches cleared, so every layer change reads its layer and builds its chart again)")
    print("target: under 300 ms each —", "missed" if failed else "met")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
