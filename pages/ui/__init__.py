"""The Streamlit side of the dashboard, shared by ``app.py`` and the pages.

Everything that decides something lives in :mod:`magdash.dashboard` (pure and tested without
Streamlit); this package only connects it to Streamlit:

- :mod:`~pages.ui.caches`: ``st.cache_resource`` for stores, the job registry and tokenizers,
  ``st.cache_data`` for inventories, results and figure specs, keyed on cheap keys;
- :mod:`~pages.ui.session`: the session's view, the run's context, the navigation;
- :mod:`~pages.ui.sidebar`: :func:`setup` (view, store, sidebar, query string) for every run;
- :mod:`~pages.ui.widgets`: figures and tables with PNG/SVG/CSV buttons, messages, the layer
  picker, empty states and the job panel.

Pages use it as ``from pages import ui``.
"""

from pages.ui.caches import (
    cached,
    compute,
    frequency_source_for,
    frequency_sources_for,
    job_registry,
    layer_for,
    result_for,
    results_arg,
    source_choices,
    store_for,
    tokenizer_for,
)
from pages.ui.session import (
    AppContext,
    build_navigation,
    context,
    end_run,
    login_gate,
    serve_settings,
    session_owner,
    update_view,
    view_key,
    view_setter,
)
from pages.ui.sidebar import setup
from pages.ui.widgets import (
    analysed,
    analysis_caveats,
    figure,
    job_panel,
    layer_picker,
    nothing_to_show,
    page_message,
    plain,
    require_data,
    require_store,
    say,
    served,
    show_error,
    start_job,
    store_to_write,
    table,
    warnings_panel,
)

__all__ = [
    "AppContext", "analysed", "analysis_caveats", "build_navigation", "cached", "compute", "context", "end_run",
    "figure", "frequency_source_for", "frequency_sources_for", "job_panel", "job_registry", "layer_for",
    "layer_picker", "login_gate", "nothing_to_show", "page_message", "plain", "require_data", "require_store", "result_for", "results_arg", "say", "serve_settings", "served", "session_owner", "setup", "show_error", "source_choices",
    "start_job", "store_for", "store_to_write", "table", "tokenizer_for", "update_view", "view_key", "view_setter", "warnings_panel",
]
