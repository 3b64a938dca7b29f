"""Design: what can a study of a given size detect, with noise like the view model's?"""

import streamlit as st

from magdash import dashboard, reports
from magdash.controls_statistics.controls_params import DesignParams
from magdash.dashboard import controls_page
from magdash.errors import MagdashError
from magdash.presentation import controls_figures
from magdash.presentation.export import safe_filename
from pages import ui

ctx = ui.require_data("the study-design simulator")
view = ctx.view
st.title("Study design")
st.caption(
    "Simulated studies with a planted alpha and noise calibrated from the view model (its spread of "
    "log V around the fit, its carrier-level scatter and how alike its core layers are): power for "
    "H1 and for a difference between two models (E6), the CI half-width of alpha as carriers and "
    "magnitudes grow, and the minimal detectable alpha. Seeded: the same design gives the same curves."
)
start = controls_page.default_design(ctx.record, view)
with st.form("design"):
    left, middle, right = st.columns(3)
    magnitudes = left.text_input("Magnitudes", value=start.magnitudes, help="any spec: paper, 1-100, 1,2,5,10")
    carriers = left.number_input("Carriers", min_value=2, max_value=1000, value=start.n_carriers)
    layers = left.number_input("Core layers", min_value=2, max_value=1000, value=start.n_layers)
    alpha = middle.number_input("True alpha (H1)", value=start.alpha, step=0.01, format="%.4f")
    delta = middle.number_input("True delta alpha (E6)", value=start.delta, step=0.01, format="%.4f")
    studies = right.number_input("Studies per point", min_value=10, max_value=100_000, value=start.n_studies, step=100)
    n_boot = right.number_input("Joint-bootstrap resamples (E6)", min_value=0, max_value=10_000, value=start.n_boot,
                                step=50, help="0 skips the joint-bootstrap power, the slowest part")
    seed = right.number_input("Seed", min_value=0, value=start.seed)
    submitted = st.form_submit_button("Simulate", type="primary", icon=":material/play_arrow:")
if submitted:
    try:
        st.session_state["magdash_design"] = DesignParams(
            magnitudes=magnitudes, n_carriers=int(carriers), n_layers=int(layers), alpha=float(alpha),
            delta=float(delta), n_studies=int(studies), n_boot=int(n_boot), seed=int(seed),
        )
    except MagdashError as error:
        ui.show_error(error)
params = st.session_state.get("magdash_design")
if params is None:
    st.info("Choose a design and press Simulate. The time grows with the studies per point and the "
            "joint-bootstrap resamples, the slowest part (0 skips them); the result is cached in the store.")
    st.stop()
key = controls_page.design_key(view, ctx.inventory, params)
with st.spinner(ui.plain(f"Simulating {params.n_studies:,} studies per point (cached in the store)…")):
    result = ui.result_for(key)
st.session_state[controls_page.SESSION_KEYS[1]] = key  # the sidebar's report includes what was shown here
ui.say(ui.compute(controls_figures.design_sentence, key))
slug = f"{view.model}-{params.n_carriers}c-{params.n_studies}s"
ui.figure(controls_figures.h1_figure, key, name=f"design-h1-power-{slug}")
ui.table(controls_figures.h1_table, key, name=f"design-h1-power-{slug}-table")
ui.figure(controls_figures.e6_figure, key, name=f"design-e6-power-{slug}")
ui.table(controls_figures.e6_table, key, name=f"design-e6-power-{slug}-table")
ui.figure(controls_figures.ci_width_figure, key, name=f"design-ci-half-width-{slug}")
ui.table(controls_figures.ci_width_table, key, name=f"design-ci-half-width-{slug}-table")
ui.table(controls_figures.design_summary, key, name=f"design-summary-{slug}")
st.download_button(
    "Design report (HTML)",
    data=lambda: reports.design_report(ctx.store, result, view.model, ui.result_for(dashboard.analysis_key(view, ctx.inventory))),
    file_name=f"magdash-design-{safe_filename(slug)}.html", mime="text/html", on_click="ignore",
    key="design-report", icon=":material/description:",
)
