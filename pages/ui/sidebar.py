"""The shared part of every run: the view, the store, the sidebar of global choices and the
query string kept in step with the view."""

from __future__ import annotations

import dataclasses
import html

import streamlit as st

from magdash import dashboard
from magdash.dashboard import controls_page, probes_page
from magdash.errors import MagdashError
from magdash.presentation import export
from magdash.variability.conventions import CONVENTION_NAMES
from magdash.variability.measures import MIN_CARRIERS, measure_title
from pages.ui.caches import result_for
from pages.ui.session import (
    AppContext,
    current_view,
    login_configured,
    open_context,
    set_view,
    start_run,
    sync_query,
    view_key,
    view_setter,
)
from pages.ui.widgets import page_message, plain, served


def setup() -> AppContext:
    """The shared part of every run: view, store, sidebar, query string. Returns the context."""
    context = open_context(current_view())
    set_view(context.view)
    try:
        sidebar(context)
    except MagdashError as error:
        st.sidebar.error(page_message(served(error)))
    context = open_context(current_view())
    set_view(context.view)
    sync_query(context.view)
    start_run(context)
    return context


def sidebar(context: AppContext) -> None:
    view = context.view
    with st.sidebar:
        if login_configured() and st.user.is_logged_in:
            st.button("Log out", on_click=st.logout, key="logout")
        st.caption("Global choices (kept across pages and in the URL)")
        store_key = view_key("store", view.store)
        st.text_input(
            "Store", value=view.store, key=store_key,
            on_change=view_setter("store", store_key, lambda v: v.strip() or dashboard.default_store()),
            help="DuckDB store file; the CLI's --store or $MAGDASH_STORE. Only stores inside the dashboard's "
                 "allowed folders open (its store's folder and $MAGDASH_STORE_FOLDERS); a new one is created only by "
                 "the first run or an extraction.",
        )
        if context.read_only:
            st.caption("Read-only: results are computed and shown, nothing is stored.")
        if context.error:
            st.error(page_message(context.error))
            return
        inventory = context.inventory
        if context.store is None:
            st.info(plain(served(f"No store at {view.store} yet: the first run (Home) or Extract creates it.")))
            return
        if not inventory.usable_models:
            st.info("This store holds no complete extraction yet: see Home or Extract.")
            return
        models = inventory.usable_models
        model_key = view_key("model", view.model)
        st.selectbox(
            "Model", models, index=models.index(view.model), key=model_key, on_change=view_setter("model", model_key),
            format_func=inventory.model_label,
        )
        sets = inventory.complete_sets[view.model]
        sets_key = view_key("stimuli", (view.model, view.stimuli))
        st.selectbox("Stimulus set", sets, index=sets.index(view.stimuli), key=sets_key,
                     on_change=view_setter("stimuli", sets_key))
        overflow = inventory.overflow_warning(view.model, view.stimuli)
        if overflow:
            st.warning(page_message(overflow), icon=":material/warning:")
        measure_key = view_key("measure", view.measure)
        st.selectbox("Measure", dashboard.MEASURE_CHOICES, index=dashboard.MEASURE_CHOICES.index(view.measure), key=measure_key,
                     format_func=measure_title, on_change=view_setter("measure", measure_key),
                     help="V_eucl, V_residual and V_proj are the paper's measures; the other two are secondary.")
        record = inventory.record(view.model)
        band = dashboard.core_band(view, record)
        core_key = view_key("core", (view.model, band))
        st.select_slider(
            "Core layers", options=list(range(record.n_layers)), value=band, key=core_key,
            on_change=view_setter("core", core_key, tuple),
            help=f"Hypotheses and means use these layers. Default for {record.n_blocks} blocks: "
                 f"{dashboard.core_band(dataclasses.replace(view, core=None), record)}.",
        )
        conventions_key = view_key("conventions", view.conventions)
        st.radio(
            "Conventions", CONVENTION_NAMES, index=CONVENTION_NAMES.index(view.conventions),
            key=conventions_key, horizontal=True, format_func=dashboard.CONVENTION_LABELS.get,
            on_change=view_setter("conventions", conventions_key),
            help="magdash's statistics, or the conventions of the paper's script (its bootstrap draws, H4 over all "
                 "layers, its AICc, no outlier rule in E3/E6), which reproduce its numbers exactly. See docs/science.md.",
        )
        with st.expander("Analysis settings"):
            boot_key = view_key("n_boot", view.n_boot)
            st.number_input("Bootstrap resamples", min_value=dashboard.N_BOOT_RANGE.low, max_value=dashboard.N_BOOT_RANGE.high,
                            value=view.n_boot, step=1000,
                            key=boot_key, on_change=view_setter("n_boot", boot_key, int),
                            help="10,000 as in the paper; 0 skips the confidence intervals.")
            carriers = inventory.carriers.get(view.stimuli, ())
            if dashboard.carriers_to_leave_out(len(carriers)):
                exclude_key = view_key("exclude", (view.stimuli, view.exclude))
                # No max_selections: Streamlit's "Select all" would then quietly keep the first few;
                # a choice leaving too few is refused in words instead (exclude_setter).
                st.multiselect(
                    "Leave out carriers", list(range(len(carriers))), default=list(view.exclude), key=exclude_key,
                    format_func=lambda c: f"{c}: {carriers[c]}", on_change=exclude_setter(exclude_key, len(carriers)),
                    help="Every analysis leaves these carrier sentences out: for a "
                         "carrier the warnings say drives a result or holds vectors of outsized norm. At most "
                         f"{len(carriers) - MIN_CARRIERS} of these {len(carriers)}: V needs {MIN_CARRIERS}.",
                )
                if refusal := st.session_state.pop(EXCLUDE_REFUSAL, None):
                    st.error(plain(refusal))
        report_button(context)
        for note in context.notes + st.session_state.pop("magdash_link_notes", []):
            st.warning(plain(note))


EXCLUDE_REFUSAL = "magdash_exclude_refusal"


def exclude_setter(widget_key: str, n_carriers: int):
    """The "Leave out carriers" callback: the choice becomes the view's, unless it leaves fewer
    carriers than an analysis needs; then the view keeps its choice, the widget is drawn afresh
    from it, and the sidebar says why (:func:`magdash.dashboard.exclude_refusal`)."""
    def callback() -> None:
        chosen = tuple(sorted(st.session_state[widget_key]))
        refusal = dashboard.exclude_refusal(n_carriers, chosen)
        if refusal is None:
            view_setter("exclude", widget_key, lambda _: chosen)()
            return
        st.session_state[EXCLUDE_REFUSAL] = refusal
        del st.session_state[widget_key]

    return callback


def report_button(context: AppContext) -> None:
    """One click: the HTML report of every model on the view's stimulus set (built on click)."""
    view, inventory, store = context.view, context.inventory, context.store
    keys = {name: dashboard.analysis_key(view, inventory, name) for name in inventory.models_sharing(view.stimuli)}
    comparison = dashboard.comparison_key(view, inventory) if view.other else None
    query = dashboard.view_to_query(view)
    controls_key, design_key = (controls_page.session_key(view, st.session_state.get(name)) for name in controls_page.SESSION_KEYS)
    layer = dashboard.default_layer(view, context.record)

    def build() -> str:
        from magdash import reports

        try:
            extra = controls_page.session_sections(
                view,
                result_for(controls_key) if controls_key is not None else None,
                result_for(design_key) if design_key is not None else None,
                design_key.model if design_key is not None else None,
            )
            return reports.analysis_report(
                store, list(keys), view.stimuli, {name: key.params for name, key in keys.items()},
                comparisons=[result_for(comparison)] if comparison is not None else [], focus=view.model,
                measure=view.measure, layer=layer, depth=dashboard.depth_params(view), source=reports.REPORT_SOURCE,
                probes=probes_page.probe_params(view), extra_sections=extra, view=query,
            )
        except MagdashError as error:  # a download cannot show st.error: say it in the file
            return f"<!DOCTYPE html><meta charset=utf-8><p>No report: {html.escape(str(error))}</p>"

    st.download_button(
        "Report (HTML)", data=build,
        file_name=f"magdash-report-{export.safe_filename(view.stimuli)}.html", mime="text/html",
        on_click="ignore", key="report", icon=":material/description:", width="stretch",
        help=f"Every page's figures, the verdict table, the probes once computed, the controls and design shown in "
             f"this session and a run "
             f"manifest for the {len(keys)} model(s) on "
             f"{view.stimuli}; built when you click (seconds, longer when the depth diagnostics are not cached yet).",
    )
