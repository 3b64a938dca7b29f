"""What the tests share: paths, the bad-input case counter, tiny local models, AppTest and
real-browser helpers, and the strategies and stores of the bad-input suites.

Test modules import from here, never from one another or from ``conftest.py`` (which holds
the fixtures only).
"""

from __future__ import annotations

import functools
import gzip
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import strategies as st

from magdash.stimuli import (
    MAX_CARRIER_CHARS,
    MAX_CARRIERS,
    MAX_MAGNITUDE,
    PAPER_CARRIERS,
    PAPER_MAGNITUDES,
    PLACEHOLDER,
)
from magdash.store import Store
from magdash.store.shards import shard_folder

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
DATA = ROOT / "tests" / "data"


# -- bad-input cases tried ----------------------------------------------------------------------

CASES: Counter[str] = Counter()
"""How many bad-input cases each entry point was given in this run (printed by conftest.py)."""


def record(entry_point: str, n: int = 1) -> None:
    """Count ``n`` bad-input cases tried against ``entry_point`` (e.g. "cli extract --carriers")."""
    CASES[entry_point] += n


# -- tiny local models ----------------------------------------------------------------------------
# Nothing touches a hub: configs, tokenizers and weights are built in a folder. The Llama
# tokenizer splits numbers into chunks of up to three digits (as Llama-3 does, so 1000 becomes
# "100" + "0"); the Mistral one splits every digit (as Mistral does).

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]


def _carrier_words() -> list[str]:
    words = set()
    for carrier in PAPER_CARRIERS:
        for word in carrier.replace("{n}", " ").replace(".", " . ").split():
            words.add(word)
    return sorted(words | {".", ",", "the", "a", "value", "Hello", "world"})


def build_tokenizer(folder: Path, digit_chunk: int, start: str = "bos") -> None:
    """A word-level fast tokenizer with offsets; numbers split into chunks of ``digit_chunk``.

    ``start``: "bos" adds ``<s>`` before every text (as Llama's does), "bos-not-added" knows
    ``<s>`` but adds nothing (as SmolLM2's), "no-bos" has no BOS token at all."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    digits = [str(i) for i in range(10)]
    if digit_chunk == 3:
        digits = [str(i) for i in range(10)] + [f"{i:02d}" for i in range(100)] + [str(i) for i in range(10, 1000)]
        digits += [f"{i:03d}" for i in range(100)]
    vocab = {token: index for index, token in enumerate(dict.fromkeys(SPECIAL_TOKENS + _carrier_words() + digits))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(r"\d{1," + str(digit_chunk) + "}"), behavior="isolated"),
        pre_tokenizers.Split(Regex(r"[.,]"), behavior="isolated"),
    ])
    if start == "bos":
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
        )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=None if start == "no-bos" else "<s>", eos_token="</s>",
        unk_token="<unk>", pad_token="<pad>",
    )
    fast.save_pretrained(folder)


def build_tiny_model(folder: Path, family: str, n_blocks: int = 3, hidden: int = 32, start: str = "bos") -> Path:
    """A random-weight Llama or Mistral in ``folder``; ``start`` as in :func:`build_tokenizer`."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    build_tokenizer(folder, digit_chunk=3 if family == "llama" else 1, start=start)
    vocab_size = len(AutoTokenizer.from_pretrained(folder))
    common = dict(
        vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=n_blocks,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0,
        bos_token_id=None if start == "no-bos" else 1, eos_token_id=2,
    )
    torch.manual_seed(1234)
    if family == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common))
    else:
        model = MistralForCausalLM(MistralConfig(**common, sliding_window=None))
    with torch.no_grad():
        # Random norm gains make a pre-norm/post-norm mix-up visible in the tests.
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.uniform_(0.5, 2.0)
    model.save_pretrained(folder, safe_serialization=True)
    return folder


# -- the app under AppTest -------------------------------------------------------------------------


def running_server_pages_manager(*args, **kwargs):
    """Streamlit's PagesManager as a running server has it after its first ``st.navigation``
    call: the "classic pages/ folder" flag cleared. AppTest resets that flag before every run,
    so without this every run would be a fresh server's first request, which the app answers by
    rerunning through app.py (see ``pages.ui.session.context``), dropping widget triggers."""
    from streamlit.runtime.pages_manager import PagesManager

    manager = PagesManager(*args, **kwargs)
    PagesManager.uses_pages_directory = False
    return manager


@functools.cache
def scan_component_manifests_once() -> None:
    """Make Streamlit scan the installed distributions for component manifests once per process.

    Every new AppTest reads the metadata of every installed distribution on its first run
    (a running server does it once, at start-up); the suite creates hundreds of AppTests, and
    nothing is installed while it runs. The scan's result is kept, not changed.
    """
    from streamlit.components.v2 import manifest_scanner

    manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


def open_app(store: str | Path, monkeypatch, *, query: dict | None = None, page: str | None = None,
             fresh_server: bool = False):
    """The app under AppTest on ``store``, run once (and on ``page``), with no exception.

    Every later run of the returned AppTest behaves as on a running server, unless
    ``fresh_server``: then each run is a fresh server's first request.
    """
    from streamlit.testing.v1 import AppTest, app_test

    scan_component_manifests_once()
    monkeypatch.setenv("MAGDASH_STORE", str(store))
    if not fresh_server:
        monkeypatch.setattr(app_test, "PagesManager", running_server_pages_manager)
    at = AppTest.from_file(str(APP), default_timeout=300)
    if query:
        at.query_params.update(query)
    at.run()
    if page:
        at.switch_page(page).run()
    assert_clean(at)
    return at


def app_pages() -> list[str]:
    """The app's page files (``magdash.dashboard.PAGES``), as AppTest switches to them."""
    from magdash import dashboard

    return [page.file for page in dashboard.PAGES if (ROOT / page.file).is_file()]


def data_pages() -> list[str]:
    """The pages that show results of a stored model (all but Home, Extract and Stimuli)."""
    return [page for page in app_pages() if Path(page).stem not in ("home", "extract", "stimuli")]


# Charts and tables each page draws on a store holding a model and its random control on the
# paper's stimuli (every chart has PNG and SVG buttons, every table a CSV button). Depth: neither
# model has massive-activation dimensions, so the view without them is the raw one, drawn once.
EXPECTED_CHARTS = {
    "home": 1, "extract": 0, "stimuli": 0, "scaling": 2, "weber": 5, "frequency": 3,
    "compare": 1, "geometry": 3, "probes": 5, "depth": 4, "controls": 4, "design": 0,
}
EXPECTED_TABLES = {
    "home": 1, "scaling": 1, "weber": 2, "frequency": 2, "compare": 1, "geometry": 1, "probes": 4, "depth": 2,
    "controls": 5,
}
# What a page adds where the model's vectors have their token facts (extracted, not imported):
# the Scaling page's alpha raw and adjusted for tokenization, the strata and per-layer tables.
WITH_TOKEN_FACTS = {"scaling": (1, 3)}


def assert_page_draws_everything(at, page: str, *, token_facts: bool = False) -> None:
    """The page drew its charts (each with PNG and SVG buttons) and tables (CSV buttons), as
    EXPECTED_CHARTS and EXPECTED_TABLES say (plus WITH_TOKEN_FACTS for a model whose token facts
    are recorded), the sidebar offers the report, and nothing failed."""
    name = Path(page).stem
    charts, tables = WITH_TOKEN_FACTS.get(name, (0, 0)) if token_facts else (0, 0)
    assert len(at.get("vega_lite_chart")) == EXPECTED_CHARTS[name] + charts
    buttons = labels(at.get("download_button"))
    assert buttons.count("PNG") == buttons.count("SVG") == EXPECTED_CHARTS[name] + charts
    assert buttons.count("CSV") >= EXPECTED_TABLES.get(name, 0) + tables
    assert "Report (HTML)" in labels(at.sidebar.get("download_button"))
    assert not at.error
    assert_tables_are_labelled(at)


def assert_tables_are_labelled(at) -> None:
    """Every column of every table the run shows has its own entry in ``formatting.COLUMNS`` (no
    raw name shown as it is), is shown under that header, and no two columns of a table read alike
    (the CSV download writes the same headers)."""
    import json

    from magdash.formatting import column_label, is_labelled

    for table in at.dataframe:
        columns = [str(column) for column in table.value.columns]
        unlabelled = [column for column in columns if not is_labelled(column)]
        assert not unlabelled, f"columns without a label in formatting.COLUMNS: {unlabelled} (table {columns})"
        headers = [column_label(column) for column in columns]
        assert len(set(headers)) == len(headers), f"two columns read alike: {headers}"
        config = json.loads(table.proto.columns or "{}")
        shown_as = {column: config.get(column, {}).get("label", column) for column in columns}
        assert shown_as == dict(zip(columns, headers, strict=True))


def chart_specs(at) -> list[dict]:
    import json

    return [json.loads(element.proto.spec) for element in at.get("vega_lite_chart")]


def texts(at) -> str:
    """Every message and Markdown text the run shows, unescaped."""
    kinds = ("markdown", "info", "warning", "error", "success", "caption")
    return "\n".join(shown(element) for kind in kinds for element in at.get(kind))


def assert_clean(at, case: object = "") -> None:
    assert not at.exception, (repr(case)[:200], [e.message[:500] for e in at.exception])


def labels(elements) -> list[str]:
    return [element.label for element in elements]


def widget(elements, label: str):
    matches = [element for element in elements if element.label == label]
    assert len(matches) == 1, f"no single widget {label!r} in {labels(elements)}"
    return matches[0]


def shown(element) -> str:
    """What a Markdown element shows: user text is escaped for Markdown, the escapes vanish."""
    return re.sub(r"\\(.)", r"\1", str(element.value))


# -- the README's shell with a warm interpreter ----------------------------------------------------


@contextmanager
def warm_python(folder: Path, env: dict[str, str]) -> Iterator[tuple[Path, Path]]:
    """Serve ``python -m magdash`` from one process that imported the CLI's dependencies once
    (``tests/warm_python.py``), for ``env``. Yields the folder to put first on a shell's PATH
    (its ``python`` sends ``-m magdash`` commands to the server and runs anything else with the
    real interpreter) and the log with one line per command served; stops the server after."""
    folder.mkdir(parents=True, exist_ok=True)
    socket_path, served = folder / "python.sock", folder / "served.log"
    served.touch()
    script = ROOT / "tests" / "warm_python.py"
    server = subprocess.Popen([sys.executable, str(script), "serve", str(socket_path), str(served)], env=env,
                              stdout=open(folder / "server.log", "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        deadline = time.monotonic() + 300
        while not socket_path.exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the warm python did not start: {(folder / 'server.log').read_text()[-2000:]}")
            time.sleep(0.05)
        shim = folder / "bin"
        shim.mkdir()
        (shim / "python").write_text(
            f'#!/bin/sh\nexec "{sys.executable}" -S "{script}" client "{socket_path}" "{sys.executable}" "$@"\n')
        (shim / "python").chmod(0o755)
        yield shim, served
    finally:
        server.kill()
        server.wait()


# -- a real browser ------------------------------------------------------------------------------
# Debian's Chromium (never downloaded), a free loopback port, and waiting for a
# ``streamlit run`` server to answer.

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def require_chromium() -> None:
    """Skip (with the reason) when Chromium is missing outside CI; under CI that is a failure."""
    if Path(CHROMIUM).is_file():
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but {CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    pytest.skip(f"{CHROMIUM} is not installed; run `apt-get install -y chromium` to run the browser test")


def require_builtin(name: str) -> None:
    """Skip (with the command) when a built-in decoder is not installed; under CI that is a failure."""
    from magdash.sources.builtin import INSTALL_MODELS, is_installed

    if is_installed(name):
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set but the built-in model {name} is not installed: {INSTALL_MODELS}")
    pytest.skip(f"the built-in model {name} is not installed: {INSTALL_MODELS}")


def load_builtin(name: str):
    """A built-in model loaded on the CPU in float32, from the session's model cache."""
    from magdash.sources import load_model

    require_builtin(name)
    return load_model(name, device="cpu")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(url: str, process: subprocess.Popen, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"streamlit did not answer on {url} within {timeout:.0f} s")


@contextmanager
def streamlit_server(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """``streamlit run app.py`` on a free loopback port with ``env``, its output in ``log_path``;
    yields the URL once the server answers, and stops it afterwards."""
    url = f"http://127.0.0.1:{free_port()}"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", url.rsplit(":", 1)[1],
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            wait_until_healthy(url, process)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


# -- bad input: the store every suite starts from, and the strategies it is fed ----------------------

MAGNITUDES = (1, 2, 3, 5, 8, 13)
CARRIERS = ("There are {n} items.", "The count reached {n}.", "{n} was the value.")


BASE_SET = "base-set"
BASE_SHAPE = (len(MAGNITUDES), len(CARRIERS), 4, 8)  # magnitudes, carriers, layers, d


def build_base_store(path: Path) -> Path:
    """A small real store: models "base" and "other" on one set, a frequency source "toy"."""
    store = Store(path)
    rng = np.random.default_rng(20260404)
    for name in ("base", "other"):
        store.import_arrays(name, rng.normal(size=BASE_SHAPE), MAGNITUDES, carriers=CARRIERS, stimuli=BASE_SET)
    counts = pd.DataFrame({"number": MAGNITUDES, "count": [600, 500, 400, 300, 200, 100]})
    store.put_frequency_source("toy", counts, {"kind": "csv", "note": "made by the bad-input tests"})
    return path


def store_contents(path: Path) -> dict[str, list[str]]:
    """Every table's rows (sorted), read through a read-only connection that cannot change the file."""
    connection = duckdb.connect(str(path), read_only=True)
    try:
        tables = [row[0] for row in connection.execute(
            "SELECT table_name FROM duckdb_tables() ORDER BY table_name").fetchall()]
        return {table: sorted(map(repr, connection.execute(f'SELECT * FROM "{table}"').fetchall()))
                for table in tables}
    finally:
        connection.close()


def file_state(path: Path) -> tuple[bytes, bool, dict[str, bytes]]:
    """The store file's bytes, whether a write-ahead log sits beside it, and every file of its
    shard folder with its bytes.

    A refused call must not write at all, so comparing bytes is the strict check, and cheap.
    """
    path = Path(path)
    folder = shard_folder(path)
    shard_bytes = {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}
    return path.read_bytes(), Path(f"{path}.wal").exists(), shard_bytes


def unpack_store(version: int, folder: Path) -> Path:
    """A copy of ``tests/data/store_v<version>.duckdb.gz``, a store an earlier release wrote
    (``tests/data/make_store_v<version>.py``), as ``folder/v<version>.duckdb``."""
    path = Path(folder) / f"v{version}.duckdb"
    with gzip.open(DATA / f"store_v{version}.duckdb.gz", "rb") as source, open(path, "wb") as target:
        shutil.copyfileobj(source, target)
    return path


def copy_store(source: Path, folder: Path, name: str = "store.duckdb") -> Path:
    """Copy a store: its file and its shard folder."""
    target = Path(folder) / name
    shutil.copyfile(source, target)
    if shard_folder(Path(source)).is_dir():
        shutil.copytree(shard_folder(Path(source)), shard_folder(target))
    return target


_SPACES = st.sampled_from(["", " ", "  ", "\t"])


def _padded(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(_SPACES, text, _SPACES).map("".join)


_VALID_NUMBER = st.integers(1, MAX_MAGNITUDE).flatmap(
    lambda n: st.sampled_from([str(n), f"+{n}", f"00{n}"]).map(lambda text, n=n: (text, {n}))
)


_VALID_RANGE = st.tuples(st.integers(1, 5000), st.integers(0, 300)).map(
    lambda pair: (f"{pair[0]} - {pair[0] + pair[1]}" if pair[1] % 2 else f"{pair[0]}-{pair[0] + pair[1]}",
                  set(range(pair[0], pair[0] + pair[1] + 1)))
)


_PAPER = st.sampled_from(["paper", "PAPER", "Paper"]).map(lambda text: (text, set(PAPER_MAGNITUDES)))
VALID_PIECES = st.one_of(_VALID_NUMBER, _VALID_RANGE, _PAPER)


INVALID_PIECES = st.one_of(
    st.sampled_from([
        "", "0", "-0", "00", "x", "1.5", "1e3", "1--2", "-", "1-", "-1-2", "1 2", "½", "∞", "nan", "inf",
        "0-5", "5-3", "1-2000002", "9" * 5000, "1-" + "9" * 5000, "-" + "9" * 5000, "papers", "1_000",
        "0x10", "10000000000000", "\x00", "1\x00", "paper-5",
    ]),
    st.integers(max_value=0).map(str),
    st.integers(MAX_MAGNITUDE + 1).map(str),
    st.tuples(st.integers(2, 10**6), st.integers(1, 10**6)).map(lambda p: f"{p[0] + p[1]}-{p[0]}"),
)


@st.composite
def magnitude_specs(draw) -> tuple[str, set[int] | None]:
    """A spec from the grammar and the set it stands for (None: it must be refused)."""
    pieces = draw(st.lists(st.one_of(VALID_PIECES.map(lambda p: (p, True)),
                                     INVALID_PIECES.map(lambda text: ((text, set()), False))),
                           min_size=1, max_size=6))
    spaced = [(draw(_padded(st.just(text))), values, ok) for (text, values), ok in pieces]
    spec = ",".join(text for text, _, _ in spaced)
    if not all(ok for _, _, ok in spaced):
        return spec, None
    return spec, set().union(*(values for _, values, _ in spaced))


ARBITRARY_SPECS = st.one_of(
    st.text(max_size=60),
    st.text(alphabet="0123456789-+, \tpaerPAER.x", max_size=40),
    st.lists(st.integers(-5, 10**14).map(str), max_size=6).map(",".join),
)


_CARRIER_PIECES = st.sampled_from([
    "There are", " ", "items", ".", "{n}", "{n}", "{", "}", "{N}", "{{n}}", "{0}", "{}", "\t", "é", "😀", "\\",
    "'", '"', "\r", "x" * 250,
])


CARRIER_LINES = st.lists(_CARRIER_PIECES, max_size=6).map("".join)


CARRIER_TEXTS = st.one_of(
    st.tuples(st.lists(CARRIER_LINES, max_size=8), st.sampled_from(["\n", "\r\n"]),
              st.sampled_from(["", "\n", "\n\n  \n"])).map(lambda t: t[1].join(t[0]) + t[2]),
    st.text(max_size=200),
)


CARRIER_FILE_BYTES = st.one_of(
    CARRIER_TEXTS.map(lambda text: text.encode("utf-8")),
    CARRIER_TEXTS.map(lambda text: b"\xef\xbb\xbf" + text.encode("utf-8")),  # a BOM
    CARRIER_TEXTS.map(lambda text: text.encode("utf-16")),  # NUL bytes throughout
    st.binary(max_size=400),
)


def expected_carriers(text: str) -> list[str] | None:
    """The carriers a text stands for, by the documented rules; None when it must be refused.

    One sentence per line (LF, CRLF or a lone CR ends one), trailing blank lines ignored; each line non-blank with
    exactly one {n}, at most MAX_CARRIER_CHARS characters, no repeats, at most MAX_CARRIERS lines.
    """
    lines = re.split(r"\r\n|\r|\n", text)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or len(lines) > MAX_CARRIERS or len(set(lines)) != len(lines):
        return None
    for line in lines:
        if not line.strip() or line.count(PLACEHOLDER) != 1 or len(line) > MAX_CARRIER_CHARS:
            return None
    return lines


def expected_carriers_from_bytes(data: bytes) -> list[str] | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else expected_carriers(text)


NAMES = st.one_of(
    st.sampled_from([
        "x'); DROP TABLE models; --", 'x"; DROP TABLE stimulus_sets; --', "' OR '1'='1", "\\", "\\'", "%", "_",
        "a\nb", "a\r\nb", "\t", "é", "😀", "名前", "\u202eevil", "a\x00b", "", " ", "   ", "x" * 10_000, "NULL",
        "null", "None", "-", "--name", "vec_0_0", "models", "meta", "paper", "custom-00000000",
    ]),
    st.text(max_size=40),
)


VALUE_KINDS = ("float32", "float64", "float16", "int32", "uint8", "bool", "complex64", "str", "datetime", "object")


FILLS = ("normal", "zeros", "constant", "all_nan", "all_inf", "partial_nan", "partial_inf", "overflow_all",
         "overflow_some")


MAGNITUDE_KINDS = ("ok", "ok_float", "ok_column", "short", "long", "duplicate", "fraction", "negative", "zero", "nan",
                   "inf", "too_large", "string", "bool", "missing")


CARRIER_KINDS = (None, "templates", "labels", "mixed", "blank", "short", "long", "duplicate", "two_placeholders",
                 "too_long", "numbers")


LAYER_LABEL_KINDS = (None, "ok", "repeated", "short", "long")


@st.composite
def npz_payloads(draw) -> dict:
    """Arrays for an npz import, good and bad, with what the import rules say must happen."""
    if draw(st.booleans()):
        shape = tuple(draw(st.integers(1, high)) for high in (7, 3, 4, 5))
    else:
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=5)))
    return {
        "shape": shape,
        "kind": draw(st.sampled_from(VALUE_KINDS)),
        "fill": draw(st.sampled_from(FILLS)),
        "magnitudes": draw(st.sampled_from(MAGNITUDE_KINDS)),
        "carriers": draw(st.sampled_from(CARRIER_KINDS)),
        "layer_labels": draw(st.sampled_from(LAYER_LABEL_KINDS)),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def payload_arrays(payload: dict) -> dict[str, np.ndarray]:
    """The arrays of a payload, as an npz would hold them."""
    rng = np.random.default_rng(payload["seed"])
    shape = payload["shape"]
    values = rng.normal(size=shape)
    fill = payload["fill"]
    flat = values.reshape(-1)
    if fill == "zeros":
        values = np.zeros(shape)
    elif fill == "constant":
        values = np.full(shape, 3.25)
    elif fill in ("all_nan", "all_inf", "overflow_all"):
        values = np.full(shape, {"all_nan": np.nan, "all_inf": -np.inf, "overflow_all": 1e300}[fill])
    elif fill in ("partial_nan", "partial_inf", "overflow_some") and flat.size > 1:
        flat[rng.integers(0, flat.size)] = {"partial_nan": np.nan, "partial_inf": np.inf, "overflow_some": -1e300}[fill]
    kind = payload["kind"]
    with np.errstate(invalid="ignore", over="ignore"):
        if kind == "str":
            per_carrier = values.astype(str)
        elif kind == "datetime":
            per_carrier = np.zeros(shape, dtype="datetime64[s]")
        elif kind == "object":
            per_carrier = values.astype(object)
        elif kind in ("int32", "uint8"):
            per_carrier = np.nan_to_num(values, nan=0, posinf=7, neginf=0).clip(0, 200).astype(kind)
        else:
            per_carrier = values.astype(kind)
    arrays = {"per_carrier": per_carrier}
    n_magnitudes = shape[0] if shape else 1
    n_carriers = shape[1] if len(shape) > 1 else 1
    n_layers = shape[2] if len(shape) > 2 else 1
    magnitudes = np.arange(1, n_magnitudes + 1) * 3
    chosen = payload["magnitudes"]
    variants = {
        "ok": magnitudes, "ok_float": magnitudes.astype(float), "ok_column": magnitudes.reshape(-1, 1),
        "short": magnitudes[:-1], "long": np.append(magnitudes, 10_000), "duplicate": np.ones_like(magnitudes),
        "fraction": magnitudes + 0.5, "negative": -magnitudes, "zero": magnitudes - 3,
        "nan": np.where(magnitudes == 3, np.nan, magnitudes), "inf": np.where(magnitudes == 3, np.inf, magnitudes),
        "too_large": magnitudes + MAX_MAGNITUDE, "string": magnitudes.astype(str), "bool": magnitudes > 0,
    }
    if chosen != "missing":
        arrays["magnitudes"] = variants[chosen]
    templates = [f"Sentence {i} has {{n}}." for i in range(n_carriers)]
    carrier_variants = {
        "templates": templates, "labels": [f"label {i}" for i in range(n_carriers)],
        "mixed": [t if i % 2 else f"label {i}" for i, t in enumerate(templates)], "blank": [""] + templates[1:],
        "short": templates[:-1], "long": [*templates, "extra {n}"], "duplicate": ["same {n}"] * n_carriers,
        "two_placeholders": ["{n} or {n}"] + templates[1:], "too_long": ["x" * 600 + " {n}"] + templates[1:],
        "numbers": list(range(100, 100 + n_carriers)),
    }
    if payload["carriers"] is not None:
        arrays["carriers"] = np.asarray(carrier_variants[payload["carriers"]])
    label_variants = {
        "ok": [f"layer {i}" for i in range(n_layers)], "repeated": ["same"] * n_layers,
        "short": [f"layer {i}" for i in range(n_layers - 1)], "long": [f"layer {i}" for i in range(n_layers + 1)],
    }
    if payload["layer_labels"] is not None:
        arrays["layer_labels"] = np.asarray(label_variants[payload["layer_labels"]])
    return arrays


def payload_must_be_refused(arrays: dict[str, np.ndarray]) -> bool:
    """The import rules, stated independently of the code under test."""
    if "per_carrier" not in arrays or "magnitudes" not in arrays:
        return True
    values = arrays["per_carrier"]
    if values.dtype.kind not in "fiu" or values.ndim != 4 or 0 in values.shape:
        return True
    with np.errstate(over="ignore"):
        if not np.isfinite(values.astype(np.float32)).any():
            return True  # all non-finite (NaN, Inf, or float32 overflow)
    n_magnitudes, n_carriers, n_layers, _ = values.shape
    magnitudes = np.asarray(arrays["magnitudes"]).ravel()
    if magnitudes.dtype.kind not in "fiu" or magnitudes.size != n_magnitudes:
        return True
    if not np.isfinite(magnitudes).all() or (magnitudes <= 0).any() or (magnitudes != np.round(magnitudes)).any():
        return True
    if len(set(magnitudes.tolist())) != magnitudes.size or magnitudes.max() > MAX_MAGNITUDE:
        return True
    if "carriers" in arrays:
        labels = [str(c) for c in np.asarray(arrays["carriers"]).ravel()]
        if len(labels) != n_carriers or any(label.count(PLACEHOLDER) > 1 for label in labels):
            return True
        templates = [label if PLACEHOLDER in label else f"{label} {PLACEHOLDER}" for label in labels]
        if len(set(templates)) != len(templates) or any(len(t) > MAX_CARRIER_CHARS for t in templates):
            return True
    return "layer_labels" in arrays and np.asarray(arrays["layer_labels"]).size != n_layers


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    np.savez(path, **arrays)  # object arrays are pickled, as a careless exporter would do
    return path


NAME_BATCHES = st.lists(NAMES, min_size=1, max_size=4, unique=True)


_CSV_CELLS = st.sampled_from(["1", "2", "3", "12.0", "-4", "0", "1e3", "x", "", " 7 ", "nan", "inf", "9" * 30,
                              "2.5", '"5"', "1,2"])


CSV_TEXTS = st.one_of(
    st.tuples(
        st.sampled_from(["number,count", "Number , Count", "count,number", "n,c", "", "# comment\nnumber,count",
                         "number;count"]),
        st.lists(st.tuples(_CSV_CELLS, _CSV_CELLS).map(",".join), max_size=6),
    ).map(lambda t: "\n".join([t[0], *t[1]])),
    st.text(max_size=80),
)


CSV_BYTES = st.one_of(CSV_TEXTS.map(str.encode), st.binary(max_size=200),
                      CSV_TEXTS.map(lambda text: text.encode("utf-16")))


# -- sweeps ----------------------------------------------------------------------------------------


def require_ray():
    """Ray, the optional extra of sweeps: skipped when missing outside CI, a failure under CI."""
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI is set but Ray is missing: pip install -r requirements-dev.txt")
        pytest.skip("Ray is not installed (pip install 'magdash[ray]')")
    return ray


def write_plan(folder: Path, models: dict[str, Path | str], *, extra: str = "", tasks: str = '["extract", "analyze"]',
               magnitudes: str = "1-12") -> Path:
    """A sweep plan over ``models`` (store name -> spec) on one small stimulus set, cheap analyses."""
    entries = "".join(f'[[models]]\nspec = "{spec}"\nname = "{name}"\n' for name, spec in models.items())
    plan = folder / "plan.toml"
    plan.write_text(
        f"tasks = {tasks}\nbatch_size = 8\n{extra}\n{entries}"
        f'[[stimuli]]\nname = "small"\nmagnitudes = "{magnitudes}"\n'
        "[analyze]\nn_boot = 20\n[phase]\nn_boot = 20\n",
        encoding="utf-8",
    )
    return plan


def stored_vectors(store: Store) -> dict[tuple[str, str, int], np.ndarray]:
    """Every stored layer's vectors by (model, stimulus set, layer)."""
    vectors = {}
    for row in store.extraction_progress().itertuples(index=False):
        for data in store.read_layers(row.name, row.set_name):
            vectors[(row.name, row.set_name, data.layer)] = data.vectors
    return vectors


def duplicate_rows(path: Path) -> int:
    """Items stored twice for the same model, and vectors two items share: extra ``done`` rows per
    (model, item) and per (shard, row), and ``done`` rows whose shard is not registered."""
    with duckdb.connect(str(path), read_only=True) as connection:
        return int(connection.execute(
            "SELECT (SELECT count(*) - count(DISTINCT (model_id, item_key)) FROM done)"
            " + (SELECT count(*) - count(DISTINCT (shard, row_index)) FROM done)"
            " + (SELECT count(*) FROM done WHERE shard NOT IN (SELECT shard FROM shards))"
        ).fetchone()[0])


class KillWorkerOnce:
    """A sweep's ``worker_progress`` that SIGKILLs its Ray worker at its ``at``-th batch, once.

    The first job to get there creates ``marker`` (exclusively) and dies right after logging the
    batch to ``events``, so the kill lands mid-job however fast the machine is; the job's next
    attempt, and every other job, find the marker and run on.
    """

    def __init__(self, marker: Path, events: Path, at: int = 2):
        self.marker, self.events, self.at, self.batches = marker, events, at, 0

    def __call__(self, label: str, done: int, total: int) -> None:
        import signal

        self.batches += 1
        with open(self.events, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {label} {done}/{total}\n")
        if self.batches != self.at:
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)


# -- hostile store paths --------------------------------------------------------------------------
# Paths a user (or a link to a dashboard) may give as a store; each builder makes what is at the
# path inside ``folder`` (or points outside it, at ``outside``) and returns the path as text.
# Device nodes are a stand-in the test makes (a character device like /dev/null's), never a real one.


def _socket_at(path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        previous = os.getcwd()
        os.chdir(path.parent)  # AF_UNIX names are short: bind the bare name
        try:
            server.bind(path.name)
        finally:
            os.chdir(previous)


def make_device_stand_in(path: Path) -> None:
    """A character device node like /dev/null's at ``path`` (skips the test without CAP_MKNOD)."""
    import stat

    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD (root)")


def _in_read_only_folder(folder: Path) -> str:
    if os.geteuid() == 0:  # root writes through any mode bits; nobody creates files in /proc/self
        return "/proc/self/magdash.duckdb"
    locked = folder / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    return str(locked / "store.duckdb")


def _file_as_parent(folder: Path) -> str:
    (folder / "notes.txt").write_text("a file, not a folder\n")
    return str(folder / "notes.txt" / "store.duckdb")


def _link(folder: Path, name: str, target: Path) -> str:
    (folder / name).symlink_to(target)
    return str(folder / name)


HOSTILE_STORE_PATHS = {
    "empty file": lambda folder, outside: (folder / "empty.duckdb").write_bytes(b"") or str(folder / "empty.duckdb"),
    "FIFO": lambda folder, outside: os.mkfifo(folder / "pipe.duckdb") or str(folder / "pipe.duckdb"),
    "folder": lambda folder, outside: (folder / "dir.duckdb").mkdir() or str(folder / "dir.duckdb"),
    "socket": lambda folder, outside: _socket_at(folder / "sock.duckdb") or str(folder / "sock.duckdb"),
    "character device": lambda folder, outside: make_device_stand_in(folder / "null.duckdb") or str(folder / "null.duckdb"),
    "symbolic link to nothing": lambda folder, outside: _link(folder, "dangling.duckdb", outside / "nothing.duckdb"),
    "symbolic link out of the folder": lambda folder, outside: _link(folder, "link.duckdb", outside / "store.duckdb"),
    "'..' out of the folder": lambda folder, outside: f"{folder}/../{outside.name}/new.duckdb",
    "absolute path elsewhere": lambda folder, outside: str(outside / "elsewhere" / "new.duckdb"),
    "/proc file": lambda folder, outside: "/proc/self/status",
    "very long name": lambda folder, outside: str(folder / ("x" * 300 + ".duckdb")),
    "non-UTF-8 name": lambda folder, outside: os.fsdecode(bytes(folder) + b"/caf\xe9.duckdb"),
    "read-only folder": lambda folder, outside: _in_read_only_folder(folder),
    "parent is a file": lambda folder, outside: _file_as_parent(folder),
}


def hostile_path_params(in_fast_loop: int = 3) -> list:
    """HOSTILE_STORE_PATHS as test parameters: the first ``in_fast_loop`` run in the fast loop,
    the others with the bad-input suites (``-m bad_input``; CI runs them all)."""
    return [pytest.param(name, marks=() if index < in_fast_loop else pytest.mark.bad_input)
            for index, name in enumerate(HOSTILE_STORE_PATHS)]
"""Every case of the hostile-path suites (tests/store/test_paths.py, tests/app/test_access.py)."""

def tree_state(*roots: Path) -> dict[str, tuple]:
    """Every entry under ``roots`` (not following links, opening no FIFO or device): its kind,
    size and, for regular files, a digest of its bytes; compared before and after a refused call."""
    import hashlib
    import stat

    state: dict[str, tuple] = {}

    def visit(path: Path) -> None:
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode):
            state[str(path)] = ("file", info.st_size, hashlib.sha256(path.read_bytes()).hexdigest())
        elif stat.S_ISDIR(info.st_mode):
            state[str(path)] = ("folder",)
            for child in sorted(os.listdir(path)):
                visit(path / child)
        else:
            state[str(path)] = (stat.S_IFMT(info.st_mode), os.readlink(path) if stat.S_ISLNK(info.st_mode) else "")

    for root in roots:
        visit(Path(root))
    return state


def write_tiny_gguf(path: Path) -> Path:
    """A small valid GGUF file (llama metadata, a three-token vocabulary, an f32 and an f16 tensor),
    written with the ``gguf`` package: what the GGUF header tests and fuzzers start from."""
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("llama.block_count", 2)
    writer.add_string("general.name", "tiny")
    writer.add_token_list(["a", "b", "c"])
    writer.add_tensor("t", np.zeros((4, 8), np.float32))
    writer.add_tensor("u", np.ones(32, np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
