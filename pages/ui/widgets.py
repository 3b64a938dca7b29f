"""Page building blocks: figures and tables with download buttons, messages, the layer
picker, empty states and the job panel.

User text is never rendered as HTML: no ``unsafe_allow_html`` anywhere, and user-provided
strings go into widgets, tables or Markdown escaped by :func:`plain`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from magdash import dashboard
from magdash.caveats import Caveat, Severity
from magdash.dashboard.jobs import Job, JobSnapshot, format_seconds
from magdash.dashboard.warnings_panel import panel as warnings_panel_of
from magdash.errors import MagdashError, NoStoreError, ReadOnlyStoreError, rewrite_parameters
from magdash.formatting import (
    MISSING,
    P_FORMAT,
    WIDE_FORMAT,
    column_label,
    is_p_column,
    is_share_column,
    needs_wide_format,
)
from magdash.presentation import export
from magdash.presentation.chart_style import CONTAINER_AUTOSIZE, LEGEND_LABEL_LIMIT
from magdash.store import Store
from pages.ui.caches import cached, figure_spec, job_registry, new_store, result_for
from pages.ui.session import AppContext, context, session_owner, view_key, view_setter

SEEN_JOBS_KEY = "magdash_seen_jobs"

PARAMETER_WORDS = {
    "store": "the sidebar's store path",
    "name": "“Store as”",
    "stimuli": "“Stimulus set”",
    "dtype": "“dtype”",
    "device": "“Device”",
    "batch_size": "“Batch size”",
    "exclude_carriers": "“Leave out carriers”",
    "n_boot": "“Bootstrap resamples”",
    "templates": "“Template file”",
}
"""How the pages name a parameter a library message names (``store=``): the widget that sets it."""


def figure(builder: Callable[..., Any], *args: Any, name: str, data: pd.DataFrame | None = None) -> dict | None:
    """Draw a figure with PNG/SVG (and CSV of ``data``) download buttons.

    ``builder`` is a figure function of :mod:`magdash.presentation` (``scaling_figures.scaling_figure``); keys
    among ``args`` are resolved to cached results. The finished Vega-Lite spec is cached, so a
    rerun with the same inputs costs no chart building. Errors of the user's making show as a message.
    """
    try:
        spec = figure_spec(builder, tuple(args))
    except MagdashError as error:
        show_error(error)
        return None
    compound = "vconcat" in spec or "hconcat" in spec
    # The column's width, the plot's own height (as in the PNG): see CONTAINER_AUTOSIZE.
    shown = spec if compound else {**spec, "autosize": CONTAINER_AUTOSIZE}
    # Every legend's labels whole (Vega cuts them at 160 px: "without 0: The number {…").
    config = shown.get("config", {})
    shown = {**shown, "config": {**config, "legend": {"labelLimit": LEGEND_LABEL_LIMIT, **config.get("legend", {})}}}
    st.vega_lite_chart(shown, width="content" if compound else "stretch")
    slug = export.safe_filename(name)
    columns = st.columns([1, 1, 1, 5] if data is not None else [1, 1, 6])
    columns[0].download_button(
        "PNG", data=lambda: export.chart_to_png(spec), file_name=f"{slug}.png", mime="image/png",
        on_click="ignore", key=f"png-{slug}", icon=":material/image:",
    )
    columns[1].download_button(
        "SVG", data=lambda: export.chart_to_svg(spec), file_name=f"{slug}.svg", mime="image/svg+xml",
        on_click="ignore", key=f"svg-{slug}", icon=":material/draw:",
    )
    if data is not None:
        columns[2].download_button(
            "CSV", data=lambda: export.table_to_csv(data), file_name=f"{slug}.csv", mime="text/csv",
            on_click="ignore", key=f"csvfig-{slug}", icon=":material/table:",
        )
    return spec


def table(frame_or_builder: pd.DataFrame | Callable[..., Any], *args: Any, name: str,
          height: int | str = "auto", as_lines: tuple[str, str, str] | None = None) -> pd.DataFrame | None:
    """A table with a CSV download button; a table function is called and cached like figures.
    ``as_lines`` (a row's name, status and sentence columns) shows each row as a line of text
    instead, for rows whose sentences a table's cells would cut (a verdict and its numbers)."""
    if callable(frame_or_builder):
        try:
            frame = cached(frame_or_builder, *args)
        except MagdashError as error:
            show_error(error)
            return None
    else:
        frame = frame_or_builder
    if as_lines is None:
        st.dataframe(frame, hide_index=True, width="stretch", height=height, column_config=column_config(frame),
                     placeholder=MISSING)
    else:
        head, status, sentence = as_lines
        st.markdown("\n".join(f"- **{plain(row[head])}** ({plain(row[status])}): {plain(row[sentence])}"
                               for row in frame.to_dict(orient="records")))
    slug = export.safe_filename(name)
    st.download_button(
        "CSV", data=lambda: export.table_to_csv(frame), file_name=f"{slug}.csv", mime="text/csv",
        on_click="ignore", key=f"csv-{slug}", icon=":material/table:",
    )
    return frame


HEADER_PX_PER_CHARACTER = 7.5
"""About the width of one character of a table's header in the app's font, for sizing columns."""
HEADER_PADDING_PX = 28
WIDEST_COLUMN_PX = 320


def column_width(label: str, values: pd.Series) -> int | None:
    """A column's width in px where its header is wider than its values (Streamlit sizes a column
    to its cells, cutting a longer header: "mean core a"), or where a float column has gaps (a
    column sized from its first rows, all empty, cut the numbers below them); None: Streamlit's own.

    Args:
        label: the header shown.
        values: the column's values.
    """
    header_px = min(WIDEST_COLUMN_PX, math.ceil(len(label) * HEADER_PX_PER_CHARACTER) + HEADER_PADDING_PX)
    shown = values.dropna()
    widest = int(shown.astype(str).str.len().max()) if len(shown) else 0
    values_px = int(min(widest, 10 if pd.api.types.is_float_dtype(values) else widest) * HEADER_PX_PER_CHARACTER)
    values_px += HEADER_PADDING_PX
    if header_px > values_px or (pd.api.types.is_float_dtype(values) and values.isna().any()):
        return max(header_px, values_px)
    return None


def column_config(frame: pd.DataFrame) -> dict[str, Any]:
    """Readable headers (the CSV's too) that fit their columns, p-values in scientific notation,
    shares as percentages and columns spanning many decades in three significant digits; the
    values stay as they are."""
    config: dict[str, Any] = {}
    for column in frame.columns:
        label = column_label(column)
        floats = pd.api.types.is_float_dtype(frame[column])
        width = {"width": px} if (px := column_width(label, frame[column])) is not None else {}
        if is_p_column(column) and floats:
            config[column] = st.column_config.NumberColumn(label, format=P_FORMAT, **width)
        elif is_share_column(column) and floats:
            config[column] = st.column_config.NumberColumn(label, format="percent", **width)
        elif floats and needs_wide_format(frame[column]):
            config[column] = st.column_config.NumberColumn(label, format=WIDE_FORMAT, **width)
        elif floats and width:
            config[column] = st.column_config.NumberColumn(label, **width)
        elif label != column or width:
            config[column] = st.column_config.Column(label, **width)
    return config


def nothing_to_show(context: AppContext, what: str) -> None:
    """Say why a page is empty and where to go, with links (no dead ends)."""
    if context.error:
        st.error(page_message(f"The store cannot be opened: {context.error}"))
        st.info("Fix the store path in the sidebar.")
        return
    where = (f"the store at {context.view.store} holds none completely" if context.store is not None
             else f"there is no store at {context.view.store} yet")
    st.info(plain(served(f"Nothing to show yet: {what} needs a model extracted on a stimulus set, and {where}.")))
    left, right = st.columns(2)
    left.page_link("pages/home.py", label="Home: run the paper's protocol in one click", icon=":material/home:")
    right.page_link("pages/extract.py", label="Extract a model", icon=":material/download:")


def analysis_caveats(*keys: dashboard.AnalysisKey) -> list[Caveat]:
    """Every caveat of the analyses of ``keys`` (:meth:`magdash.variability.analysis.AnalysisResult.caveats`)."""
    return [caveat for key in keys for caveat in result_for(key).caveats()]


LEAVE_OUT_HINT = "To leave a carrier out of every analysis: the sidebar's Analysis settings, Leave out carriers."


def warnings_panel(caveats: Iterable[Caveat], measure: str | None = None, models: Sequence[str] | None = None) -> None:
    """The page's one warnings panel, above its first chart: the caveats about ``measure`` and
    ``models`` (:func:`magdash.dashboard.warnings_panel.panel`), the most severe in view (serious: an
    error box, caution: a warning box), the rest folded in one expander that counts them; where one
    blames a carrier, how to leave it out."""
    found = warnings_panel_of(caveats, measure, models)
    if not found:
        return
    for caveat in found.shown:
        box = st.error if caveat.severity >= Severity.SERIOUS else st.warning
        box(plain(caveat.line(_said_below)), icon=":material/warning:")
    if found.folded:
        with st.expander(found.fold_label):
            for caveat in found.folded:
                word = "" if caveat.severity <= Severity.NOTE else f"**{caveat.severity.name.lower()}**: "
                st.markdown(f"- {word}{plain(caveat.line(_said_below))}")
    if found.blames_a_carrier:
        st.caption(LEAVE_OUT_HINT)


def _said_below(_carrier: int) -> str:
    """No hint in a caveat's line: the panel's caption says how the sidebar leaves a carrier out."""
    return ""


def store_to_write(ctx: AppContext, what: str, *, create: bool = False) -> Store:
    """The store a page writes to for ``what`` ("saving a stimulus set"), created only where
    ``create`` (the first run, an extraction). Raises MagdashError saying why not: read-only
    mode, or no store yet."""
    if ctx.read_only:
        raise ReadOnlyStoreError(f"{what[:1].upper()}{what[1:]} is not possible. " + dashboard.read_only_reason("store anything"))
    if create:
        return new_store(ctx.view.store)
    if ctx.store is None:
        raise NoStoreError(f"there is no store at {ctx.view.store} yet, so {what} has nowhere to go: "
                           "extract a model first (Home or Extract), which creates it")
    return ctx.store


def require_data(what: str) -> AppContext:
    """The context, or an explanation and ``st.stop()`` when there is nothing to show."""
    return _required(what, lambda ctx: ctx.has_data)


def require_store(what: str) -> AppContext:
    """The context, or an explanation and ``st.stop()`` when the store cannot be opened."""
    return _required(what, lambda ctx: not ctx.error)


def _required(what: str, ready: Callable[[AppContext], bool]) -> AppContext:
    ctx = context()
    if not ready(ctx):
        nothing_to_show(ctx, what)
        st.stop()
    return ctx


def analysed(ctx: AppContext) -> dashboard.AnalysisKey:
    """The key of the view's analysis, run now (with a spinner) unless it is cached."""
    key = dashboard.analysis_key(ctx.view, ctx.inventory)
    with st.spinner(plain(f"Analysing {ctx.view.model} (first time only; the result is cached in the store)…")):
        result_for(key)
    return key


def plain(text: Any) -> str:
    """User-derived text (names, paths, messages) for a Markdown element, shown literally."""
    return dashboard.escape_markdown(str(text))


def say(text: str) -> None:
    """A sentence built from user-derived names and numbers, shown literally."""
    st.markdown(plain(text))


def served(text: Any) -> str:
    """A message as this dashboard may show it: in read-only mode without the server's paths or
    process ids (:func:`magdash.dashboard.served_text`)."""
    return dashboard.served_text(str(text), dashboard.store_access())


def page_message(text: Any) -> str:
    """A library message in the pages' words, escaped for Markdown (:func:`plain`): each parameter
    it names that a widget sets (:data:`PARAMETER_WORDS`) by that widget's label.

    Args:
        text: the message (an error, or its text).
    """
    return plain(rewrite_parameters(str(text), PARAMETER_WORDS, lambda name, value: " ".join(
        part for part in (PARAMETER_WORDS[name], value.strip("'\"")) if part)))


def show_error(error: BaseException) -> None:
    st.error(page_message(served(error)))


# -- layer choice ------------------------------------------------------------------------


def layer_picker(ctx: AppContext, label: str = "Layer") -> int:
    """A layer slider shared by the pages (the choice is kept in the view and the URL)."""
    record = ctx.record
    options = dashboard.layer_options(record)
    layer = dashboard.default_layer(ctx.view, record)
    key = view_key("layer", (ctx.view.model, layer))
    choice = st.select_slider(
        label, options=options, value=options[layer], key=key,
        on_change=view_setter("layer", key, dashboard.layer_from_option),
    )
    return dashboard.layer_from_option(choice)


# -- jobs --------------------------------------------------------------------------------


def start_job(key: str, job: Job) -> None:
    try:
        job_registry().start(key, job, owner=session_owner())
    except MagdashError as error:
        st.session_state["magdash_job_error"] = str(error)


def job_panel(key: str) -> JobSnapshot | None:
    """Progress of the job running on ``key`` (a store path), redrawn every half second.

    Every session sees the progress; only the session that started the job has a Cancel button
    and is told how it ended (:class:`~magdash.dashboard.jobs.JobRegistry`). When a step of the
    job finishes, and when the job ends, the whole page reruns once, so it (and its sidebar)
    shows the new data.
    """
    if message := st.session_state.pop("magdash_job_error", None):
        st.error(plain(message))
    registry, owner = job_registry(), session_owner()
    job = registry.get(key)
    earlier = registry.ending(key, owner)
    if earlier is not None and earlier is not job:  # this session's job ended; another session's runs since
        _finished(key, earlier.snapshot())
    if job is None:
        return None
    mine = registry.is_owner(key, owner)
    snapshot = job.snapshot()

    @st.fragment(run_every=0.5 if not snapshot.finished else None)
    def panel() -> None:
        current = job.snapshot()
        if current.moved_on_from(snapshot) and not current.finished:
            # A step finished (a model's extraction, say): the whole page is drawn again, so the
            # sidebar's inventory (keyed by the store's stamp) shows what it stored.
            st.rerun(scope="app")
        seen = st.session_state.setdefault(SEEN_JOBS_KEY, set())
        if current.finished:
            if id(job) not in seen:
                seen.add(id(job))
                if not snapshot.finished:
                    st.rerun(scope="app")
            if mine:
                _finished(key, current)
            return
        if current.cancelling:  # acknowledged at once; the job stops at its next checkpoint
            st.progress(current.fraction, text=plain(
                f"{current.label} — cancelling: stops after the current batch ({current.progress_text()})"))
        else:
            st.progress(current.fraction, text=plain(f"{current.label} — {current.progress_text()}"))
        if not mine:
            st.caption(ANOTHER_SESSIONS_JOB)
            return
        st.button("Cancel", key=f"cancel-{id(job)}", on_click=_cancel, args=(key,), icon=":material/stop:",
                  disabled=current.cancelling,
                  help="Stops after the current batch; what is stored stays and a new run resumes from there.")

    panel()
    return job.snapshot()


ANOTHER_SESSIONS_JOB = "Started in another session: only that session can cancel it. This page shows its progress."


def _cancel(key: str) -> None:
    """The Cancel button's callback: the registry checks that this session started the job."""
    try:
        job_registry().cancel(key, session_owner())
    except MagdashError as error:
        st.session_state["magdash_job_error"] = str(error)


def _finished(key: str, snapshot: JobSnapshot) -> None:
    """The job's outcome, for the session that started it. Success and cancellation are said
    once, in the run that shows the new data, and then forgotten (no box left on every page and
    after every reload); a failure stays until dismissed."""
    registry, owner = job_registry(), session_owner()
    if snapshot.state == "failed":
        st.error(page_message(f"{snapshot.label} failed: {snapshot.message}"))
        st.button("Dismiss", key=f"dismiss-{key}", on_click=registry.acknowledge, args=(key, owner))
        return
    if snapshot.state == "done":
        st.success(plain(f"{snapshot.label}: finished in {format_seconds(snapshot.elapsed_s)}."))
    else:
        st.warning(plain(f"{snapshot.label}: {snapshot.message}."))
    registry.acknowledge(key, owner)
