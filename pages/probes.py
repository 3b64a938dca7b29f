"""Probes: is magnitude linearly decodable from each layer, and how noisy is the decoded magnitude?"""

import streamlit as st

from magdash import dashboard, reports
from magdash.dashboard import probes_page
from magdash.presentation import probe_figures
from magdash.presentation.export import safe_filename
from pages import ui

ctx = ui.require_data("the probes")
view = ctx.view
st.title("Probes: is magnitude decodable?")
st.caption(
    "A ridge probe per layer reads log n (or n) out of the number-token vectors. Scored on held-out carriers "
    "(does the code carry over to a new context?) and on held-out magnitudes (does it interpolate to unseen "
    "numbers?), against a control task whose labels are permuted across magnitudes (a probe that memorised "
    "token identity scores there too; Hewitt & Liang 2019), against the @random control, and beside what each "
    "number's digit count (and token count) alone predicts on the same folds. The decoded magnitude's spread "
    "across carriers, SD(n-hat) ∝ n^beta, is judged against what a read-out of constant error gives for the "
    "design (about 1 for any log read-out, whatever the model), not against 1. docs/science.md, 'Probes'."
)
keys = probes_page.probe_keys(view, ctx.inventory)
if dashboard.CONTROL_SERIES not in keys:
    st.info(ui.plain(ctx.inventory.control_note(view.model, view.stimuli, "to see what the architecture alone decodes")))
    if not dashboard.is_control(ctx.inventory.record(view.model)):
        st.page_link("pages/extract.py", label="Extract the control", icon=":material/download:")
with st.spinner(ui.plain(f"Probing every layer of {view.model} (first time only; cached in the store)…")):
    caveats = [caveat for key in keys.values() for caveat in ui.result_for(key).caveats()]
results = ui.results_arg(keys)
ui.warnings_panel(caveats)
left, right = st.columns(2)
target = left.radio("Read-out", list(probes_page.probe_params(view).targets), format_func=probe_figures.TARGET_LABELS.get,
                    horizontal=True, key="probe_target",
                    help="log n is the primary read-out (its n-hat is positive and its errors are ratios); n beside it.")
scheme = right.radio("R² on", list(probe_figures.SCHEME_LABELS), format_func=probe_figures.SCHEME_LABELS.get, horizontal=True,
                     key="probe_scheme",
                     help="Held-out carriers: a new context. Held-out magnitudes: unseen numbers, always between "
                          "trained ones (the smallest and largest are never held out).")
slug = f"{view.model}-{target}"
ui.say(ui.compute(probe_figures.probe_sentence, results, target))
ui.figure(probe_figures.r2_figure, results, scheme, target, name=f"probe-r2-{slug}-{scheme}")
ui.figure(probe_figures.selectivity_figure, results, target, name=f"probe-selectivity-{slug}")
ui.table(probe_figures.layer_table, results, target, name=f"probes-per-layer-{slug}")
if dashboard.CONTROL_SERIES in keys:
    ui.table(probe_figures.comparison_table, results, target, name=f"probes-vs-random-{slug}")

st.subheader("The decoded magnitude at one layer")
layer = ui.layer_picker(ctx)
ui.figure(probe_figures.decoded_figure, results, layer, target, name=f"decoded-magnitude-{slug}-layer{layer}")
ui.figure(probe_figures.weber_figure, results, layer, target, name=f"decoded-weber-fraction-{slug}-layer{layer}")
ui.table(probe_figures.decoded_table, results, layer, target, name=f"decoded-magnitude-{slug}-layer{layer}-table")

st.subheader("The decoded noise by layer")
ui.figure(probe_figures.beta_figure, results, target, name=f"decoded-beta-{slug}")
with st.expander("Every held-out score (both schemes, real labels and control task)"):
    ui.table(probe_figures.scores_table, results, target, name=f"probe-scores-{slug}")
st.download_button(
    "Probes report (HTML)",
    data=lambda: reports.probe_report(ctx.store, {series: ui.result_for(key) for series, key in keys.items()},
                                      layer, target),
    file_name=f"magdash-probes-{safe_filename(slug)}.html", mime="text/html", on_click="ignore",
    key="probes-report", icon=":material/description:",
)
