"""Frequency (E5): V per magnitude against log corpus frequency; per layer the partial Spearman rho
given log n, the raw rho beside it."""

import streamlit as st

from magdash import dashboard
from magdash.errors import MagdashError
from magdash.frequency.sources import BUILTIN_SOURCES, read_counts_csv
from magdash.presentation import frequency_figures
from magdash.runs.frequency_runs import save_source
from pages import ui

ctx = ui.require_data("the frequency analysis")
view = ctx.view
st.title("Variability and corpus frequency (E5)")
st.caption(
    "The paper explains anti-scalar variability by frequency: frequent (small) numbers occur in "
    "more varied contexts. Counts fall with magnitude, so any V that falls with n correlates with "
    "the count: the test of the frequency account is the partial Spearman rho of V(n) with "
    "log(count(n) + 1) given log n, shown first; the raw rho (the paper's E5) is beside it."
)
stamp = dashboard.store_stamp(view.store)
sources = ui.frequency_sources_for(view.store, stamp)
left, right = st.columns([2, 1])
with left:
    name = st.selectbox("Frequency source", list(sources["name"]), key="fq_source")
    note = sources.loc[sources["name"] == name, "note"].iloc[0]
    if note:  # provenance notes quote the uploaded file's name and comments: user text
        st.caption(ui.plain(f"{name}: {note.rstrip('.')}."))  # a note is a phrase about its source
    zero = st.toggle("Count numbers missing from the source as 0", key="fq_zero",
                     help="Otherwise magnitudes the source does not cover stop the analysis with a message")
with right, st.expander("Add a source from a CSV (number,count)"):
    if saved := st.session_state.pop("fq_saved", None):  # said after the rerun that lists the new source
        st.success(ui.plain(saved))
    upload = st.file_uploader("Counts CSV", type=["csv"], key="fq_upload")
    new_name = st.text_input("Source name", key="fq_name")
    # A stored source is replaced only when the user says so (the library refuses it otherwise).
    replace = new_name.strip() in set(sources["name"]) - set(BUILTIN_SOURCES) and st.checkbox(
        ui.plain(f"Replace the stored source {new_name.strip()!r}"), key="fq_replace")
    if ctx.read_only:
        st.info(dashboard.read_only_reason("save uploaded sources"))
    if st.button("Save source", disabled=upload is None or not new_name or ctx.read_only, key="fq_save"):
        try:
            new_source = read_counts_csv(upload.getvalue(), name=new_name, origin=upload.name)
            save_source(ui.store_to_write(ctx, "saving a frequency source"), new_source, replace=replace)
            st.session_state["fq_saved"] = f"Saved source {new_source.name.strip()!r}: choose it above."
            st.rerun()
        except MagdashError as error:
            ui.show_error(error)

key = dashboard.analysis_key(view, ctx.inventory)
source = dashboard.SourceKey(view.store, name, stamp)
missing = "zero" if zero else "error"
try:
    with st.spinner(ui.plain(f"Analysing {view.model} (first time only)…")):
        ui.result_for(key)
    table = ui.cached(frequency_figures.e5_table, key, dashboard.E5Key(key, source, view.measure, missing))
except MagdashError as error:
    ui.show_error(error)
    st.stop()
ui.say(ui.compute(frequency_figures.e5_sentence, table, source, view.conventions))
ui.figure(frequency_figures.frequency_rho_figure, table, name=f"e5-rho-{view.model}-{name}")  # its CSV: the table below

layer = ui.layer_picker(ctx)
frame = ui.cached(frequency_figures.frequency_scatter_frame, key, source, view.measure, layer, missing)
ui.figure(frequency_figures.frequency_scatter_figure, frame, table, layer, ctx.record.layer_labels[layer],
          name=f"e5-scatter-{view.model}-{name}-layer{layer}", data=frame)
ui.table(table, name=f"e5-{view.model}-{name}")

st.subheader(ui.plain(f"Distribution of the counts ({name})"))
ui.figure(frequency_figures.frequency_counts_figure, source, name=f"counts-{name}")
ui.table(frequency_figures.frequency_fit_table, source, name=f"count-fits-{name}")
