"""The dashboard's pages (one script each, run by ``st.navigation`` in app.py) and, in
:mod:`pages.ui`, the Streamlit side they share."""
