"""Scaling: log-log V vs n at a layer, alpha by layer with CI bands, the per-layer fit table, and
alpha adjusted for tokenization beside the raw alpha."""

import streamlit as st

from magdash import dashboard
from magdash.presentation import scaling_figures, tokenization_figures
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
ui.warnings_panel(ui.analysis_caveats(key), view.measure, [view.model])

layer = ui.layer_picker(ctx)
carriers = st.toggle("Show the carriers' own distances", value=True, key="sc_carriers",
                     disabled=view.measure not in CARRIER_MEASURES,
                     help="Faint points: each carrier's distance to the centroid (their mean is V_eucl)")
recorded = ui.compute(tokenization_figures.has_token_facts, key)
by_tokens = st.toggle("Colour the points by token count", value=False, key="sc_tokens", disabled=not recorded,
                      help="Each magnitude's number of tokens (1-9: one token, 10-99: two, ... for a tokenizer that "
                           "splits digits): steps at the digit-count boundaries show as colour bands")
layer_arg = dashboard.layer_key(view, ctx.inventory, layer) if carriers and view.measure in CARRIER_MEASURES else None
ui.figure(scaling_figures.scaling_figure, key, view.measure, layer, layer_arg, by_tokens and recorded,
          name=f"scaling-{view.model}-{view.measure}-layer{layer}")

st.subheader("Alpha by layer")
ui.say(ui.compute(scaling_figures.fit_summary, key, view.measure))
ui.figure(scaling_figures.profile_figure, key, view.measure, name=f"alpha-profile-{view.model}")

st.subheader(f"Per-layer fits of {measure_title(view.measure)}")
st.caption("alpha, CI from the bootstrap resamples of the (log n, log V) pairs on the core layers (as in the "
           "CLI; `analyze --bootstrap-layers all` for every layer), Theil-Sen slope, R², p; empty cells: no fit "
           "(V = 0 or fewer than 5 usable points).")
ui.table(scaling_figures.fit_table, key, view.measure, name=f"fits-{view.model}-{view.measure}")

st.subheader("Tokenization: alpha adjusted for the number's token count")
st.caption("A tokenizer that splits digits writes 10, 20, ..., 1000 with the same last token '0' and one token more "
           "at 10, 100 and 1000: V may step at those boundaries. Alpha within each token-count stratum, and one fit "
           "with a step per token count (optionally per kept token) beside log n, hold the tokenization apart from "
           "the magnitude (docs/science.md).")
ui.say(ui.compute(tokenization_figures.tokenization_sentence, key, view.measure))
if recorded:
    ui.figure(tokenization_figures.tokenization_figure, key, view.measure, name=f"alpha-tokenization-{view.model}-{view.measure}")
    ui.table(tokenization_figures.strata_table, key, view.measure, name=f"token-strata-{view.model}-{view.measure}")
    ui.table(tokenization_figures.tokenization_table, key, view.measure, name=f"alpha-adjusted-{view.model}-{view.measure}")
    with st.expander("Each magnitude's tokens"):
        ui.table(tokenization_figures.token_facts_table, key, name=f"token-facts-{view.model}")

st.subheader("Control: alpha without the massive dimensions")
st.caption(f"A few massive-activation dimensions (mean |h_j| above {key.params.massive_ratio:g}x the median) can "
           "hold most of ||h||²; the same analysis without them shows whether the exponents are carried by those "
           "coordinates.")
if st.toggle("Run the analysis without the massive dimensions", value=False, key="sc_massive"):
    dropped = dashboard.dropped_analysis_key(key)
    with st.spinner(ui.plain(f"Analysing {view.model} without its massive dimensions (cached afterwards)…")):
        ui.result_for(dropped)
    ui.say(ui.compute(scaling_figures.massive_control_sentence, key, dropped, view.measure))
    ui.figure(scaling_figures.massive_control_figure, key, dropped, view.measure, name=f"alpha-massive-dropped-{view.model}")
    ui.table(scaling_figures.massive_control_table, key, dropped, name=f"alpha-massive-control-{view.model}")
