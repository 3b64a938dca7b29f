"""Behaviour: does the model compare numbers by Weber's law, and does its representation predict it?"""

import streamlit as st

from magdash.dashboard import behaviour_page
from magdash.presentation import behaviour_figures
from pages import ui

ctx = ui.require_store("the behaviour")
view = ctx.view
st.title("Behaviour: does the model compare numbers by Weber's law?")
st.caption(
    "Forced-choice comparisons (\"Which is larger: A) 47 or B) 52?\") at references 10 to 1000 and ratios 1.05 to 3, "
    "the larger number as often in A as in B. The model's choice is the answer option with the larger next-token "
    "logit; accuracy per cell is corrected for position bias (the mean of the A-correct and B-correct accuracies); "
    "a psychometric function of ln(ratio) fitted per reference gives the Weber fraction (the ratio at 75% correct, "
    "minus 1). Weber's law: the same fraction at every reference. docs/behaviour.md."
)
found = behaviour_page.trial_sets(ctx.inventory) if ctx.inventory is not None else ()
if not found:
    st.info(ui.plain(ui.served(behaviour_page.no_trials_message(view.store, ctx.store is not None))))
    left, right = st.columns(2)
    left.page_link("pages/stimuli.py", label="Stimuli: comparison templates of your own", icon=":material/edit_note:")
    right.page_link("pages/home.py", label="Home: the store's models", icon=":material/home:")
    st.stop()

chosen = st.selectbox("Trials", found, format_func=behaviour_page.trial_set_label, key="behaviour_trials")
left, middle, right = st.columns(3)
offered = list(behaviour_figures.CONVENTION_LABELS)
conventions = right.radio("Conventions", offered, horizontal=True, key="behaviour_conventions",
                          index=offered.index(view.conventions) if view.conventions in offered else 0,
                          format_func=behaviour_figures.CONVENTION_LABELS.get,
                          help="magdash's two-alternative function (guess rate 0.5) or the paper's, exactly. The "
                               "paper's bootstrap refits every resample: its first fit takes a while, then it is "
                               "cached in the store.")
key = behaviour_page.behaviour_key(view.store, chosen, view.n_boot, conventions)
with st.spinner(ui.plain(f"Fitting the comparisons of {chosen.model} (first time only; cached in the store)…")):
    result = ui.result_for(key)
task = left.selectbox("Task", behaviour_page.tasks(result), key="behaviour_task",
                      help="The prompt template; each is fitted on its own.")
variant = middle.radio("Fitted to", behaviour_page.fitted(result, "variant"), horizontal=True, key="behaviour_variant",
                       format_func=behaviour_figures.VARIANT_LABELS.get,
                       help="The chosen option, or the graded variant on the logit difference (every trial's "
                            "confidence, no sampling).")
slug = f"{chosen.model}-{chosen.comparisons}-{task}-{variant}-{conventions}"
unmeasured = behaviour_figures.unmeasured_sentence(result, task, result.params.min_option_mass)
if unmeasured is not None:
    st.warning(ui.plain(unmeasured))
if behaviour_figures.measured_trials(result, task) == 0:
    st.info(ui.plain(behaviour_figures.nothing_measured_message(result, task, result.params.min_option_mass)))
    st.stop()
ui.say(behaviour_figures.position_bias_sentence(result, task))
for sentence in behaviour_figures.outside_range_sentences(result, task, variant, conventions):
    ui.say(sentence)
ui.figure(behaviour_figures.psychometric_figure, key, task, variant, conventions, name=f"psychometric-{slug}")
ui.figure(behaviour_figures.weber_figure, key, task, variant, conventions, name=f"behaviour-weber-{slug}")
ui.table(behaviour_figures.fits_table, key, task, variant, conventions, name=f"psychometric-fits-{slug}")
ui.figure(behaviour_figures.bias_figure, key, task, name=f"position-bias-{slug}")

st.subheader("Behaviour beside representation")
analysis = behaviour_page.representation_key(view, ctx.inventory, chosen.model) if ctx.inventory is not None else None
if analysis is None:
    st.info(ui.plain(f"{chosen.model} has no vectors on {view.stimuli or 'a stimulus set'} in this store: extract "
                     "it (Extract page) to set its representation beside its behaviour."))
else:
    references = tuple(sorted({float(value) for value in result.cells["reference"]}))
    representation = ui.cached(behaviour_figures.core_cv_frame, analysis, references)
    ui.figure(behaviour_figures.representation_figure, key, representation, task, variant, conventions,
              name=f"behaviour-vs-representation-{slug}")
