"""Weber: alpha against the Weber window, CV vs n, H1-H4 across models, noise models, E3, E4."""

import streamlit as st

from magdash import dashboard
from magdash.presentation import weber_figures
from magdash.variability.measures import measure_title
from pages import ui

ctx = ui.require_data("the Weber analysis")
view = ctx.view
st.title("Weber's law and scalar variability")
st.caption(
    "Scalar variability predicts alpha inside the Weber window [0.8, 1.2] and a flat coefficient "
    "of variation. Hypotheses over the core layers: H1 alpha > 0, H2 alpha in the window, "
    "H3 alpha < 1, H4 alpha changes with depth."
)
models = ctx.inventory.models_sharing(view.stimuli)
keys = {name: dashboard.analysis_key(view, ctx.inventory, name) for name in models}
with st.spinner(ui.plain(f"Analysing {len(keys)} model(s) on {view.stimuli} (first time only)…")):
    for analysis in keys.values():
        ui.result_for(analysis)
records = [ctx.inventory.record(name) for name in models]
results = ui.results_arg(keys)
key = keys[view.model]
# One panel: the caveats of every model shown about the selected measure, the most severe in view.
ui.warnings_panel(ui.analysis_caveats(*keys.values()), view.measure, list(keys))

ui.figure(weber_figures.weber_figure, results, view.measure, dashboard.depth_axis(records), ctx.inventory.registered, name=f"weber-window-{view.measure}")

st.subheader("Hypotheses across models")
st.caption(ui.plain(
    f"{measure_title(view.measure)} on {view.stimuli}. The mean core alpha leads, with the interval of the stimulus "
    "bootstrap (carriers and magnitudes resampled once for every core layer); the t-tests and H4's Spearman run over "
    "core layers, which share their stimuli, so their real size exceeds their level. A programme verdict needs a "
    "majority of the trained models; each @random control stands beside its model as a reference, not a vote."
))
ui.table(weber_figures.verdict_table, results, view.measure, name=f"verdicts-{view.measure}")

st.subheader(ui.plain(f"Coefficient of variation ({view.model})"))
ui.figure(weber_figures.cv_figure, key, name=f"cv-{view.model}")

st.subheader(ui.plain(f"Noise models by AICc ({view.model})"))
st.caption("constant, scalar (k n), log-scalar (k log n + c) and power law, fitted to V(n); descriptive.")
ui.figure(weber_figures.noise_figure, key, view.measure, name=f"noise-models-{view.model}-{view.measure}")
ui.table(weber_figures.noise_table, key, view.measure, name=f"noise-aicc-{view.model}-{view.measure}")

# One above the other: side by side, half a page cuts the titles and the buttons' labels.
st.subheader("E3: boundary magnitudes")
st.caption("Core-layer alphas refitted without 9, 10 and 100.")
ui.figure(weber_figures.e3_figure, key, name=f"e3-{view.model}")
st.subheader("E4: on- vs off-axis")
st.caption("Scaling of the variance along the magnitude axis (PC1) and off it.")
ui.figure(weber_figures.e4_figure, key, name=f"e4-{view.model}")

if notes := dashboard.science_notes():
    with st.expander("How these numbers are computed, and the paper's conventions (docs/science.md)"):
        st.markdown(notes)
