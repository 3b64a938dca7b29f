"""How results are shown: :mod:`~magdash.presentation.tables` (tidy frames),
:mod:`~magdash.presentation.charts` (every Altair chart), :mod:`~magdash.presentation.export`
(PNG, SVG and CSV, offline), :mod:`~magdash.presentation.report` (the HTML report) and
:mod:`~magdash.formatting` (how a number, and a missing one, is written).

Nothing here imports torch or transformers, reads a store, or draws on Streamlit.
"""
