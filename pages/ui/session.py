"""The session's view and the context of the script run in progress; the app's navigation."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st
from streamlit.errors import StreamlitSecretNotFoundError

from magdash import dashboard
from magdash.dashboard.jobs import new_owner
from magdash.errors import MagdashError, NoStoreError
from magdash.store import ModelRecord, Store
from pages.ui.caches import inventory_for, store_for

ROOT = Path(__file__).resolve().parents[2]
VIEW_KEY = "magdash_view"

# The context of the script run in progress. Streamlit runs each session's script in its own
# thread, so a thread-local cannot leak between sessions; app.py clears it after every run.
_RUN = threading.local()


@dataclass
class AppContext:
    """What every page needs: the view, the open store and what it holds."""

    view: dashboard.ViewState
    store: Store | None = None
    inventory: dashboard.StoreInventory | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    read_only: bool = False
    """The dashboard's read-only mode (:mod:`magdash.dashboard.access`)."""

    @property
    def record(self) -> ModelRecord | None:
        if self.inventory is None or self.view.model is None:
            return None
        return self.inventory.record(self.view.model)

    @property
    def has_data(self) -> bool:
        return self.inventory is not None and bool(self.inventory.usable_models)


def serve_settings() -> None:
    """Streamlit's settings for the way the dashboard is served (app.py calls it first): in
    read-only mode, a lab's, no traceback reaches the browser (``client.showErrorDetails``;
    :data:`magdash.dashboard.access.SERVED_ERROR_DETAILS`)."""
    global _ERROR_DETAILS_BEFORE
    if dashboard.store_access().read_only:
        if _ERROR_DETAILS_BEFORE is None:
            _ERROR_DETAILS_BEFORE = st.get_option("client.showErrorDetails")
        st.set_option("client.showErrorDetails", dashboard.SERVED_ERROR_DETAILS)
    elif _ERROR_DETAILS_BEFORE is not None:  # the mode changed within a process (tests): as configured again
        st.set_option("client.showErrorDetails", _ERROR_DETAILS_BEFORE)
        _ERROR_DETAILS_BEFORE = None


_ERROR_DETAILS_BEFORE: str | None = None
"""``client.showErrorDetails`` as configured, while :func:`serve_settings` has replaced it."""


def login_configured() -> bool:
    """Whether ``.streamlit/secrets.toml`` configures Streamlit's login (an ``[auth]`` section
    for an OpenID Connect provider): then only logged-in users see the dashboard."""
    try:
        return "auth" in st.secrets
    except (FileNotFoundError, KeyError, StreamlitSecretNotFoundError):
        return False


def login_gate() -> None:
    """With login configured, stop the run of anyone not logged in, after a Log in button
    (``st.login``: the provider's page, then back here). Without it the dashboard is open to
    whoever reaches the server: keep it on localhost, or behind a reverse proxy that
    authenticates (docs/how-to/serve-lab.md)."""
    if not login_configured() or st.user.is_logged_in:
        return
    st.title("magdash")
    st.info("This dashboard is for logged-in users.")
    st.button("Log in", on_click=st.login, type="primary", key="login")
    st.stop()


OWNER_KEY = "magdash_job_owner"


def session_owner() -> str:
    """This session's owner token (:func:`magdash.dashboard.jobs.new_owner`), kept in its session
    state: the jobs it starts are its own to cancel, and it is told how they end."""
    if OWNER_KEY not in st.session_state:
        st.session_state[OWNER_KEY] = new_owner()
    return st.session_state[OWNER_KEY]


def set_view(view: dashboard.ViewState) -> None:
    st.session_state[VIEW_KEY] = view


def current_view() -> dashboard.ViewState:
    """The session's view; on a session's first run it comes from the URL."""
    if VIEW_KEY not in st.session_state:
        view, notes = dashboard.view_from_query(st.query_params.to_dict())
        st.session_state[VIEW_KEY] = view
        st.session_state["magdash_link_notes"] = notes
    return st.session_state[VIEW_KEY]


def update_view(**changes: Any) -> None:
    set_view(dataclasses.replace(current_view(), **changes))


def view_setter(field_name: str, widget_key: str, convert: Callable[[Any], Any] = lambda v: v) -> Callable[[], None]:
    def callback() -> None:
        changes = {field_name: convert(st.session_state[widget_key])}
        # A new model, stimulus set or store invalidates choices that belong to the old one. The
        # layer stays (the view is repaired if the new model lacks it): comparing models at the
        # same layer is what a switch is for.
        if field_name in ("model", "stimuli", "store"):
            changes |= {"other": None, "exclude": ()}
        if field_name in ("model", "store"):
            changes |= {"core": None}
        if field_name == "store":
            changes |= {"model": None, "stimuli": None, "layer": None}
        update_view(**changes)

    return callback


def view_key(field_name: str, value: Any) -> str:
    """Key of a widget bound to a view field: it carries the value, so a change of the view from
    elsewhere (another page, a reconciled choice) creates the widget afresh with that value and
    session state never has to be written behind a widget's back."""
    return f"view-{field_name}-{value!r}"


def open_context(view: dashboard.ViewState) -> AppContext:
    """Open the view's store and read its inventory (cached until the store file changes).

    A path with no store yet gives an empty inventory and no store: reading never creates one
    (the first run and the Extract page do, through :func:`pages.ui.caches.new_store`)."""
    read_only = dashboard.store_access().read_only
    try:
        store = store_for(view.store)
        inventory = inventory_for(view.store, dashboard.store_stamp(view.store))
    except NoStoreError:
        store, inventory = None, dashboard.empty_inventory(view.store)
    except MagdashError as error:
        return AppContext(view=view, error=dashboard.served_text(str(error), dashboard.store_access()), read_only=read_only)
    view, notes = dashboard.reconcile_view(view, inventory)
    return AppContext(view=view, store=store, inventory=inventory, notes=notes, read_only=read_only)


def start_run(context: AppContext) -> None:
    """Make ``context`` this run's (:func:`pages.ui.sidebar.setup` calls it)."""
    _RUN.context = context


def end_run() -> None:
    """Forget this run's context (app.py calls it after the page, in ``finally``)."""
    _RUN.context = None


def context() -> AppContext:
    """The context :func:`pages.ui.sidebar.setup` built for this run.

    The one workaround the ``pages/`` folder costs: Streamlit treats a ``pages/`` folder beside
    the main script as a classic multipage app until the first ``st.navigation`` call of the
    server process, so a fresh server's first request for a bookmarked page (``/scaling``)
    runs that page file alone, without app.py, and finds no context. Declaring the navigation
    switches Streamlit over for good, and the rerun goes through app.py. Renaming the folder
    would avoid it, but ``pages/`` is where Streamlit users look for the pages.
    """
    current = getattr(_RUN, "context", None)
    if current is None:
        build_navigation()
        st.rerun()
    return current


def build_navigation():
    """The app's navigation: the files of ``pages/`` grouped Data · Noise · Geometry · Depth · Behaviour · Robustness.

    Streamlit's own menu is hidden (``client.showSidebarNavigation = false`` in
    ``.streamlit/config.toml``): a fresh session would list the ``pages/`` files in it for a
    moment before the app's navigation replaced them. The menu is drawn here instead, as page
    links at the top of the sidebar, from the first run on.
    """
    pages = {
        group: [
            st.Page(str(ROOT / page.file), title=page.title, icon=page.icon, url_path=page.url_path,
                    default=page.url_path == "home")
            for page in group_pages
        ]
        for group, group_pages in dashboard.page_groups(root=ROOT).items()
    }
    navigation = st.navigation(pages, position="hidden")
    with st.sidebar.container(key="magdash_navigation"):
        for group, group_pages in pages.items():
            st.caption(group)
            for page in group_pages:
                st.page_link(page)
        st.divider()
    return navigation


def sync_query(view: dashboard.ViewState) -> None:
    target = dashboard.view_to_query(view)
    if st.query_params.to_dict() != target:
        st.query_params.from_dict(target)
