"""Extract: choose a model, stimulus set, dtype, device and token position; run with progress."""

import streamlit as st

from magdash import dashboard as db
from magdash.builtin_models import BUILTIN_MODELS, BUILTINS, INSTALL_MODELS, is_installed
from magdash.dashboard.jobs import ExtractionRequest, extraction_job, model_spec
from magdash.errors import MagdashError
from magdash.models import DTYPES, default_name
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

SOURCES = {"builtin": "Built-in", "cache": "Hugging Face cache", "folder": "Local folder or GGUF", "ollama": "Ollama"}
left, right = st.columns(2)
with left:
    source = st.radio("Model from", list(SOURCES), format_func=SOURCES.get, horizontal=True, key="ex_source")
    if source == "builtin":
        value = st.selectbox("Built-in model", BUILTIN_MODELS, key="ex_builtin",
                             format_func=lambda name: f"{name} — {BUILTINS[name].description}")
        if BUILTINS[value].terms:
            st.caption(BUILTINS[value].terms)
        if not is_installed(value):
            st.info(f"{value} is not installed: `{INSTALL_MODELS}`")
    elif source == "cache":
        repos = ui.cached_repos()
        if not repos:
            st.info(
                "Your Hugging Face cache holds no models. magdash never downloads: fetch one on a "
                "machine with internet (`huggingface-cli download ORG/NAME`), or give a local folder."
            )
        value = st.selectbox("Model in the cache", repos, key="ex_cache", disabled=not repos) or ""
    elif source == "folder":
        value = st.text_input("Model folder or GGUF file", key="ex_folder", placeholder="/models/Meta-Llama-3-8B",
                              help="A folder holding config.json, a tokenizer and *.safetensors, or a .gguf "
                                   "file (converted once to safetensors under cache/models; weights stay as "
                                   "the quantization left them)")
    else:
        value = st.text_input("Ollama model", key="ex_ollama", placeholder="llama3.2:1b",
                              help="A model pulled with `ollama pull`, found in $OLLAMA_MODELS or ~/.ollama/models")
    control = st.toggle("@random control (same architecture, random weights)", key="ex_control",
                        help="The architecture-only baseline: seeded random weights, no training")
    seed = st.number_input("Random seed", min_value=0, value=0, step=1, key="ex_seed", disabled=not control)
with right:
    stored_sets = ctx.inventory.stimulus_sets
    set_names = list(dict.fromkeys([PAPER_SET_NAME, *stored_sets]))
    stimuli_name = st.selectbox("Stimulus set", set_names, key="ex_stimuli",
                                help="Define more sets on the Stimuli page")
    dtype = st.selectbox("dtype", DTYPES, key="ex_dtype", help="float16 halves the memory (the paper's models ran in fp16)")
    device = st.selectbox("Device", ("auto", "cpu", "cuda", "mps"), key="ex_device")
    position = st.selectbox("Token position", POSITIONS, key="ex_position",
                            help="last: the last token overlapping the number (the paper); first; mean of all")
    batch_size = st.number_input("Batch size", min_value=1, max_value=1024, value=32, step=8, key="ex_batch",
                                 help="Lower it if the model runs out of memory")

try:
    spec = model_spec(source, value, control=control, seed=int(seed))
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
