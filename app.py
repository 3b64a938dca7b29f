"""magdash dashboard entry point: ``streamlit run app.py``."""

import streamlit as st

st.set_page_config(page_title="magdash", page_icon="🔢", layout="wide")
st.title("magdash")
st.write(
    "Geometry and noise of number representations in transformer language models. "
    "Extract hidden states with `python -m magdash extract --model minilm`, then browse them here."
)
