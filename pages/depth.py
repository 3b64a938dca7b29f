"""Depth: phase-transition diagnostics of the hidden states (Alpay & Kilictas, arXiv 2601.19942)."""

import streamlit as st

from magdash import dashboard
from magdash.depth_statistics.massive_dims import MASSIVE_LABELS, MASSIVE_RATIO
from magdash.presentation import depth_figures
from pages import ui

ctx = ui.require_data("the depth diagnostics")
view = ctx.view
st.title("Depth: liquid or solid?")
st.caption(
    "The claim to test: with depth fraction gamma = l / L, hidden states pass from a diffuse "
    "'liquid' regime (Marchenko-Pastur-like spectrum) to a sparse 'solid' one (object integrity "
    "Omega rises, outlier eigenvalues appear), abruptly near gamma_c ≈ 0.42 in large models. "
    "Here over the stored number-token vectors of the stimulus set, against the random-weight "
    "control and the isotropic-Gaussian null. The claim is about Omega of the raw hidden states; "
    "a few massive-activation dimensions can make raw Omega high on their own, so the curves are "
    "drawn again without them (or with every dimension standardised): where raw and adjusted "
    "part, the 'solid' regime is those few coordinates."
)
keys = dashboard.depth_keys(view, ctx.inventory)
if dashboard.CONTROL_SERIES not in keys:
    st.info(ui.plain(ctx.inventory.control_note(view.model, view.stimuli, "to compare the curves with the architecture alone")))
    if not dashboard.is_control(ctx.inventory.record(view.model)):
        st.page_link("pages/extract.py", label="Extract the control", icon=":material/download:")
massive = st.radio("Adjusted view", ["drop", "standardise"], format_func=MASSIVE_LABELS.get, horizontal=True,
                   key="depth_massive", help=f"Massive dimension: mean |h_j| above {MASSIVE_RATIO:g}x the median over dimensions")
adjusted_keys = dashboard.adjusted_depth_keys(keys, massive)
with st.spinner("Computing spectra and Omega per layer (first time only; cached in the store)…"):
    for key in keys.values():
        ui.result_for(key)
    results = ui.results_arg(keys)
    # Without massive dimensions anywhere, dropping them leaves the raw vectors: drawn once, not twice.
    adjusted = ui.results_arg(adjusted_keys) if ui.compute(depth_figures.adjusted_view_differs, results, massive) else None
    for key in adjusted_keys.values() if adjusted is not None else ():
        ui.result_for(key)
ui.say(ui.compute(depth_figures.phase_sentence, results, adjusted))
ui.say(ui.compute(depth_figures.massive_sentence, results)
       + ("" if adjusted is not None else " Dropping none leaves the raw vectors, so each curve is drawn once."))
ui.warnings_panel(ui.compute(depth_figures.spectrum_caveats, results))
ui.figure(depth_figures.order_figure, results, adjusted, name=f"order-parameter-{view.model}")
ui.table(depth_figures.jumps_table, results, adjusted, name=f"gamma-c-jumps-{view.model}")
ui.figure(depth_figures.rank_figure, results, name=f"effective-rank-{view.model}")
if adjusted is not None:
    ui.figure(depth_figures.rank_figure, adjusted, name=f"effective-rank-{view.model}-{massive}")
ui.figure(depth_figures.omega_figure, results, name=f"omega-by-layer-{view.model}")
st.subheader("Spectrum of one layer")
layer = ui.layer_picker(ctx)
ui.figure(depth_figures.spectrum_figure, results, layer, name=f"spectrum-{view.model}-layer{layer}")
if adjusted is not None:
    ui.figure(depth_figures.spectrum_figure, adjusted, layer, name=f"spectrum-{view.model}-layer{layer}-{massive}")
st.subheader("Per-layer diagnostics")
st.caption("n_spikes, sigma2, mp_edge, tw_margin and largest_gap are empty where the Marchenko-Pastur fit did not "
           "converge (mp_converged false: it stopped at mp_cap, half the spectrum, ran out of iterations or had too "
           "few eigenvalues; the spectrum chart says which): a fit that did not converge is not a fit. "
           "omega_mean_low/high: the bootstrap interval of mean Omega over magnitudes and carriers.")
ui.table(depth_figures.phase_table, results, adjusted, name=f"depth-diagnostics-{view.model}")

if example := dashboard.depth_example():
    with st.expander("Worked example: a real decoder over every token of a 13,000-token text (docs/depth_example.md)"):
        st.markdown(example)
