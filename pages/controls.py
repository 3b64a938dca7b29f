"""Controls: does the view model's alpha survive carriers, shuffled magnitudes, precision,
token position, the number's written form and the random-weight control?"""

import streamlit as st

from magdash import dashboard, reports
from magdash.dashboard import controls_page
from magdash.dashboard.jobs import extraction_job
from magdash.errors import MagdashError
from magdash.params import DTYPES
from magdash.presentation import controls_figures
from magdash.presentation.export import safe_filename
from magdash.stimuli import NUMBER_FORMAT_NAMES, POSITIONS
from pages import ui

ctx = ui.require_data("the robustness controls")
view = ctx.view
st.title("Robustness controls")
st.caption(
    "Before claiming 'alpha is negative in this model': is one carrier sentence driving it "
    "(leave-one-carrier-out, ICC of the carriers), could shuffled magnitudes give the same slope "
    "(permutation null), does it survive another dtype, weights file, token position or number format, and is it "
    "more than the architecture gives (@random)? Each control says what counts as a problem."
)
candidates = controls_page.variant_choices(view, ctx.inventory)
# Keyed on the candidates: a variant extracted since (one click below) is selected with the others.
chosen = st.multiselect(
    "Variants to compare", candidates, default=candidates,
    key=f"ctl_variants_{view.model}_{view.stimuli}_{'|'.join(candidates)}",
    help="Other extractions of the same architecture on these stimuli: another dtype, weights file (e.g. a "
         "GGUF quantization) or token position.",
)
format_sets = controls_page.format_variant_sets(ctx.store, view, ctx.inventory)
chosen_formats = st.multiselect(
    "Number formats to compare", list(format_sets), default=list(format_sets),
    key=f"ctl_formats_{view.model}_{view.stimuli}_{'|'.join(format_sets)}",
    help="The view model on the same carriers and magnitudes with the numbers written another way (grouped 1,000; "
         "words; ...), stored as their own stimulus sets: delta alpha with its joint-bootstrap CI.",
)
with st.expander("Extract variants now (when the weights are at hand)"):
    job = ui.job_panel(view.store)
    running = job is not None and not job.finished
    blocked = running or ctx.read_only
    if ctx.read_only:
        st.info(dashboard.read_only_reason("extract variants"))
    try:
        missing_positions = controls_page.position_requests(ctx.store, ctx.record, view.stimuli, ctx.inventory)
    except MagdashError as error:
        missing_positions = []
        st.caption(ui.plain(str(error)))
    st.caption("Every token position in one click: the vectors at the number's last token (the paper's), its first "
               "token and the mean of its tokens, each compared with this model's.")
    if st.button(f"Compare token positions ({', '.join(POSITIONS)})", icon=":material/play_arrow:", key="ctl_positions",
                 disabled=blocked or not missing_positions,
                 help="Extracts the positions not stored yet; they are then compared below"
                 if missing_positions else "Every position is stored: they are compared below"):
        try:
            store = ui.store_to_write(ctx, "extracting the token positions")
            ui.start_job(view.store, controls_page.extractions_job(store, missing_positions, f"token positions of {view.model}"))
            st.rerun()
        except MagdashError as error:
            ui.show_error(error)
    other_formats = [name for name in NUMBER_FORMAT_NAMES if name not in format_sets
                     and name != ctx.store.number_formats().get(view.stimuli)]
    to_extract = st.multiselect("Number formats to extract", other_formats, default=[], key="ctl_format_extract")
    if st.button("Extract in these formats", icon=":material/play_arrow:", key="ctl_formats_extract",
                 disabled=blocked or not to_extract):
        try:
            store = ui.store_to_write(ctx, "extracting other number formats")
            requests = controls_page.format_requests(store, ctx.record, view.stimuli, to_extract)
            ui.start_job(view.store, controls_page.extractions_job(store, requests, f"number formats of {view.model}"))
            st.rerun()
        except MagdashError as error:
            ui.show_error(error)
    st.caption("One variant at a time:")
    left, right = st.columns(2)
    dtype = left.selectbox("dtype", DTYPES, key="ctl_dtype")
    position = right.selectbox("Token position", POSITIONS, key="ctl_position")
    if st.button("Extract variant", disabled=blocked, icon=":material/play_arrow:", key="ctl_extract"):
        try:
            store = ui.store_to_write(ctx, "extracting a variant")
            request = controls_page.variant_request(store, ctx.record, view.stimuli, dtype=dtype, position=position)
            ui.start_job(view.store, extraction_job(store, request))
            st.rerun()
        except MagdashError as error:
            ui.show_error(error)

key = controls_page.controls_key(view, ctx.inventory, tuple(chosen), {name: format_sets[name] for name in chosen_formats})
with st.spinner(ui.plain(f"Running the controls of {view.model} (first time only; cached in the store)…")):
    result = ui.result_for(key)
st.session_state[controls_page.SESSION_KEYS[0]] = key  # the sidebar's report includes what was shown here
ui.say(ui.compute(controls_figures.controls_sentence, key, view.measure))
slug = f"{view.model}-{view.measure}"
ui.table(controls_figures.controls_verdicts, key, view.measure, name=f"controls-verdicts-{slug}",
         as_lines=("control", "status", "verdict"))
st.subheader("Carriers")
ui.figure(controls_figures.loo_figure, key, view.measure, name=f"leave-one-carrier-out-{slug}")
ui.table(controls_figures.loo_table, key, view.measure, name=f"leave-one-carrier-out-{slug}-table")
ui.figure(controls_figures.icc_figure, key, name=f"carrier-icc-{view.model}")
ui.table(controls_figures.icc_table, key, name=f"carrier-icc-{view.model}-table")
st.subheader("Magnitude labels")
ui.figure(controls_figures.permutation_figure, key, view.measure, name=f"permutation-{slug}")
ui.table(controls_figures.permutation_table, key, view.measure, name=f"permutation-{slug}-table")
st.subheader("Precision, quantization, token position, number format and @random")
for name in controls_figures.compared(result):
    ui.figure(controls_figures.variant_figure, key, name, view.measure, name=f"variant-{slug}-vs-{name}")
ui.table(controls_figures.variant_table, key, view.measure, name=f"variants-{slug}")
st.download_button(
    "Controls report (HTML)", data=lambda: reports.controls_report(ctx.store, result, [view.measure]),
    file_name=f"magdash-controls-{safe_filename(slug)}.html", mime="text/html", on_click="ignore",
    key="controls-report", icon=":material/description:",
)
