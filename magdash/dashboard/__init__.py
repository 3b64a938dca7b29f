"""The dashboard's logic, free of Streamlit: the pages in ``pages/`` hold widgets and layout only.

- :mod:`~magdash.dashboard.access`: the folders the app may open stores in, and read-only mode;
- :mod:`~magdash.dashboard.navigation`: the pages, their groups and URL paths, the science notes;
- :mod:`~magdash.dashboard.view`: the view state, the URL query string, the view's parameters;
- :mod:`~magdash.dashboard.inventory`: what a store holds, with data tokens;
- :mod:`~magdash.dashboard.keys`: hashable keys of what each figure is drawn from;
- :mod:`~magdash.dashboard.jobs`: background extractions and the first-run protocol;
- :mod:`~magdash.dashboard.stimuli_page`: carrier uploads, the magnitude editor, tokenization preview;
- :mod:`~magdash.dashboard.controls_page`: the Controls and Design pages' keys, variants and report sections;
- :mod:`~magdash.dashboard.probes_page`: the Probes page's parameters and keys.

The access rules and the first four are gathered here (``from magdash import dashboard as db``).
"""

from magdash.dashboard.access import (
    SERVED_ERROR_DETAILS,
    StoreAccess,
    check_store_path,
    read_only_reason,
    served_text,
    store_access,
)
from magdash.dashboard.inventory import (
    StoreInventory,
    empty_inventory,
    inventory_table,
    is_control,
    read_inventory,
    store_stamp,
)
from magdash.dashboard.keys import (
    CONTROL_SERIES,
    TRAINED_SERIES,
    AnalysisKey,
    ComparisonKey,
    E5Key,
    LayerKey,
    PhaseKey,
    SourceKey,
    adjusted_phase_keys,
    analysis_key,
    comparison_key,
    control_analysis_key,
    depth_axis,
    dropped_analysis_key,
    layer_key,
    phase_keys,
)
from magdash.dashboard.navigation import PAGES, SCIENCE_NOTES, PageSpec, depth_example, page_groups, science_notes
from magdash.dashboard.view import (
    CONVENTION_LABELS,
    MEASURE_CHOICES,
    N_BOOT_RANGE,
    QUERY_KEYS,
    ViewState,
    WholeNumberRange,
    analysis_params,
    carriers_to_leave_out,
    core_band,
    default_layer,
    default_store,
    escape_markdown,
    exclude_refusal,
    layer_from_option,
    layer_options,
    phase_params,
    reconcile_view,
    view_from_query,
    view_to_query,
)

__all__ = [
    "CONTROL_SERIES", "CONVENTION_LABELS", "MEASURE_CHOICES", "N_BOOT_RANGE", "PAGES", "QUERY_KEYS",
    "SCIENCE_NOTES", "SERVED_ERROR_DETAILS", "TRAINED_SERIES", "AnalysisKey", "ComparisonKey", "LayerKey", "PageSpec", "PhaseKey",
    "E5Key", "SourceKey", "StoreAccess", "StoreInventory", "ViewState", "WholeNumberRange", "check_store_path", "empty_inventory",
    "read_only_reason", "served_text", "store_access", "adjusted_phase_keys", "analysis_key", "analysis_params", "control_analysis_key", "carriers_to_leave_out", "comparison_key", "core_band",
    "default_layer", "default_store", "depth_axis", "depth_example", "dropped_analysis_key", "escape_markdown", "exclude_refusal", "inventory_table", "is_control",
    "layer_from_option", "layer_key", "layer_options", "page_groups", "phase_keys", "phase_params", "read_inventory",
    "reconcile_view", "science_notes", "store_stamp", "view_from_query", "view_to_query",
]
