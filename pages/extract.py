"""Extract: choose a model, stimulus set, dtype, device and token position; run with progress."""

import streamlit as st

from magdash import dashboard as db
from magdash.dashboard.jobs import ExtractionRequest, extraction_job
from magdash.errors import MagdashError
from magdash.extract_params import ExtractParams
from magdash.names import default_name
from magdash.params import DEVICES, DTYPES
from magdash.sources import KINDS_BY_NAME, spec_from_choice
from magdash.sources.builtin import BUILTIN_MODELS, BUILTINS, INSTALL_MODELS, is_installed
from magdash.stimuli import PAPER_SET_NAME, POSITIONS, paper_stimuli
from pages import ui

st.title("Extract hidden states")
st.caption(
    "One forward pass per sentence; the vector of the number's token is kept at every layer "
    "(layer 0 = embeddings, the last block before the final norm, plus the post-norm output). "
    "What is already stored is skipped, so a cancelled or killed run resumes."
)
ctx = ui.require_store("extraction")
if ctx.read_only:
    st.info(db.read_only_reason("extract models"))
    st.stop()

job = ui.job_panel(ctx.view.store)
running = job is not None and not job.finished

left, right = st.columns(2)
with left:
    kind = st.radio("Model from", list(KINDS_BY_NAME), format_func=lambda name: KINDS_BY_NAME[name].label,
                    horizontal=True, key="ex_source")
    chosen = KINDS_BY_NAME[kind]
    if kind == "builtin":
        value = st.selectbox("Built-in model", BUILTIN_MODELS, key="ex_builtin",
                             format_func=lambda name: f"{name} — {BUILTINS[name].description}")
        if BUILTINS[value].terms:
            st.caption(BUILTINS[value].terms)
        if not is_installed(value):
            st.info(f"{value} is not installed: `{INSTALL_MODELS}`")
    elif chosen.choices is not None:
        options = ui.source_choices(kind)
        if not options:
            st.info(chosen.nothing_to_choose)
        value = st.selectbox(chosen.label, options, key=f"ex_{kind}", disabled=not options) or ""
    else:
        value = st.text_input(chosen.label, key=f"ex_{kind}", placeholder=chosen.example, help=f"Give {chosen.hint}")
    control = st.toggle("@random control (same architecture, random weights)", key="ex_control",
                        help="The architecture-only baseline: seeded random weights, no training")
    seed = st.number_input("Random seed", min_value=0, value=0, step=1, key="ex_seed", disabled=not control)
with right:
    stored_sets = ctx.inventory.stimulus_sets
    set_names = list(dict.fromkeys([PAPER_SET_NAME, *stored_sets]))
    stimuli_name = st.selectbox("Stimulus set", set_names, key="ex_stimuli",
                                help="Define more sets on the Stimuli page")
    defaults = ExtractParams()
    dtype = st.selectbox("dtype", DTYPES, index=DTYPES.index(defaults.dtype), key="ex_dtype",
                         help="float16 halves the memory (the paper's models ran in fp16)")
    device = st.selectbox("Device", DEVICES, index=DEVICES.index(defaults.device), key="ex_device")
    position = st.selectbox("Token position", POSITIONS, index=POSITIONS.index(defaults.position), key="ex_position",
                            help="last: the last token overlapping the number (the paper); first; mean of all")
    batch_size = st.number_input("Batch size", min_value=1, max_value=1024, value=defaults.batch_size, step=8,
                                 key="ex_batch",
                                 help="Lower it if the model runs out of memory")

try:
    spec = spec_from_choice(kind, value, control=control, seed=int(seed))
    name = st.text_input("Store as", value=default_name(spec, dtype, position), key=f"ex_name_{spec}_{dtype}_{position}",
                         help="The name the model gets in the store")
    problem = None
except MagdashError as error:
    spec, name, problem = None, None, str(error)
    st.info(ui.plain(problem))

if st.button("Extract", type="primary", disabled=running or spec is None, icon=":material/play_arrow:", key="ex_start"):
    try:
        store = ui.store_to_write(ctx, "an extraction", create=True)
        stimuli = paper_stimuli() if stimuli_name == PAPER_SET_NAME else store.stimulus_set(stimuli_name)
        request = ExtractionRequest(spec=spec, stimuli=stimuli, name=name.strip() or None, dtype=dtype, device=device,
                                    position=position, batch_size=int(batch_size))
        ui.start_job(ctx.view.store, extraction_job(store, request))
        st.rerun()
    except MagdashError as error:
        ui.show_error(error)

if not ctx.inventory.incomplete.empty:
    st.subheader("Unfinished extractions")
    st.caption("Start them again with the same model and settings to finish them.")
    ui.table(ctx.inventory.incomplete, name="unfinished-extractions")
