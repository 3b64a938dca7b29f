"""magdash dashboard entry point: ``streamlit run app.py``.

Builds the navigation (Data · Noise · Geometry · Depth · Behaviour · Robustness) over the files in ``pages/`` and the
sidebar of global choices shared by every page (``pages.ui.setup``). The store is
``$MAGDASH_STORE`` or ``cache/magdash.duckdb`` unless the URL or the sidebar names another
inside the allowed folders (``magdash.dashboard.access``). With ``[auth]`` in
``.streamlit/secrets.toml`` only logged-in users get past ``ui.login_gate``.
"""

import streamlit as st

from magdash.errors import MagdashError
from pages import ui

st.set_page_config(page_title="magdash", page_icon="🔢", layout="wide")
ui.serve_settings()
ui.login_gate()
navigation = ui.build_navigation()
try:
    ui.setup()
    navigation.run()
except MagdashError as error:  # a page met a user-level problem: say what to fix, no traceback
    ui.show_error(error)
finally:
    ui.end_run()
