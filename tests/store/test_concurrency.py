"""One store, several processes at once: readers never fail, writers never fail, nothing is lost.

(a) Without a browser: reader processes loop over the read-only calls the dashboard makes
(list_models, extraction_progress, read_layers, analyze, which also writes to the analysis
cache) while a CLI extraction and an npz import write to the same store.

(b) The real app: ``streamlit run app.py`` on that store, three Chromium sessions (separate
browser contexts) navigating between the data pages and reloading while a CLI extraction
writes; no page may show an exception or an error box.

Afterwards the new extraction is complete, with exactly one row per item in every layer table,
and the vectors stored before are unchanged.

Nothing depends on how fast the machine is: the CLI writer runs under ``tests/fault_child.py``
and stops itself after its first committed batch, and is let go only once every reader (or
browser session) has read the half-written store; after that readers and writers run freely
side by side. Waits have generous timeouts and nothing is timed.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES, PAPER_SET_NAME, paper_stimuli
from magdash.store import Store
from magdash.store.shards import shard_files, shard_folder
from tests.support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    copy_store,
    duplicate_rows,
    require_chromium,
    streamlit_server,
)

BASE_MODEL = "tiny"          # extracted before the test, on the paper's stimuli
IMPORTED_MODEL = "imported"  # random arrays, imported before the test
WRITER_MODEL = "tiny-wide"   # what the CLI writer extracts during the test
WRITER_SET = "wide"
WRITER_TOP = 80
WRITER_MAGNITUDES = f"1-{WRITER_TOP}"
# The paper's carriers and two more: the paper's items on 1..80 are stored already and skipped
# (content addressing), the rest is new.
WRITER_CARRIERS = (*PAPER_CARRIERS, "Hello {n} world.", "the value {n} .")
WAIT_S = 300


# -- stores -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base_store(tmp_path_factory, tiny_llama) -> Path:
    """The tiny Llama extracted on the paper's stimuli, and an imported model of random arrays."""
    from magdash.extraction import extract

    path = tmp_path_factory.mktemp("concurrency") / "base.duckdb"
    store = Store(path)
    extract(str(tiny_llama), paper_stimuli(), store, name=BASE_MODEL, device="cpu")
    vectors = np.random.default_rng(4).normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 4, 16))
    store.import_arrays(IMPORTED_MODEL, vectors.astype(np.float32), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)
    return path


@pytest.fixture
def store_path(base_store, tmp_path) -> Path:
    return copy_store(base_store, tmp_path)


def layer_digests(path: Path, model: str, stimuli: str = PAPER_SET_NAME) -> list[str]:
    return [hashlib.sha256(layer.vectors.tobytes()).hexdigest() for layer in Store(path).read_layers(model, stimuli)]


def writer_command(tiny_llama: Path, store: Path, carriers: Path, events: Path) -> list[str]:
    """The CLI extraction, stopping itself (SIGSTOP) once its first batch is committed."""
    return [sys.executable, "-m", "tests.fault_child", "--events", str(events), "--halt-at", "write-end#1", "--",
            "extract", "--model", str(tiny_llama), "--name", WRITER_MODEL,
            "--stimuli", WRITER_SET, "--carriers", str(carriers), "--magnitudes", WRITER_MAGNITUDES,
            "--store", str(store), "--device", "cpu", "--batch-size", "16", "--quiet"]


def writer_halted(events: Path) -> bool:
    """Has the writer committed its first batch (and stopped itself there)?"""
    return events.exists() and any(line.split()[1:2] == ["write-end"] for line in events.read_text().splitlines())


def wait_for(condition, what: str, process: subprocess.Popen | None = None) -> None:
    """Poll ``condition`` until it holds; fail if ``process`` ends first or after WAIT_S (a hang)."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"{what}: the process ended first with status {process.returncode}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {WAIT_S} s")
        time.sleep(0.05)


def child_env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def assert_complete_and_nothing_lost(path: Path, before: dict[str, list[str]]) -> None:
    """The writer's set is completely extracted with one vector per item, no shard file left
    unregistered, and the models stored before read back bit for bit."""
    store = Store(path)
    progress = store.extraction_progress().set_index(["name", "set_name"])
    n_items = len(WRITER_CARRIERS) * WRITER_TOP
    assert progress.loc[(WRITER_MODEL, WRITER_SET), "total"] == n_items
    assert progress.loc[(WRITER_MODEL, WRITER_SET), "done"] == n_items
    layers = list(store.read_layers(WRITER_MODEL, WRITER_SET))
    assert all(layer.vectors.shape[:2] == (WRITER_TOP, len(WRITER_CARRIERS)) for layer in layers)
    assert all(np.isfinite(layer.vectors).all() for layer in layers)
    record = store.model_record(WRITER_MODEL)
    assert record.model_id == store.model_record(BASE_MODEL).model_id  # same weights: shared tables
    paper_keys = {item.key for item in paper_stimuli().items}
    wide_keys = {item.key for item in store.stimulus_set(WRITER_SET).items}
    assert duplicate_rows(path) == 0
    with duckdb.connect(str(path), read_only=True) as connection:
        done_rows, done_distinct = connection.execute(
            "SELECT count(*), count(DISTINCT item_key) FROM done WHERE model_id = ?", [record.model_id]
        ).fetchone()
        registered = {row[0] for row in connection.execute("SELECT shard FROM shards").fetchall()}
    assert done_rows == done_distinct == len(paper_keys | wide_keys)
    assert set(shard_files(shard_folder(path))) == registered
    for model, digests in before.items():
        assert layer_digests(path, model) == digests, f"the vectors of {model} changed"


# -- (a) processes without a browser ----------------------------------------------------------------

READER = r"""
import hashlib, json, os, sys
from pathlib import Path
from magdash.runs.analysis_runs import analyze
from magdash.variability.analysis import AnalysisParams
from magdash.store import Store

path, stop, counter, expected = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), json.loads(sys.argv[4])
iterations, seen_done, partly_done = 0, {}, set()
while True:
    stopping = stop.exists()
    store = Store(path)  # what the dashboard does for every session
    names = set(store.list_models()["name"])
    assert set(expected) <= names, names
    for row in store.extraction_progress().itertuples():
        key = f"{row.name}|{row.set_name}"
        assert row.done >= seen_done.get(key, 0), (key, row.done, seen_done.get(key))  # progress never goes back
        assert row.done <= row.total, (key, row.done, row.total)
        seen_done[key] = row.done
        if 0 < row.done < row.total:
            partly_done.add(key)
    for model, digests in expected.items():
        got = [hashlib.sha256(layer.vectors.tobytes()).hexdigest() for layer in store.read_layers(model, "paper")]
        assert got == digests, f"{model}: vectors changed while reading"
        # The second pass recomputes and rewrites the cached analysis: readers write too.
        result = analyze(store, model, "paper", AnalysisParams(n_boot=0), use_cache=iterations != 1)
        assert result is not None
    iterations += 1
    counter.with_suffix(".tmp").write_text(str(iterations))
    os.replace(counter.with_suffix(".tmp"), counter)  # the parent sees whole iterations only
    if stopping and iterations >= 2:
        break
print(json.dumps({"iterations": iterations, "progress": seen_done, "partly_done": sorted(partly_done)}))
"""


def iterations_done(counter: Path) -> int:
    return int(counter.read_text()) if counter.exists() else 0


@pytest.mark.slow
def test_readers_and_writers_in_separate_processes(store_path, tiny_llama, tmp_path):
    carriers = tmp_path / "carriers.txt"
    carriers.write_text("\n".join(WRITER_CARRIERS) + "\n", encoding="utf-8")
    before = {model: layer_digests(store_path, model) for model in (BASE_MODEL, IMPORTED_MODEL)}
    npz = tmp_path / "more.npz"
    rng = np.random.default_rng(8)
    np.savez(npz, per_carrier=rng.normal(size=(40, 3, 5, 32)).astype(np.float32),
             magnitudes=np.arange(1, 41), carriers=np.array(["A {n}.", "B {n}.", "C {n}."]))
    stop = tmp_path / "stop"
    env = child_env()

    def spawn(command: list[str], name: str) -> tuple[subprocess.Popen, Path, Path]:
        out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
        return process, out, err

    counters = [tmp_path / f"reader{i}.count" for i in range(3)]
    readers = [spawn([sys.executable, "-c", READER, str(store_path), str(stop), str(counter), json.dumps(before)],
                     f"reader{i}") for i, counter in enumerate(counters)]
    events = tmp_path / "extract.events"
    try:
        writers = [
            spawn(writer_command(tiny_llama, store_path, carriers, events), "extract"),
            spawn([sys.executable, "-m", "magdash", "import", str(npz), "--name", "imported-later",
                   "--store", str(store_path)], "import"),
        ]
        extraction = writers[0][0]
        wait_for(lambda: writer_halted(events), "the extraction's first commit", extraction)
        # Every reader runs a whole pass over the half-written store before the writer goes on.
        halted_at = [iterations_done(counter) for counter in counters]
        for (reader, _, _), counter, before_halt in zip(readers, counters, halted_at, strict=True):
            wait_for(lambda c=counter, n=before_halt: iterations_done(c) >= n + 2, "a reader's pass", reader)
        extraction.send_signal(signal.SIGCONT)
        for process, _, err in writers:
            assert process.wait(WAIT_S) == 0, err.read_text()
    finally:
        stop.touch()
        for process, _, _ in readers:
            try:
                process.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
    for process, out, err in readers:
        assert process.returncode == 0, err.read_text()[-4000:]
        summary = json.loads(out.read_text())
        assert summary["iterations"] >= 2
        # Each reader read the store while the extraction was part-way through.
        assert f"{WRITER_MODEL}|{WRITER_SET}" in summary["partly_done"], summary
        assert summary["progress"].get(f"{WRITER_MODEL}|{WRITER_SET}", 0) == len(WRITER_CARRIERS) * WRITER_TOP
    assert_complete_and_nothing_lost(store_path, before)
    imported = Store(store_path).extraction_progress().set_index("name").loc["imported-later"]
    assert imported["done"] == imported["total"] == 40 * 3


# -- (b) the app in Chromium, three sessions, while the CLI writes --------------------------------

PAGES = {  # url path -> the page's title
    "": "magdash", "scaling": "Scaling of variability with magnitude", "weber": "Weber's law and scalar variability",
    "geometry": "Log-compressive geometry", "compare": "Compare two models", "frequency": "Variability and corpus frequency (E5)",
}


async def browse(context, url: str, start: int, writer: subprocess.Popen, events: Path,
                 views_while_halted: list[int], index: int, problems: list[str]) -> tuple[int, int]:
    """Visit the pages in turn, reloading every other one, until two views after the writer has
    finished; note every exception or error box. ``views_while_halted[index]`` counts the views
    begun after the writer stopped itself part-way. Returns the page views begun while the writer
    ran (or waited) and after it finished."""
    from playwright.async_api import expect

    page = await context.new_page()
    paths = list(PAGES)
    views_during, views_after = 0, 0
    for offset in itertools.count():
        path = paths[(start + offset) % len(paths)]
        finished = writer.poll() is not None
        halted = not finished and writer_halted(events)
        await page.goto(f"{url}/{path}?boot=0", wait_until="domcontentloaded")
        if offset % 2:  # the same page again: a new script run of this session
            await page.reload(wait_until="domcontentloaded")
        await expect(page.get_by_role("heading", name=PAGES[path], exact=True)).to_be_visible(timeout=WAIT_S * 1000)
        await page.wait_for_function(
            "() => !document.querySelector('[data-testid=stStatusWidgetRunningIcon]')"
            " && !document.querySelector('[data-testid=stStatusWidgetRunningManIcon]')",
            timeout=WAIT_S * 1000,
        )
        for selector in ("[data-testid=stException]", "[data-testid=stAlertContentError]"):
            for text in await page.locator(selector).all_inner_texts():
                problems.append(f"/{path} ({selector}): {text[:400]}")
        views_during += not finished
        views_after += finished
        views_while_halted[index] += halted
        if views_after >= 2:
            break
    await page.close()
    return views_during, views_after


async def release_when_every_session_has_seen_it(writer: subprocess.Popen, views_while_halted: list[int]) -> None:
    """Let the writer go on (SIGCONT) once each session has viewed a page of the half-written store."""
    deadline = time.monotonic() + WAIT_S
    while min(views_while_halted) < 1:
        if writer.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"the sessions did not view the half-written store: {views_while_halted}")
        await asyncio.sleep(0.05)
    writer.send_signal(signal.SIGCONT)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.long
def test_app_sessions_while_the_cli_writes(store_path, tiny_llama, tmp_path):
    require_chromium()
    from playwright.async_api import async_playwright

    carriers = tmp_path / "carriers.txt"
    carriers.write_text("\n".join(WRITER_CARRIERS) + "\n", encoding="utf-8")
    before = {model: layer_digests(store_path, model) for model in (BASE_MODEL, IMPORTED_MODEL)}
    env = {**child_env(), "MAGDASH_STORE": str(store_path)}
    writer = None
    problems: list[str] = []
    with streamlit_server(env, tmp_path / "streamlit.log") as url:

        async def run() -> list[tuple[int, int]]:
            nonlocal writer
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    contexts = [await browser.new_context(viewport={"width": 1200, "height": 900}) for _ in range(3)]
                    events = tmp_path / "writer.events"
                    with open(tmp_path / "writer.err", "wb") as stderr:
                        writer = subprocess.Popen(writer_command(tiny_llama, store_path, carriers, events), cwd=ROOT,
                                                  env=env, stdout=subprocess.DEVNULL, stderr=stderr)
                    views_while_halted = [0] * len(contexts)
                    views = asyncio.gather(*(browse(context, url, i * 2, writer, events, views_while_halted, i, problems)
                                             for i, context in enumerate(contexts)))
                    await release_when_every_session_has_seen_it(writer, views_while_halted)
                    return await views
                finally:
                    await browser.close()

        try:
            views = asyncio.run(run())
            assert writer.wait(WAIT_S) == 0, (tmp_path / "writer.err").read_text()
        finally:
            if writer is not None and writer.poll() is None:
                writer.kill()
                writer.wait(10)
    assert not problems, problems
    assert all(during >= 1 and after == 2 for during, after in views), views
    server_log = (tmp_path / "streamlit.log").read_text(errors="replace")
    assert "Traceback" not in server_log, server_log[-4000:]
    assert_complete_and_nothing_lost(store_path, before)
