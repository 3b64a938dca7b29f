"""What the dashboard may open and change (magdash/dashboard/access.py) under AppTest: hostile
store paths from the sidebar and the URL, the allowed folders, read-only mode, the login gate.

The store the app starts on lies in ``folder``, its only allowed folder unless
``$MAGDASH_STORE_FOLDERS`` adds one. For every case of ``tests.support.HOSTILE_STORE_PATHS``,
given in the sidebar and in the URL: the app shows a message (an error, or "no store here yet"
for a path inside the allowed folder with nothing at it), never a traceback, and nothing under
the test's folders is created, changed or deleted.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from magdash.dashboard.jobs import first_run_label
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from tests.support import (
    HOSTILE_STORE_PATHS,
    assert_clean,
    copy_store,
    file_state,
    hostile_path_params,
    labels,
    open_app,
    record,
    shown,
    tree_state,
    widget,
)

pytestmark = pytest.mark.timeout(300)
MODEL = "seed"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("seeded") / "store.duckdb"
    vectors = np.random.default_rng(3).normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 4, 8))
    Store(path).import_arrays(MODEL, vectors.astype(np.float32), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)
    return path


@pytest.fixture
def areas(seeded, tmp_path):
    """(folder, outside, store): the allowed folder holding the app's store, and a sibling."""
    folder, outside = tmp_path / "folder", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    store = copy_store(seeded, folder)
    copy_store(seeded, outside)
    return folder, outside, store


def said(at) -> str:
    kinds = ("error", "info", "warning")
    return "\n".join(shown(e) for kind in kinds for e in at.sidebar.get(kind)) + "\n" + "\n".join(
        shown(e) for kind in kinds for e in at.main.get(kind))


def _state(tmp_path: Path, store: Path) -> dict:
    """The file system under the test's folder, but for the app's own store (pages cache their
    analyses in it, as they should)."""
    return {path: entry for path, entry in tree_state(tmp_path).items() if not path.startswith(str(store))}


def _outcome_is_a_message(at, path: str, folder: Path) -> None:
    text = said(at)
    assert at.sidebar.error or "No store at" in text, text[:600]
    assert not at.sidebar.selectbox, "a refused path offers no model"
    if not os.path.realpath(path).startswith(str(folder) + os.sep):
        assert "opens stores only inside" in text, text[:600]


@pytest.mark.parametrize("case", hostile_path_params())
@pytest.mark.slow
def test_hostile_store_paths_in_the_sidebar_and_the_url_harm_nothing(case, areas, tmp_path, monkeypatch):
    folder, outside, store = areas
    # Text from a browser is Unicode: bytes that are not UTF-8 arrive as replacement characters.
    path = HOSTILE_STORE_PATHS[case](folder, outside).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    before = _state(tmp_path, store)
    record("app store path (hostile)", 2)
    at = open_app(store, monkeypatch)
    widget(at.sidebar.text_input, "Store").set_value(path).run()
    assert_clean(at, case)
    _outcome_is_a_message(at, path, folder)
    at.switch_page("pages/scaling.py").run()
    assert_clean(at, case)
    linked = open_app(store, monkeypatch, query={"store": path}, page="pages/weber.py")
    _outcome_is_a_message(linked, path, folder)
    assert _state(tmp_path, store) == before, f"{case}: the app changed the file system"


def test_a_url_never_creates_a_store_or_a_folder(areas, tmp_path, monkeypatch):
    folder, outside, store = areas
    before = _state(tmp_path, store)
    for path in (str(folder / "new.duckdb"), str(folder / "new" / "deep" / "x.duckdb"),
                 str(tmp_path / "any" / "new" / "folder" / "x.duckdb"), "../../../elsewhere/z.duckdb"):
        at = open_app(store, monkeypatch, query={"store": path})
        assert at.sidebar.error or any("No store at" in shown(i) for i in at.sidebar.info), said(at)
        at = open_app(store, monkeypatch, query={"store": path}, page="pages/extract.py")
    assert _state(tmp_path, store) == before


def test_more_folders_are_allowed_by_the_environment(areas, monkeypatch):
    folder, outside, store = areas
    at = open_app(store, monkeypatch, query={"store": str(outside / "store.duckdb")})
    assert "opens stores only inside" in said(at)
    monkeypatch.setenv("MAGDASH_STORE_FOLDERS", f"/nonexistent{os.pathsep}{outside}")
    at = open_app(store, monkeypatch, query={"store": str(outside / "store.duckdb")})
    assert widget(at.sidebar.selectbox, "Model").value == MODEL


@pytest.mark.slow
def test_read_only_mode_shows_results_and_writes_nothing(areas, monkeypatch):
    folder, _, store = areas
    monkeypatch.setenv("MAGDASH_READ_ONLY", "1")
    before = file_state(store)
    at = open_app(store, monkeypatch, query={"boot": "0"})
    assert any("Read-only" in shown(c) for c in at.sidebar.caption)
    at.switch_page("pages/scaling.py").run()
    assert_clean(at)
    assert not at.main.error
    assert len(at.get("vega_lite_chart")) == 2  # the analysis is computed...
    assert file_state(store) == before  # ...and not kept
    at.switch_page("pages/extract.py").run()
    assert any("read-only" in shown(i) and "extract models" in shown(i) for i in at.main.info)
    assert "Extract" not in labels(at.button)
    at.switch_page("pages/stimuli.py").run()
    assert widget(at.button, "Save stimulus set").disabled
    at.switch_page("pages/frequency.py").run()
    assert widget(at.button, "Save source").disabled
    at.switch_page("pages/controls.py").run()
    assert widget(at.button, "Extract variant").disabled
    assert file_state(store) == before
    # A missing store in read-only mode: the first run cannot create it.
    empty = open_app(str(folder / "new.duckdb"), monkeypatch)
    assert widget(empty.button, f"Run the paper's protocol on {first_run_label()}").disabled
    assert not (folder / "new.duckdb").exists()


def test_a_store_that_needs_a_migration_is_refused_in_read_only_mode(tmp_path, monkeypatch):
    from tests.support import unpack_store

    old = unpack_store(4, tmp_path)
    before = old.read_bytes()
    monkeypatch.setenv("MAGDASH_READ_ONLY", "1")
    at = open_app(str(old), monkeypatch)
    assert any("read-only store is never changed" in shown(e) for e in at.sidebar.error), said(at)
    assert old.read_bytes() == before


def test_with_login_configured_only_a_logged_in_user_gets_in(areas, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.support import APP, scan_component_manifests_once

    _, _, store = areas
    scan_component_manifests_once()
    monkeypatch.setenv("MAGDASH_STORE", str(store))
    auth = {"auth": {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32,
                     "client_id": "magdash", "client_secret": "s",
                     "server_metadata_url": "https://idp.example/.well-known/openid-configuration"}}
    at = AppTest.from_file(str(APP), default_timeout=300)
    at.secrets.update(auth)
    at.user = {"is_logged_in": False}
    at.run()
    assert_clean(at)
    assert labels(at.button) == ["Log in"]
    assert not at.sidebar.text_input and not at.get("vega_lite_chart")
    at.user = {"is_logged_in": True, "email": "researcher@lab.example"}
    at.run()
    assert_clean(at)
    assert widget(at.sidebar.selectbox, "Model").value == MODEL
    assert "Log out" in labels(at.sidebar.button)


def test_without_login_configured_the_dashboard_is_open_and_has_no_login_button(areas, monkeypatch):
    _, _, store = areas
    at = open_app(store, monkeypatch)
    assert "Log in" not in labels(at.button) and "Log out" not in labels(at.sidebar.button)


def test_a_page_that_writes_says_why_it_cannot(tmp_path, monkeypatch):
    from magdash import dashboard as db
    from magdash.errors import NoStoreError, ReadOnlyStoreError
    from pages.ui.caches import new_store
    from pages.ui.session import AppContext
    from pages.ui.widgets import store_to_write

    missing = str(tmp_path / "new.duckdb")
    monkeypatch.setenv("MAGDASH_STORE", missing)
    with pytest.raises(NoStoreError, match="nowhere to go: extract a model first"):
        store_to_write(AppContext(view=db.ViewState(store=missing)), "saving a stimulus set")
    with pytest.raises(ReadOnlyStoreError, match="Saving a stimulus set is not possible. This dashboard is read-only"):
        store_to_write(AppContext(view=db.ViewState(store=missing), read_only=True), "saving a stimulus set")
    monkeypatch.setenv("MAGDASH_READ_ONLY", "1")
    with pytest.raises(ReadOnlyStoreError, match="does not extract models or create stores"):
        new_store(missing)
    assert not (tmp_path / "new.duckdb").exists()


def test_saving_stimuli_where_no_store_is_yet_says_what_creates_one(tmp_path, monkeypatch):
    at = open_app(str(tmp_path / "new.duckdb"), monkeypatch, page="pages/stimuli.py")
    widget(at.button, "Save stimulus set").click().run()
    assert_clean(at)
    assert any("no store at" in shown(e) and "extract a model first" in shown(e) for e in at.error), said(at)
    assert not (tmp_path / "new.duckdb").exists()


@pytest.fixture
def served(monkeypatch):
    """Read-only mode, as a lab serves the dashboard; Streamlit's error details restored after."""
    from streamlit import config

    before = config.get_option("client.showErrorDetails")
    monkeypatch.setenv("MAGDASH_READ_ONLY", "1")
    yield
    config.set_option("client.showErrorDetails", before)


def test_a_links_bootstrap_size_above_the_sidebars_is_clamped_with_a_note(areas, served, monkeypatch):
    """``/scaling?boot=100001`` showed StreamlitValueAboveMaxError with its traceback and the
    server's paths; the link's value is now clamped to the widget's own bounds, with a note."""
    from magdash import dashboard as db

    _, _, store = areas
    at = open_app(store, monkeypatch, query={"boot": "100001"})
    assert any("'100001' in the link is above what the sidebar allows" in shown(w) for w in at.sidebar.warning), said(at)
    at.switch_page("pages/scaling.py").run()
    assert_clean(at)
    boot = widget(at.sidebar.number_input, "Bootstrap resamples")
    assert (boot.min, boot.max) == (db.N_BOOT_RANGE.low, db.N_BOOT_RANGE.high)  # one declaration for both
    assert boot.value == db.N_BOOT_RANGE.high


def test_a_served_dashboard_shows_no_traceback_and_no_server_paths(areas, served, monkeypatch):
    """An unexpected error reaches a viewer as Streamlit's generic message: no type, text or
    traceback (``client.showErrorDetails``); a refused store names its path relative to the
    allowed folder, and never where a link leads."""
    from magdash import dashboard as db

    folder, outside, store = areas
    (folder / "link.duckdb").symlink_to(outside / "store.duckdb")
    (folder / "empty.duckdb").write_bytes(b"")
    for path, expected in ((folder / "link.duckdb", "'link.duckdb' is outside"), (folder / "empty.duckdb", "empty.duckdb")):
        at = open_app(store, monkeypatch, query={"store": str(path)})
        text = said(at)
        assert expected in text, text
        assert str(folder) not in text and str(outside) not in text and os.getcwd() not in text, text

    def broken(*args, **kwargs):
        raise RuntimeError(f"internal failure at {folder} in process {os.getpid()}")

    monkeypatch.setattr(db, "reconcile_view", broken)
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=300).run()
    assert at.exception, "the failure reaches the page..."
    shown_to_viewer = " ".join([e.message for e in at.exception] + [line for e in at.exception for line in e.stack_trace])
    assert "internal failure" not in shown_to_viewer and str(folder) not in shown_to_viewer  # ...without its details
    assert not any(e.stack_trace for e in at.exception)
