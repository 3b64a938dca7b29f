"""Stimuli: carrier sentences (upload or type), the magnitude set, tokenization preview."""

import pandas as pd
import streamlit as st

from magdash import dashboard
from magdash.dashboard import stimuli_page
from magdash.errors import MagdashError
from magdash.stimuli import DEFAULT_NUMBER_FORMAT, NUMBER_FORMAT_NAMES, NUMBER_FORMATS, PAPER_CARRIERS, POSITIONS
from pages import ui

st.title("Stimuli")
st.caption(
    "A stimulus set is every carrier sentence with every magnitude written in place of {n}, in "
    "digits (the paper's form) or another number format. Define one here, save it, then extract it on the "
    "Extract page."
)
ctx = ui.require_store("saving stimuli")

st.subheader("1. Carrier sentences")
CARRIER_SOURCES = {"paper": "The paper's 5", "upload": "Upload .txt or .csv", "type": "Type them"}
carrier_source = st.radio("Carriers from", list(CARRIER_SOURCES), format_func=CARRIER_SOURCES.get,
                          horizontal=True, key="st_carrier_source")
carriers = stimuli_page.CarrierInput(list(PAPER_CARRIERS))
if carrier_source == "upload":
    upload = st.file_uploader("Carrier file", type=["txt", "csv"], key="st_upload",
                              help=".txt: one sentence per line. .csv: a column named carrier (or the first column).")
    carriers = stimuli_page.read_carrier_upload(upload.name, upload.getvalue()) if upload is not None else stimuli_page.CarrierInput([])
    if upload is None:
        st.info("Upload a file with one sentence per line; write {n} where the number goes.")
elif carrier_source == "type":
    text = st.text_area("One sentence per line, {n} where the number goes", key="st_text",
                        value="\n".join(PAPER_CARRIERS), height=160)
    carriers = stimuli_page.carriers_from_text(text)
for problem in stimuli_page.problems_to_show(carriers.problems):
    st.error(ui.plain(problem))
if carriers.carriers:
    ui.table(pd.DataFrame({"carrier": carriers.carriers}), name="carriers")

st.subheader("2. Magnitudes")
MODES = {"paper": "The paper's 26", "list": "List or ranges", "range": "From, to, step"}
mode = st.radio("Magnitudes from", list(MODES), format_func=MODES.get, horizontal=True, key="st_mode")
magnitudes, magnitude_problem = [], None
try:
    if mode == "list":
        spec = st.text_input("Magnitudes", value="1-10,15,20,50,100", key="st_list",
                             help="Whole numbers, ranges like 1-1000, commas; 'paper' adds the paper's set")
        magnitudes = stimuli_page.magnitudes_from_editor("list", text=spec)
    elif mode == "range":
        a, b, c = st.columns(3)
        first = a.number_input("From", min_value=1, value=1, step=1, key="st_first")
        last = b.number_input("To", min_value=1, value=100, step=1, key="st_last")
        step = c.number_input("Step", min_value=1, value=1, step=1, key="st_step")
        magnitudes = stimuli_page.magnitudes_from_editor("range", first=int(first), last=int(last), step=int(step))
    else:
        magnitudes = stimuli_page.magnitudes_from_editor("paper")
except MagdashError as error:
    magnitude_problem = str(error)
    st.error(ui.plain(magnitude_problem))
if magnitudes:
    shown = ", ".join(map(str, magnitudes[:40])) + (" …" if len(magnitudes) > 40 else "")
    st.caption(f"{len(magnitudes)} magnitudes: {shown}")

st.subheader("3. Number format")
number_format = st.selectbox(
    "How the numbers are written", NUMBER_FORMAT_NAMES, index=NUMBER_FORMAT_NAMES.index(DEFAULT_NUMBER_FORMAT),
    format_func=stimuli_page.format_label, key="st_format",
    help="The same carriers and magnitudes in another format are another stimulus set, never mixed with digits",
)
st.caption(NUMBER_FORMATS[number_format].description)

st.subheader("4. Save")
name = st.text_input("Stimulus set name", value="my-stimuli", key="st_name")
ready = carriers.ok and bool(magnitudes) and magnitude_problem is None
if ready:
    st.caption(f"{len(carriers.carriers)} carriers x {len(magnitudes)} magnitudes = "
               f"{len(carriers.carriers) * len(magnitudes)} sentences")
if ctx.read_only:
    st.info(dashboard.read_only_reason("save stimulus sets"))
if st.button("Save stimulus set", disabled=not ready or ctx.read_only, key="st_save", icon=":material/save:"):
    try:
        store = ui.store_to_write(ctx, "saving a stimulus set")
        stimuli = stimuli_page.build_stimulus_set(name, carriers.carriers, magnitudes, store, number_format)
        store.register_stimulus_set(stimuli)
        st.success(ui.plain(f"Saved {stimuli.name!r}: extract it on the Extract page."))
    except MagdashError as error:
        ui.show_error(error)

st.subheader("5. Tokenization preview")
st.caption("Which tokens each number becomes for a model, and which token's vector is stored.")
specs = stimuli_page.tokenizer_specs(ctx.inventory.records.values(), ui.source_choices("hf-cache"))
a, b = st.columns(2)
preview_spec = a.selectbox("Model", specs, key="st_preview_model")
position = b.selectbox("Token position", POSITIONS, key="st_preview_position")
if not ready:
    st.info(stimuli_page.what_to_fix(carriers.ok, bool(magnitudes) and magnitude_problem is None))
elif st.toggle("Show the tokenization", key="st_preview_on", help="Loads the model's tokenizer (not its weights)"):
    try:
        preview_set = stimuli_page.preview_set(carriers.carriers, magnitudes, number_format)
        with st.spinner(ui.plain(f"Loading {preview_spec}…")):
            tokenizer, sequence_start = ui.tokenizer_for(preview_spec)
        items = stimuli_page.preview_items(preview_set)
        preview = stimuli_page.tokenization_preview(tokenizer, items, position, sequence_start)
        ui.say(stimuli_page.split_summary(preview))
        st.caption(ui.plain(stimuli_page.sequence_start_note(sequence_start, tokenizer)))
        if note := stimuli_page.preview_note(preview_set, items):
            st.caption(note)
        ui.table(preview, name=f"tokenization-{preview_spec}")
    except MagdashError as error:
        ui.show_error(error)

st.subheader("6. Comparison templates (the Behaviour page)")
st.caption("Forced-choice prompts of your own for `magdash behave`: one per line (.txt) or a template column with "
           "an optional name column (.csv), each with one {a} and one {b} where the two numbers go, answered A or B. "
           "Saved as a comparison set: the paper's references and ratios, the larger number in A and in B.")
template_upload = st.file_uploader("Template file", type=["txt", "csv"], key="st_templates_upload",
                                   help="e.g. Which is larger: A) {a} or B) {b}? Answer with only A or B.")
if template_upload is not None:
    templates = stimuli_page.read_template_upload(template_upload.name, template_upload.getvalue())
    for problem in stimuli_page.problems_to_show(templates.problems):
        st.error(ui.page_message(ui.served(problem)))
    if templates.ok:
        ui.table(templates.table(), name="comparison-templates")
        ui.warnings_panel(templates.caveats)
        left, middle, right = st.columns(3)
        set_name = left.text_input("Comparison set name", value="my-comparisons", key="st_comparisons_name")
        formats = middle.multiselect("Number formats", NUMBER_FORMAT_NAMES, default=[DEFAULT_NUMBER_FORMAT],
                                     format_func=stimuli_page.format_label, key="st_comparisons_formats")
        chat = right.toggle("Chat template", value=True, key="st_comparisons_chat",
                            help="Wrap each question in an instruct model's chat template (when it has one)")
        if st.button("Save comparison set", disabled=not formats or ctx.read_only, key="st_comparisons_save",
                     icon=":material/save:"):
            try:
                store = ui.store_to_write(ctx, "saving a comparison set")
                comparisons = stimuli_page.build_comparison_set(set_name, templates.templates, formats, chat)
                store.put_comparison_set(comparisons)
                st.success(ui.plain(f"Saved {comparisons.name!r} ({comparisons.n_trials:,} trials a model): run it "
                                    f"with magdash behave --model MODEL --comparisons {comparisons.name}, then open "
                                    "the Behaviour page."))
            except MagdashError as error:
                ui.show_error(error)
