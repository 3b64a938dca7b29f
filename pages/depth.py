"""Depth: phase-transition diagnostics of the hidden states (Alpay & Kilictas, arXiv 2601.19942)."""

import streamlit as st

from magdash import dashboard as db
from pages import ui

ctx = ui.require_data("the depth diagnostics")
view = ctx.view
st.title("Depth: liquid or solid?")
st.caption(
    "The claim to test: with depth fraction gamma = l / L, hidden states pass from a diffuse "
    "'liquid' regime (Marchenko-Pastur-like spectrum) to a sparse 'solid' one (object integrity "
    "Omega rises, outlier eigenvalues appear), abruptly near gamma_c ≈ 0.42 in large models. "
    "Here over the stored number-token vectors of the stimulus set, against the random-weight "
    "control and the isotropic-Gaussian null."
)
keys = db.phase_keys(view, ctx.inventory)
if db.CONTROL_SERIES not in keys:
    st.info(ui.plain(
        f"No random-weight control of {view.model} is stored on {view.stimuli!r}: extract it "
        "(Extract page, '@random control') to compare the curves with the architecture alone."
    ))
    st.page_link("pages/extract.py", label="Extract the control", icon=":material/download:")
with st.spinner("Computing spectra and Omega per layer (first time only; cached in the store)…"):
    for key in keys.values():
        ui.phase_for(key)
results = ui.results_arg(keys)
ui.say(ui.compute("phase_sentence", results))
if caveat := ui.compute("spectrum_caveats", results):
    st.warning(ui.plain(caveat))
ui.figure("order_figure", results, name=f"order-parameter-{view.model}")
ui.figure("rank_figure", results, name=f"effective-rank-{view.model}")
ui.figure("omega_figure", results, name=f"omega-by-layer-{view.model}")
st.subheader("Spectrum of one layer")
layer = ui.layer_picker(ctx)
ui.figure("spectrum_figure", results, layer, name=f"spectrum-{view.model}-layer{layer}")
st.subheader("Per-layer diagnostics")
ui.table("phase_table", results, name=f"depth-diagnostics-{view.model}")
