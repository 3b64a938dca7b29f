"""Scaling: log-log V vs n at a layer, alpha by layer with CI bands, the per-layer fit table."""

import streamlit as st

from magdash import dashboard as db
from magdash.presentation import variability_figures as vf
from magdash.variability.measures import CARRIER_MEASURES, measure_title
from pages import ui

ctx = ui.require_data("the scaling analysis")
view = ctx.view
st.title("Scaling of variability with magnitude")
st.caption(
    "log V = log k + alpha log n per layer (Cacioli 2026): alpha = 1 is scalar variability "
    "(Weber's law), alpha = 0 constant noise; the paper finds alpha slightly below 0."
)
key = ui.analysed(ctx)
ui.warn_artifacts(key)

layer = ui.layer_picker(ctx)
carriers = st.toggle("Show the carriers' own distances", value=True, key="sc_carriers",
                     disabled=view.measure not in CARRIER_MEASURES,
                     help="Faint points: each carrier's distance to the centroid (their mean is V_eucl)")
layer_arg = db.layer_key(view, ctx.inventory, layer) if carriers and view.measure in CARRIER_MEASURES else None
ui.figure(vf.scaling_figure, key, view.measure, layer, layer_arg,
          name=f"scaling-{view.model}-{view.measure}-layer{layer}")

st.subheader("Alpha by layer")
ui.say(ui.compute(vf.fit_summary, key, view.measure))
ui.figure(vf.profile_figure, key, view.measure, name=f"alpha-profile-{view.model}")

st.subheader(f"Per-layer fits of {measure_title(view.measure)}")
st.caption("alpha, CI from the bootstrap resamples of the (log n, log V) pairs on the core layers (as in the "
           "CLI; `analyze --bootstrap-layers all` for every layer), Theil-Sen slope, R², p; empty cells: no fit "
           "(V = 0 or fewer than 5 usable points).")
ui.table(vf.fit_table, key, view.measure, name=f"fits-{view.model}-{view.measure}")

st.subheader("Control: alpha without the massive dimensions")
st.caption(f"A few massive-activation dimensions (mean |h_j| above {key.params.massive_ratio:g}x the median) can "
           "hold most of ||h||²; the same analysis without them shows whether the exponents are carried by those "
           "coordinates.")
if st.toggle("Run the analysis without the massive dimensions", value=False, key="sc_massive"):
    dropped = db.dropped_analysis_key(key)
    with st.spinner(ui.plain(f"Analysing {view.model} without its massive dimensions (cached afterwards)…")):
        ui.analysis_for(dropped)
    ui.say(ui.compute(vf.massive_control_sentence, key, dropped, view.measure))
    ui.figure(vf.massive_control_figure, key, dropped, view.measure, name=f"alpha-massive-dropped-{view.model}")
    ui.table(vf.massive_control_table, key, dropped, name=f"alpha-massive-control-{view.model}")
