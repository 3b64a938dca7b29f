"""The served dashboard's inputs, fuzzed: URL query parameters of every page, store paths from a
link in read-only (lab) mode, and the carrier text box.

Every page reads the same query parameters (``magdash.dashboard.QUERY_KEYS``), so they are tried
at the level of the view state, where they are cheap: after :func:`~magdash.dashboard.view_from_query`
and :func:`~magdash.dashboard.reconcile_view` every widget of the sidebar and of the pages can
take the view's values (a link never reaches a widget out of its bounds), and a value that could
not be used as given has a note. A handful of hostile links then go through the app itself.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from magdash import dashboard as db
from magdash.dashboard import stimuli_page as ds
from magdash.errors import MagdashError, StoreError
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from magdash.variability.conventions import CONVENTION_NAMES
from magdash.variability.measures import MIN_CARRIERS
from tests.fuzz.budget import fuzz_settings
from tests.support import app_pages, assert_clean, copy_store, open_app, record, shown

MODEL, CONTROL, OTHER = "m", "m@random", "other model"
N_LAYERS = 4
NOTE_LIMIT = 400
"""The longest note a link may cause (a note repeats at most the start of the link's value)."""


@pytest.fixture(scope="module")
def served_store(tmp_path_factory) -> Path:
    """A store of a model, its control and another model on the paper's stimuli (4 layers)."""
    path = tmp_path_factory.mktemp("served") / "lab" / "store.duckdb"
    rng = np.random.default_rng(45)
    for name in (MODEL, CONTROL, OTHER):
        vectors = rng.normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), N_LAYERS, 8)).astype(np.float32)
        Store(path).import_arrays(name, vectors, PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)
    return path


@pytest.fixture(scope="module")
def inventory(served_store) -> db.StoreInventory:
    return db.read_inventory(Store(served_store))


# -- URL query parameters ------------------------------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(-(10**6), 10**6), st.integers(-(2**70), 2**70), st.sampled_from([100_000, 100_001, -1, 0, N_LAYERS])
).map(str)
_HOSTILE_TEXT = st.sampled_from([
    "", " ", "\0", "<script>alert(1)</script>", "[x](javascript:alert(1))", "1e5", "0x10", "١٢", "1_000", "-0",
    "9" * 5000, "x" * 20_000, "2-1", "0-99999999999", "0,1,2,3", "0,0,0", "-1,2", "eucl", "paper", MODEL, CONTROL,
    OTHER, "nan", "inf", "../../etc/passwd",
])
_VALUES = st.one_of(_NUMBERS, _HOSTILE_TEXT, st.text(max_size=40),
                    st.tuples(_NUMBERS, _NUMBERS).map("-".join),
                    st.lists(_NUMBERS, max_size=8).map(",".join))
_QUERIES = st.dictionaries(
    st.sampled_from([key for key in db.QUERY_KEYS if key != "store"] + ["other", "", "BOOT"]),
    st.one_of(_VALUES, st.lists(_VALUES, max_size=3)),
    max_size=9,
)


def _last(value: str | list[str] | None) -> str | None:
    """The value a repeated parameter takes (the last, as Streamlit's query_params does)."""
    if isinstance(value, list):
        return value[-1] if value else None
    return value


def _as_int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


@fuzz_settings(700)
@given(query=_QUERIES)
def test_url_parameters_fit_their_widgets_or_are_noted(query, inventory):
    record("dashboard URL query (fuzz)")
    view, notes = db.view_from_query(query, store="lab/store.duckdb")
    view, repairs = db.reconcile_view(view, inventory)
    notes += repairs
    assert all(isinstance(note, str) and len(note) < NOTE_LIMIT for note in notes), [len(n) for n in notes]
    # Every widget can take the view's value (the sidebar's and the pages', same bounds).
    assert view.measure in db.MEASURE_CHOICES and view.conventions in CONVENTION_NAMES
    assert db.N_BOOT_RANGE.low <= view.n_boot <= db.N_BOOT_RANGE.high
    assert view.model in inventory.usable_models and view.stimuli in inventory.complete_sets[view.model]
    n_layers = inventory.record(view.model).n_layers
    assert view.core is None or 0 <= view.core[0] <= view.core[1] < n_layers
    assert view.layer is None or 0 <= view.layer < n_layers
    assert view.other is None or view.other in inventory.models_sharing(view.stimuli)
    n_carriers = len(inventory.carriers[view.stimuli])
    assert all(0 <= carrier < n_carriers for carrier in view.exclude)
    assert n_carriers - len(view.exclude) >= MIN_CARRIERS
    # A value not used as given is said, never silently replaced.
    boot = _as_int(_last(query.get("boot")))
    if _last(query.get("boot")) and view.n_boot != boot:
        assert any(note.startswith("bootstrap size") for note in notes), (query, notes)
    for key, field in (("measure", view.measure), ("conv", view.conventions), ("model", view.model)):
        asked = _last(query.get(key))
        if asked and asked != field:
            assert notes, (key, asked, field)
    layer = _as_int(_last(query.get("layer")))
    if _last(query.get("layer")) and view.layer != layer:
        assert any("layer" in note for note in notes), (query, notes)
    # The view's own link gives the same view, with nothing to say.
    again, said = db.view_from_query(db.view_to_query(view, store="lab/store.duckdb"), store="lab/store.duckdb")
    assert again == view and said == []


# -- store paths from a link, served read-only ----------------------------------------------------

_SEGMENTS = st.sampled_from(["..", ".", "", "store.duckdb", "link.duckdb", "sub", "new.duckdb", "etc", "passwd",
                             "\0", "~", "%2e%2e", "x" * 300, "café", "\ud800", " ", "proc", "self", "fd"])


@fuzz_settings(300)
@given(segments=st.lists(_SEGMENTS, min_size=1, max_size=6), absolute=st.booleans(), inside=st.booleans())
def test_a_store_path_from_a_link_is_opened_inside_the_folder_or_refused_without_server_paths(
        segments, absolute, inside, served_store):
    record("dashboard URL store path, read-only (fuzz)")
    folder = served_store.parent
    if not (folder / "link.duckdb").is_symlink():
        (folder / "link.duckdb").symlink_to(folder.parent / "elsewhere.duckdb")
    access = db.store_access({"MAGDASH_STORE": str(served_store), "MAGDASH_READ_ONLY": "1"})
    path = "/".join(segments)
    path = f"{folder}/{path}" if inside else (f"/{path}" if absolute else path)
    try:
        resolved = db.check_store_path(path, access)
    except StoreError as error:
        message = db.served_text(str(error), access)
        assert str(folder.parent) not in message and os.getcwd() not in message.replace(path, ""), message
        assert "elsewhere.duckdb" not in message  # where a link leads is not told
        return
    assert resolved.is_relative_to(folder)


# -- the carrier text box ---------------------------------------------------------------------------

_LINES = st.one_of(
    st.sampled_from(list(PAPER_CARRIERS) + ["{n}", "{n} {n}", "no placeholder", "a\0b {n}", "{n}\r", "\r{n}\r",
                                            "{N} apples", "{{n}}", "{n" + "}" * 3, "x" * 600 + " {n}", "\t{n}",
                                            "=cmd|' /C calc'!A0 {n}", "{n}\u202e", "\ufeff{n} items"]),
    st.text(max_size=60),
)


@fuzz_settings(500)
@given(lines=st.lists(_LINES, max_size=12), newline=st.sampled_from(["\n", "\r\n", "\r"]))
def test_the_carrier_text_box_parses_or_says_what_to_fix(lines, newline):
    record("dashboard carrier text box (fuzz)")
    carriers = ds.carriers_from_text(newline.join(lines))
    assert all(isinstance(problem, str) and problem for problem in carriers.problems)
    assert len(ds.problems_to_show(carriers.problems)) <= ds.MAX_PROBLEMS_SHOWN + 1
    if not carriers.ok:
        return
    try:
        preview = ds.preview_set(carriers.carriers, PAPER_MAGNITUDES[:3])
    except MagdashError as error:  # a typed error with a message, never another exception
        assert str(error)
        return
    assert len(preview.items) == 3 * len(carriers.carriers)


# -- a handful of hostile links through the app ------------------------------------------------------

HOSTILE_LINK = {"boot": "-7", "layer": str(10**30), "core": "3-1", "leave": "0,1,2,3,4,5,6", "measure": "<b>x</b>",
                "conv": "x" * 5000, "model": "[a](javascript:alert(1))", "vs": "\0", "stimuli": "../paper"}


@pytest.mark.slow
@pytest.mark.parametrize("page", app_pages())
def test_a_hostile_link_to_any_page_is_noted_and_harms_nothing(page, served_store, tmp_path, monkeypatch):
    """Every page, served read-only, under a link whose every parameter is out of bounds."""
    record("app URL query, every page (fuzz)")
    store = copy_store(served_store, tmp_path)
    before = store.read_bytes()
    monkeypatch.setenv("MAGDASH_READ_ONLY", "1")
    at = open_app(store, monkeypatch, query=HOSTILE_LINK)
    notes = [shown(warning) for warning in at.sidebar.warning]
    assert any("is below what the sidebar allows" in note for note in notes), notes
    assert all(len(note) < NOTE_LIMIT for note in notes)
    at.switch_page(page).run()
    assert_clean(at, page)
    assert not any(re.search(r"Traceback|StreamlitValue", shown(e)) for e in at.main.error)
    assert store.read_bytes() == before
