"""Steering: does the model use its magnitude direction? (the cached results of magdash steer)"""

import streamlit as st

from magdash.dashboard import steering_page
from magdash.presentation import steering_figures
from pages import ui

ctx = ui.require_store("the steering")
view = ctx.view
st.title("Steering: does the model use its magnitude direction?")
st.caption(
    "At one layer, dose x the magnitude direction (the log-n probe's unit weight vector, or PC1 of the centroids) is "
    "added to the residual stream at one operand's number in the model's comparison prompts, and the change in "
    "p(correct) is set against the same push along random directions (Cacioli 2026, Paradigm D). Specificity is "
    "their ratio; a layer is functionally relevant when most prompts move more than the random directions' 97.5th "
    "percentile. Beside it, by layer: RSA with the log-ratio model, the probe's R² and the unpatched p(correct). "
    "docs/steering.md."
)
runs = steering_page.steering_runs(ctx.inventory) if ctx.inventory is not None else ()
if not runs:
    message, command = steering_page.no_steering_message(ctx.inventory, view.store, ctx.store is not None)
    st.info(ui.plain(ui.served(message)))
    if command is not None:
        st.code(ui.served(command), language="bash")
    left, right = st.columns(2)
    left.page_link("pages/behaviour.py", label="Behaviour: the model's comparison trials", icon=":material/psychology:")
    right.page_link("pages/extract.py", label="Extract: the model's vectors", icon=":material/download:")
    st.stop()

chosen = st.selectbox("Steering run", runs, index=len(runs) - 1, format_func=steering_page.run_label,
                      key="steering_run")
key = steering_page.steer_key(view.store, chosen)
result = ui.result_for(key)
for line in result.warnings():
    st.warning(ui.plain(line))
ui.say(steering_figures.summary_sentence(result))
analysis = steering_page.representation_key(view, ctx.inventory, chosen) if ctx.inventory is not None else None
probe = steering_page.probe_key(view, ctx.inventory, chosen) if ctx.inventory is not None else None
with st.spinner(ui.plain(f"Reading the geometry and probes of {chosen.model} (first time only; cached in the store)…")):
    ui.figure(steering_figures.profile_figure, key, analysis, probe, name=f"steering-profile-{chosen.model}")
ui.table(steering_figures.layers_table, key, name=f"steering-layers-{chosen.model}")
layer = st.selectbox("Dose-response at layer", steering_figures.steered_layers(result),
                     index=steering_figures.steered_layers(result).index(steering_figures.most_specific_layer(result)),
                     key="steering_layer")
ui.figure(steering_figures.dose_figure, key, layer, name=f"steering-dose-{chosen.model}-{layer}")
st.caption("Another run (other layers, doses or null directions, PC1 as the direction, operand b: "
           "`magdash steer --help`); the page shows every run cached in the store:")
st.code(ui.served(steering_page.steer_command(view.store, chosen.model)), language="bash")
