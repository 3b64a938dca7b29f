"""Geometry: centroid RDM heatmap, RSA against log-ratio vs linear models, PC1 vs log n."""

import streamlit as st

from magdash import dashboard
from magdash.presentation import geometry_figures
from pages import ui

ctx = ui.require_data("the geometry analysis")
view = ctx.view
st.title("Log-compressive geometry")
st.caption(
    "Distances between magnitude centroids follow |log a - log b| (Weber-Fechner) better than "
    "|a - b| when the code is log-compressive (Cacioli, arXiv 2603.20642)."
)
key = ui.analysed(ctx)
control = dashboard.control_analysis_key(view, ctx.inventory)
metric = st.radio("Distance", ("euclidean", "cosine"), horizontal=True, key="geo_metric")
ui.say(ui.compute(geometry_figures.rsa_sentence, key, metric, control))
ui.figure(geometry_figures.rsa_figure, key, metric, control, name=f"rsa-{view.model}-{metric}")

layer = ui.layer_picker(ctx)
layer_arg = dashboard.layer_key(view, ctx.inventory, layer)
# One above the other: side by side, half a page cuts the titles and the buttons' labels.
ui.figure(geometry_figures.rdm_figure, key, layer_arg, layer, metric, name=f"rdm-{view.model}-layer{layer}-{metric}")
ui.figure(geometry_figures.pc1_figure, key, layer_arg, layer, name=f"pc1-{view.model}-layer{layer}")
st.subheader("Geometry by layer")
ui.table(geometry_figures.geometry_table, key, name=f"geometry-{view.model}")
