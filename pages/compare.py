"""Compare: any two models on the same stimuli: the mean delta with its stimulus-bootstrap interval,
layerwise alpha deltas with CIs, the paper's Wilcoxon over the core layers."""

import streamlit as st

from magdash import dashboard
from magdash.presentation import compare_figures
from pages import ui

ctx = ui.require_data("a comparison")
view = ctx.view
st.title("Compare two models")
st.caption(
    "Trained vs its random-weight control, two families, or a base model vs its instruct tune (no such pair is "
    "built in: extract both from a local folder or your Hugging Face cache, or import their vectors; "
    "docs/how-to/your-models.md): alpha of model A minus model B per layer (models of different depth are aligned by gamma = l / L), with a bootstrap "
    "CI that resamples magnitudes jointly. Over A's core layers the mean difference leads, with the interval "
    "and p of the stimulus bootstrap (carriers and magnitudes resampled once for every layer of both models); "
    "the paper's Wilcoxon signed-rank test pairs the core layers, which share their stimuli."
)
partners = [name for name in ctx.inventory.models_sharing(view.stimuli) if name != view.model]
if not partners:
    st.info(ui.plain(
        f"{view.model} is the only model with the stimulus set {view.stimuli!r}. Extract a second "
        f"model on it, for example {ctx.inventory.second_model_example(view.model)}, to compare."
    ))
    st.page_link("pages/extract.py", label="Extract another model", icon=":material/download:")
    st.stop()

st.markdown(f"Model A: **{ui.plain(ctx.inventory.model_label(view.model))}** (choose it in the sidebar)")
other_key = ui.view_key("other", (view.model, view.other))
st.selectbox("Model B", partners, index=partners.index(view.other), key=other_key,
             on_change=ui.view_setter("other", other_key), format_func=ctx.inventory.model_label)
key = dashboard.comparison_key(view, ctx.inventory)
with st.spinner(ui.plain(f"Comparing {view.model} with {view.other} (first time only; cached in the store)…")):
    ui.result_for(key)
ui.say(ui.compute(compare_figures.comparison_sentence, key, view.measure))
axis = dashboard.depth_axis([ctx.inventory.record(view.model), ctx.inventory.record(view.other)])
ui.figure(compare_figures.compare_figure, key, view.measure, axis, ctx.inventory.registered, name=f"compare-{view.model}-vs-{view.other}-{view.measure}")
ui.table(compare_figures.comparison_table, key, view.measure, name=f"compare-{view.model}-vs-{view.other}-{view.measure}-table")
