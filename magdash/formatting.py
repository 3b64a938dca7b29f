"""How a number is written for a reader, the same in the CLI, tables, the report and the app.

A number that does not exist (no fit at the embedding layer, a test undefined for constant
data) is written :data:`MISSING`, never as a number and never as "nan".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from magdash.params import ranges

MISSING = "—"

_WIDTH = re.compile(r"[^\d.]*(\d+)")


def format_number(value: Any, spec: str = ".4g") -> str:
    """``value`` formatted with the format ``spec``; :data:`MISSING` (padded to the spec's width)
    when it is None, NaN or infinite."""
    number = None if value is None else float(value)
    if number is None or not math.isfinite(number):
        width = _WIDTH.match(spec)
        return f"{MISSING:>{width.group(1)}}" if width else MISSING
    return format(number, spec)


def layer_span(layers: Sequence[int]) -> str:
    """Layers as the command line takes them (``--core-layers``): "3-5", "1-3, 7" ("none" when empty)."""
    return ranges(layers) if len(layers) else "none"


def fixed(value: Any, digits: int = 3) -> str:
    """A number for a sentence, with ``digits`` decimals (:data:`MISSING` when there is none)."""
    return format_number(value, f".{digits}f")


def format_p(value: Any) -> str:
    """A p-value in a sentence: two significant digits, scientific below 0.001."""
    number = None if value is None else float(value)
    if number is None or not math.isfinite(number) or number >= 1e-3:
        return format_number(number, ".2g")
    return format_number(number, ".1e")


COLUMN_LABELS = {
    # The probe's spread of decoded magnitudes across carriers: its error, not a Weber fraction of the model.
    "weber_fraction": "SD(n-hat)/n",
    "weber_mean": "mean SD(n-hat)/n",
    "measure_label": "measure",
    "model_label": "noise model",
    "gamma": "gamma = l/L",
    "alpha_theil_sen": "alpha (Theil–Sen)",
    "ci_low": "CI low",
    "ci_high": "CI high",
    "r2": "R²",
    "se": "SE",
    "n_points": "points",
    "n_outliers": "outliers",
    "n_params": "parameters",
    "mean_alpha": "mean alpha",
    "positive_layers": "layers with alpha > 0",
    "in_window_layers": "layers in the window",
    "below_one_layers": "layers with alpha < 1",
    "core_layers": "core layers",
    "mean_alpha_ci_low": "mean alpha CI low (stimuli)",
    "mean_alpha_ci_high": "mean alpha CI high (stimuli)",
    "mean_alpha_p": "mean alpha p (stimuli)",
    "mean_delta_ci_low": "mean delta CI low (stimuli)",
    "mean_delta_ci_high": "mean delta CI high (stimuli)",
    "mean_delta_p": "mean delta p (stimuli)",
    "difference_ci_low": "difference CI low (stimuli)",
    "difference_ci_high": "difference CI high (stimuli)",
    "difference_p": "difference p (stimuli)",
    "ratio_ci_low": "ratio CI low (stimuli)",
    "ratio_ci_high": "ratio CI high (stimuli)",
    "n_resamples": "stimulus resamples",
    "h1_p": "H1 p (t over layers)",
    "h2_p": "H2 p (t over layers)",
    "h4_rho": "H4 rho",
    "h4_p": "H4 p (over layers)",
    "h4_layers": "H4 layers",
    "wilcoxon_statistic": "Wilcoxon W (over layers)",
    "wilcoxon_p": "Wilcoxon p (over layers)",
    "wilcoxon_reachable": "Wilcoxon can reach .05",
    "rss": "RSS",
    "aic": "AIC",
    "aicc": "AICc",
    "delta_aicc": "delta AICc",
    "weight": "Akaike weight",
    "best_aic": "best by AIC",
    "model_a": "model A",
    "model_b": "model B",
    "layer_a": "layer A",
    "layer_b": "layer B",
    "gamma_a": "gamma A",
    "gamma_b": "gamma B",
    "alpha_a": "alpha A",
    "alpha_b": "alpha B",
    "delta": "delta alpha (A − B)",
    "rho": "Spearman rho",
    "partial_rho": "partial rho (given log n)",
    "partial_p": "partial p",
    "partial_ci_low": "partial rho CI low",
    "partial_ci_high": "partial rho CI high",
    "raw_ci_low": "raw rho CI low",
    "raw_ci_high": "raw rho CI high",
    "rsa_log_euclidean": "RSA log-ratio (Euclidean)",
    "rsa_linear_euclidean": "RSA linear (Euclidean)",
    "rsa_log_cosine": "RSA log-ratio (cosine)",
    "rsa_linear_cosine": "RSA linear (cosine)",
    "pc1_pearson": "PC1 vs log n (Pearson r)",
    "pc1_spearman": "PC1 vs log n (Spearman)",
    "pc1_explained": "PC1 share of variance",
    "parameter_name": "parameter name",
}
"""Readable headers for the columns of the tables the app and the report show (the CSV
downloads keep the column names, which scripts rely on)."""

P_FORMAT = "%.2e"
"""printf format of a p-value column in the app's tables: always scientific notation."""


WIDE_FORMAT = "%.3g"
"""printf format of a float column whose values span many decades (an Akaike weight of 1e-33 beside
0.36): three significant digits, in scientific notation where needed, where a fixed format wrote
"0.000000000..." and the cell cut it."""


def needs_wide_format(values: Any) -> bool:
    """Whether a column of floats holds a value a table's fixed format cannot show in a cell: a
    nonzero value under 1e-4 or one of 1e7 or more in magnitude."""
    import numpy as np  # formatting is imported where numpy is not yet

    numbers = np.asarray(values, dtype=np.float64)
    numbers = np.abs(numbers[np.isfinite(numbers) & (numbers != 0)])
    return bool(numbers.size) and bool((numbers < 1e-4).any() or (numbers >= 1e7).any())


def column_label(name: Any) -> str:
    """The header a reader sees for column ``name`` (underscores become spaces otherwise)."""
    text = str(name)
    return COLUMN_LABELS.get(text, text.replace("_", " "))


def is_p_column(name: Any) -> bool:
    """Whether column ``name`` holds p-values (``p``, ``h1_p``, ``partial_p``, ``p_value``)."""
    text = str(name)
    return text == "p" or text.endswith("_p") or text.startswith("p_")
