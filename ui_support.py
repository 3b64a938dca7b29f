"""Streamlit side of the dashboard: caches, the shared sidebar, figures with download buttons.

Everything that decides something lives in ``magdash.dashboard*`` (pure and tested without
Streamlit); this module only connects it to Streamlit:

- caches: one :class:`~magdash.store.Store` per path and loaded models through
  ``st.cache_resource``; the store inventory, analyses, comparisons, layer vectors and finished
  figure specs through ``st.cache_data``, keyed on cheap keys (paths, names, data tokens), so a
  widget change on a populated store re-renders without touching the store;
- :func:`setup`: the view (from the URL on a session's first run, then from the sidebar),
  the sidebar widgets, and the query string kept in step with the view;
- :func:`figure` and :func:`table`: a chart or table with its PNG/SVG/CSV download buttons;
- :func:`job_panel`: a running job's progress bar with count, ETA and Cancel.

User text is never rendered as HTML: no ``unsafe_allow_html`` anywhere, and user-provided
strings go into widgets, tables or code blocks.
"""

from __future__ import annotations

import dataclasses
import html
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from magdash import dashboard as db
from magdash import dashboard_figures as figs
from magdash import report
from magdash.dashboard_jobs import Job, JobRegistry, JobSnapshot, format_seconds
from magdash.errors import MagdashError
from magdash.store import ModelRecord, Store
from magdash.tables import measure_label

ROOT = Path(__file__).resolve().parent
VIEW_KEY = "magdash_view"
SEEN_JOBS_KEY = "magdash_seen_jobs"


# The context of the script run in progress. Streamlit runs each session's script in its own
# thread, so a thread-local cannot leak between sessions; app.py clears it after every run.
_RUN = threading.local()


@dataclass
class AppContext:
    """What every page needs: the view, the open store and what it holds."""

    view: db.ViewState
    store: Store | None = None
    inventory: db.StoreInventory | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def record(self) -> ModelRecord | None:
        if self.inventory is None or self.view.model is None:
            return None
        return self.inventory.record(self.view.model)

    @property
    def has_data(self) -> bool:
        return self.inventory is not None and bool(self.inventory.usable_models)


# -- caches ------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def store_for(path: str) -> Store:
    """One Store per path; it holds no connection, so sharing it across sessions is safe."""
    return Store(path)


@st.cache_resource(show_spinner=False)
def job_registry() -> JobRegistry:
    return JobRegistry()


@st.cache_resource(show_spinner=False, max_entries=4)
def tokenizer_for(spec: str):
    """A model's tokenizer alone, for the tokenization preview (no weights are loaded)."""
    from magdash.models import load_tokenizer

    return load_tokenizer(spec)


@st.cache_data(show_spinner=False, max_entries=16)
def inventory_for(path: str, stamp: tuple) -> db.StoreInventory:
    """The store's inventory; ``stamp`` (file mtime and size) makes a write invalidate it."""
    return db.read_inventory(store_for(path))


@st.cache_data(show_spinner=False, ttl=60)
def cached_repos() -> list[str]:
    from magdash.models import cached_repo_ids

    return cached_repo_ids()


@st.cache_data(show_spinner=False, max_entries=64)
def analysis_for(key: db.AnalysisKey):
    from magdash.analysis import analyze

    return analyze(store_for(key.store), key.model, key.stimuli, key.params)


@st.cache_data(show_spinner=False, max_entries=32)
def comparison_for(key: db.ComparisonKey):
    from magdash.analysis import compare

    return compare(store_for(key.store), key.model_a, key.model_b, key.stimuli, key.params)


@st.cache_data(show_spinner=False, max_entries=32)
def layer_for(key: db.LayerKey):
    return store_for(key.store).read_layer(key.model, key.stimuli, key.layer)


@st.cache_data(show_spinner=False, max_entries=16)
def frequency_source_for(key: db.SourceKey):
    from magdash.frequency_sources import load_source

    return load_source(key.name, store_for(key.store))


@st.cache_data(show_spinner=False, max_entries=16)
def frequency_sources_for(path: str, stamp: tuple) -> pd.DataFrame:
    from magdash.frequency_sources import list_sources

    return list_sources(store_for(path))


@st.cache_data(show_spinner=False, max_entries=16)
def phase_for(key: db.PhaseKey):
    from magdash.phase_run import phase_from_store

    return phase_from_store(store_for(key.store), key.model, key.stimuli, n_boot=key.n_boot)


_RESOLVERS: dict[type, Callable[[Any], Any]] = {
    db.PhaseKey: phase_for,
    db.AnalysisKey: analysis_for,
    db.ComparisonKey: comparison_for,
    db.LayerKey: layer_for,
    db.SourceKey: frequency_source_for,
}


@dataclass(frozen=True)
class Several:
    """Several keys by name, passed as one builder argument: it receives {name: result}."""

    items: tuple[tuple[str, Any], ...]


def resolve(value: Any) -> Any:
    """A key's cached object (analysis, comparison, layer, source, phase); other values as is."""
    if isinstance(value, Several):
        return {name: resolve(key) for name, key in value.items}
    resolver = _RESOLVERS.get(type(value))
    return resolver(value) if resolver is not None else value


def _resolve_all(args: tuple) -> list:
    return [resolve(value) for value in args]


@st.cache_data(show_spinner=False, max_entries=512)
def _figure_spec(builder: str, args: tuple) -> dict:
    chart = getattr(figs, builder)(*_resolve_all(args))
    return chart.to_dict()


@st.cache_data(show_spinner=False, max_entries=256)
def cached(builder: str, *args: Any) -> Any:
    """A builder's result (a table, a frame for a chart), cached on its (hashable) arguments."""
    return getattr(figs, builder)(*_resolve_all(args))


def results_arg(keys: dict[str, Any]) -> Several:
    """Pass several results (name -> key) to a builder as one hashable argument."""
    return Several(tuple(keys.items()))


def compute(builder: str, *args: Any) -> Any:
    """A builder's result computed on every run (cheap ones: sentences from cached results)."""
    return getattr(figs, builder)(*_resolve_all(args))


# -- figures and tables ------------------------------------------------------------------


def figure(builder: str, *args: Any, name: str, data: pd.DataFrame | None = None) -> dict | None:
    """Draw a dashboard figure with PNG/SVG (and CSV of ``data``) download buttons.

    ``builder`` names a function of :mod:`magdash.dashboard_figures`; keys among ``args`` are
    resolved to cached results. The finished Vega-Lite spec is cached, so a rerun with the same
    inputs costs no chart building. Errors of the user's making show as a message.
    """
    try:
        spec = _figure_spec(builder, tuple(args))
    except MagdashError as error:
        show_error(error)
        return None
    compound = "vconcat" in spec or "hconcat" in spec
    st.vega_lite_chart(spec, width="content" if compound else "stretch")
    slug = report.safe_filename(name)
    columns = st.columns([1, 1, 1, 5] if data is not None else [1, 1, 6])
    columns[0].download_button(
        "PNG", data=lambda: report.chart_to_png(spec), file_name=f"{slug}.png", mime="image/png",
        on_click="ignore", key=f"png-{slug}", icon=":material/image:",
    )
    columns[1].download_button(
        "SVG", data=lambda: report.chart_to_svg(spec), file_name=f"{slug}.svg", mime="image/svg+xml",
        on_click="ignore", key=f"svg-{slug}", icon=":material/draw:",
    )
    if data is not None:
        columns[2].download_button(
            "CSV", data=lambda: report.table_to_csv(data), file_name=f"{slug}.csv", mime="text/csv",
            on_click="ignore", key=f"csvfig-{slug}", icon=":material/table:",
        )
    return spec


def table(frame_or_builder: pd.DataFrame | str, *args: Any, name: str, height: int | str = "auto") -> pd.DataFrame | None:
    """A table with a CSV download button; a builder name is resolved and cached like figures."""
    if isinstance(frame_or_builder, str):
        try:
            frame = cached(frame_or_builder, *args)
        except MagdashError as error:
            show_error(error)
            return None
    else:
        frame = frame_or_builder
    st.dataframe(frame, hide_index=True, width="stretch", height=height)
    slug = report.safe_filename(name)
    st.download_button(
        "CSV", data=lambda: report.table_to_csv(frame), file_name=f"{slug}.csv", mime="text/csv",
        on_click="ignore", key=f"csv-{slug}", icon=":material/table:",
    )
    return frame


# -- view, sidebar and context -----------------------------------------------------------


def _set_view(view: db.ViewState) -> None:
    st.session_state[VIEW_KEY] = view


def current_view() -> db.ViewState:
    """The session's view; on a session's first run it comes from the URL."""
    if VIEW_KEY not in st.session_state:
        view, notes = db.view_from_query(st.query_params.to_dict())
        st.session_state[VIEW_KEY] = view
        st.session_state["magdash_link_notes"] = notes
    return st.session_state[VIEW_KEY]


def update_view(**changes: Any) -> None:
    _set_view(dataclasses.replace(current_view(), **changes))


def view_setter(field_name: str, widget_key: str, convert: Callable[[Any], Any] = lambda v: v) -> Callable[[], None]:
    def callback() -> None:
        changes = {field_name: convert(st.session_state[widget_key])}
        # A new model or store invalidates choices that belong to the old one.
        if field_name in ("model", "store"):
            changes |= {"core": None, "layer": None, "other": None}
        if field_name == "store":
            changes |= {"model": None, "stimuli": None}
        update_view(**changes)

    return callback


def view_key(field_name: str, value: Any) -> str:
    """Key of a widget bound to a view field: it carries the value, so a change of the view from
    elsewhere (another page, a reconciled choice) creates the widget afresh with that value and
    session state never has to be written behind a widget's back."""
    return f"view-{field_name}-{value!r}"


def open_context(view: db.ViewState) -> AppContext:
    """Open the view's store and read its inventory (cached until the store file changes)."""
    try:
        store = store_for(view.store)
        inventory = inventory_for(view.store, db.store_stamp(view.store))
    except MagdashError as error:
        return AppContext(view=view, error=str(error))
    view, notes = db.reconcile_view(view, inventory)
    return AppContext(view=view, store=store, inventory=inventory, notes=notes)


def setup() -> AppContext:
    """The shared part of every run: view, store, sidebar, query string. Returns the context."""
    context = open_context(current_view())
    _set_view(context.view)
    try:
        sidebar(context)
    except MagdashError as error:
        st.sidebar.error(plain(str(error)))
    context = open_context(current_view())
    _set_view(context.view)
    sync_query(context.view)
    _RUN.context = context
    return context


def end_run() -> None:
    """Forget this run's context (app.py calls it after the page, in ``finally``)."""
    _RUN.context = None


def context() -> AppContext:
    """The context :func:`setup` built for this run.

    A page file run without app.py (a fresh server's first request for a bookmarked page,
    when Streamlit still treats ``pages/`` as a classic multipage folder) has none: declaring
    the navigation switches Streamlit to it, and the rerun goes through app.py.
    """
    current = getattr(_RUN, "context", None)
    if current is None:
        build_navigation()
        st.rerun()
    return current


def build_navigation():
    """The app's navigation: the files of ``pages/`` grouped Data · Noise · Geometry · Depth."""
    pages = {
        group: [
            st.Page(str(ROOT / page.file), title=page.title, icon=page.icon, url_path=page.url_path,
                    default=page.url_path == "home")
            for page in group_pages
        ]
        for group, group_pages in db.page_groups(root=ROOT).items()
    }
    return st.navigation(pages, position="sidebar")


def sync_query(view: db.ViewState) -> None:
    target = db.view_to_query(view)
    if st.query_params.to_dict() != target:
        st.query_params.from_dict(target)


def sidebar(context: AppContext) -> None:
    view = context.view
    with st.sidebar:
        st.caption("Global choices (kept across pages and in the URL)")
        store_key = view_key("store", view.store)
        st.text_input(
            "Store", value=view.store, key=store_key,
            on_change=view_setter("store", store_key, lambda v: v.strip() or db.default_store()),
            help="DuckDB store file; the CLI's --store or $MAGDASH_STORE. A new path starts an empty store.",
        )
        if context.error:
            st.error(plain(context.error))
            return
        inventory = context.inventory
        if not inventory.usable_models:
            st.info("This store holds no complete extraction yet: see Home or Extract.")
            return
        models = inventory.usable_models
        model_key = view_key("model", view.model)
        st.selectbox(
            "Model", models, index=models.index(view.model), key=model_key, on_change=view_setter("model", model_key),
            format_func=lambda name: f"{name} (random-weight control)" if db.is_control(inventory.records[name]) else name,
        )
        sets = inventory.complete_sets[view.model]
        sets_key = view_key("stimuli", (view.model, view.stimuli))
        st.selectbox("Stimulus set", sets, index=sets.index(view.stimuli), key=sets_key,
                     on_change=view_setter("stimuli", sets_key))
        overflow = inventory.overflow_warning(view.model, view.stimuli)
        if overflow:
            st.warning(plain(overflow), icon=":material/warning:")
        measure_key = view_key("measure", view.measure)
        st.selectbox("Measure", db.MEASURE_CHOICES, index=db.MEASURE_CHOICES.index(view.measure), key=measure_key,
                     format_func=measure_label, on_change=view_setter("measure", measure_key),
                     help="V_eucl, V_residual and V_proj are the paper's measures; the other two are secondary.")
        record = inventory.record(view.model)
        band = db.core_band(view, record)
        core_key = view_key("core", (view.model, band))
        st.select_slider(
            "Core layers", options=list(range(record.n_layers)), value=band, key=core_key,
            on_change=view_setter("core", core_key, tuple),
            help=f"Hypotheses and means use these layers. Default for {record.n_blocks} blocks: "
                 f"{db.core_band(dataclasses.replace(view, core=None), record)}.",
        )
        conventions_key = view_key("conventions", view.conventions)
        st.radio(
            "Conventions", db.CONVENTION_NAMES, index=db.CONVENTION_NAMES.index(view.conventions),
            key=conventions_key, horizontal=True, format_func=db.CONVENTION_LABELS.get,
            on_change=view_setter("conventions", conventions_key),
            help="magdash's statistics, or the conventions of the paper's script (its bootstrap draws, H4 over all "
                 "layers, its AICc, no outlier rule in E3/E6), which reproduce its numbers exactly. See docs/science.md.",
        )
        with st.expander("Analysis settings"):
            boot_key = view_key("n_boot", view.n_boot)
            st.number_input("Bootstrap resamples", min_value=0, max_value=100_000, value=view.n_boot, step=1000,
                            key=boot_key, on_change=view_setter("n_boot", boot_key, int),
                            help="10,000 as in the paper; 0 skips the confidence intervals.")
        report_button(context)
        for note in context.notes + st.session_state.pop("magdash_link_notes", []):
            st.warning(plain(note))


def report_button(context: AppContext) -> None:
    """One click: the HTML report of every model on the view's stimulus set (built on click)."""
    view, inventory, store = context.view, context.inventory, context.store
    keys = {name: db.analysis_key(view, inventory, name) for name in inventory.models_sharing(view.stimuli)}
    comparison = db.comparison_key(view, inventory) if view.other else None
    query = db.view_to_query(view)
    def build() -> str:
        try:
            return figs.dashboard_report(store, keys, comparison, view=query)
        except MagdashError as error:  # a download cannot show st.error: say it in the file
            return f"<!DOCTYPE html><meta charset=utf-8><p>No report: {html.escape(str(error))}</p>"

    st.download_button(
        "Report (HTML)", data=build,
        file_name=f"magdash-report-{report.safe_filename(view.stimuli)}.html", mime="text/html",
        on_click="ignore", key="report", icon=":material/description:", width="stretch",
        help=f"All figures, the verdict table and a run manifest for the {len(keys)} model(s) on "
             f"{view.stimuli}; built when you click (a few seconds).",
    )


# -- empty states ------------------------------------------------------------------------


def nothing_to_show(context: AppContext, what: str) -> None:
    """Say why a page is empty and where to go, with links (no dead ends)."""
    if context.error:
        st.error(plain(f"The store cannot be opened: {context.error}"))
        st.info("Fix the store path in the sidebar (a new file name starts an empty store).")
        return
    st.info(plain(
        f"Nothing to show yet: {what} needs a model extracted on a stimulus set, and the store "
        f"at {context.view.store} holds none completely."
    ))
    left, right = st.columns(2)
    left.page_link("pages/home.py", label="Home: run the paper's protocol in one click", icon=":material/home:")
    right.page_link("pages/extract.py", label="Extract a model", icon=":material/download:")


def require_data(what: str) -> AppContext:
    """The context, or an explanation and ``st.stop()`` when there is nothing to show."""
    ctx = context()
    if not ctx.has_data:
        nothing_to_show(ctx, what)
        st.stop()
    return ctx


def plain(text: Any) -> str:
    """User-derived text (names, paths, messages) for a Markdown element, shown literally."""
    return db.escape_markdown(str(text))


def say(text: str) -> None:
    """A sentence built from user-derived names and numbers, shown literally."""
    st.markdown(plain(text))


def show_error(error: BaseException) -> None:
    st.error(plain(str(error)))


# -- layer choice ------------------------------------------------------------------------


def layer_picker(ctx: AppContext, label: str = "Layer") -> int:
    """A layer slider shared by the pages (the choice is kept in the view and the URL)."""
    record = ctx.record
    options = db.layer_options(record)
    layer = db.default_layer(ctx.view, record)
    key = view_key("layer", (ctx.view.model, layer))
    choice = st.select_slider(
        label, options=options, value=options[layer], key=key,
        on_change=view_setter("layer", key, db.layer_from_option),
    )
    return db.layer_from_option(choice)


# -- jobs --------------------------------------------------------------------------------


def start_job(key: str, job: Job) -> None:
    try:
        job_registry().start(key, job)
    except MagdashError as error:
        st.session_state["magdash_job_error"] = str(error)


def job_panel(key: str) -> JobSnapshot | None:
    """Progress of the job running on ``key`` (a store path), redrawn every half second.

    When the job ends, the whole page reruns once, so it shows the new data.
    """
    if message := st.session_state.pop("magdash_job_error", None):
        st.error(plain(message))
    job = job_registry().get(key)
    if job is None:
        return None
    snapshot = job.snapshot()

    @st.fragment(run_every=0.5 if not snapshot.finished else None)
    def panel() -> None:
        current = job.snapshot()
        seen = st.session_state.setdefault(SEEN_JOBS_KEY, set())
        if current.finished:
            if id(job) not in seen:
                seen.add(id(job))
                if not snapshot.finished:
                    st.rerun(scope="app")
            _finished(key, current)
            return
        st.progress(current.fraction, text=plain(f"{current.label} — {current.progress_text()}"))
        st.button("Cancel", key=f"cancel-{id(job)}", on_click=job.cancel, icon=":material/stop:",
                  help="Stops after the current batch; what is stored stays and a new run resumes from there.")

    panel()
    return job.snapshot()


def _finished(key: str, snapshot: JobSnapshot) -> None:
    if snapshot.state == "done":
        st.success(plain(f"{snapshot.label}: finished in {format_seconds(snapshot.elapsed_s)}."))
    elif snapshot.state == "cancelled":
        st.warning(plain(f"{snapshot.label}: {snapshot.message}."))
    else:
        st.error(plain(f"{snapshot.label} failed: {snapshot.message}"))
    st.button("Dismiss", key=f"dismiss-{key}", on_click=job_registry().forget, args=(key,))

