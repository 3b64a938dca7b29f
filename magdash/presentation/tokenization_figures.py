"""The Scaling page's tokenization fits (docs/science.md, "Tokenization and the number's written
form"): alpha within token-count strata and adjusted for tokenization beside the raw alpha, each
magnitude's tokens, and the sentence that says what the adjustment changes. V(n) coloured by token
count is :func:`magdash.presentation.scaling_figures.scaling_figure`'s.

Each figure's frame, chart and figure function sit together, as in
:mod:`magdash.presentation.scaling_figures`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from magdash.formatting import fixed
from magdash.presentation import chart_style as style
from magdash.presentation.scaling_figures import massive_alpha_chart
from magdash.variability.measures import DEFAULT_MEASURE, measure_title

if TYPE_CHECKING:
    from magdash.variability.analysis import AnalysisResult


# -- alpha raw and adjusted for tokenization ----------------------------------------------


TOKEN_VIEWS = ("raw", "adjusted: token count", "adjusted: + kept token")


TOKEN_VIEW_COLORS = style.palette(TOKEN_VIEWS)


def tokenization_alpha_frame(result: AnalysisResult, measure: str) -> pd.DataFrame:
    """Alpha by layer of one measure, raw and adjusted for tokenization, in long form.

    Columns: view (one of :data:`TOKEN_VIEWS`), layer, label, core, alpha, ci_low, ci_high.
    Empty without token facts.
    """
    columns = ["view", "layer", "label", "core", "alpha", "ci_low", "ci_high"]
    rows = result.tokenization[result.tokenization["measure"] == measure]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    parts = []
    for view, (alpha, low, high) in zip(TOKEN_VIEWS, (
        ("alpha_raw", None, None), ("alpha", "ci_low", "ci_high"),
        ("alpha_identity", "identity_ci_low", "identity_ci_high"),
    ), strict=True):
        part = rows.loc[:, ["layer", "label", "core"]].copy()
        part.insert(0, "view", view)
        part["alpha"] = rows[alpha].to_numpy(dtype=np.float64)
        if low is None:  # the raw fit's interval, from its own rows
            fits = result.fits[result.fits["measure"] == measure].set_index("layer")
            part["ci_low"] = fits["ci_low"].reindex(rows["layer"]).to_numpy(dtype=np.float64)
            part["ci_high"] = fits["ci_high"].reindex(rows["layer"]).to_numpy(dtype=np.float64)
        else:
            part["ci_low"] = rows[low].to_numpy(dtype=np.float64)
            part["ci_high"] = rows[high].to_numpy(dtype=np.float64)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)[columns]


def tokenization_figure(result: AnalysisResult, measure: str = DEFAULT_MEASURE) -> alt.LayerChart:
    """Alpha by layer, raw and adjusted for tokenization (the token count; with the kept token too).

    Args:
        result: the model's analysis (without token facts the chart is empty and its subtitle says why).
        measure: the measure shown.
    """
    frame = tokenization_alpha_frame(result, measure)
    subtitle = f"{result.model} on {result.stimuli}, {measure_title(measure)}"
    if frame.empty:
        subtitle = [subtitle, f"no adjusted alpha: {result.tokenization_note}"]
    return massive_alpha_chart(
        frame, colors=TOKEN_VIEW_COLORS, title="Alpha by layer, raw and adjusted for tokenization",
        subtitle=subtitle, width="container", legend_title="alpha",
    )


def tokenization_table(result: AnalysisResult, measure: str) -> pd.DataFrame:
    """Per layer: the raw alpha beside the alphas adjusted for tokenization, their intervals and p,
    the token counts fitted and why an adjusted alpha is missing."""
    columns = ["layer", "label", "core", "alpha_raw", "alpha", "ci_low", "ci_high", "p", "n_strata", "steps",
               "alpha_identity", "identity_ci_low", "identity_ci_high", "reason", "identity_reason"]
    rows = result.tokenization[result.tokenization["measure"] == measure]
    table = rows.loc[:, columns].reset_index(drop=True)
    table["steps"] = [_steps_text(steps) for steps in table["steps"]]
    return table


def _steps_text(steps: str | Mapping[str, float]) -> str:
    """The steps gamma_k of the adjusted fit, by token count, as ``2 tokens +0.120; 3 tokens +0.305``."""
    found = json.loads(steps) if isinstance(steps, str) else dict(steps)
    return "; ".join(f"{count} tokens {value:+.3f}" for count, value in sorted(found.items(), key=lambda item: int(item[0])))


def strata_table(result: AnalysisResult, measure: str) -> pd.DataFrame:
    """Per token-count stratum, over the core layers: its magnitudes and the mean alpha within it,
    then the raw and the adjusted mean core alpha as the last two rows (empty without token facts)."""
    summary = result.tokenization_summary(measure)
    columns = ["stratum", "n_magnitudes", "magnitudes", "mean_alpha", "fitted_layers", "reason"]
    if not summary["recorded"]:
        return pd.DataFrame(columns=columns)
    rows = [{
        "stratum": f"{level['n_tokens']} token{'s' if level['n_tokens'] != 1 else ''}",
        "n_magnitudes": level["n_magnitudes"],
        "magnitudes": f"{level['smallest']:g}" if level["smallest"] == level["largest"]
        else f"{level['smallest']:g}-{level['largest']:g}",
        "mean_alpha": level["mean_alpha"], "fitted_layers": level["n_fitted"], "reason": level["reason"],
    } for level in summary["strata"]]
    n_all = len(result.magnitudes)
    span = f"{result.magnitudes.min():g}-{result.magnitudes.max():g}"
    rows += [
        {"stratum": "all (raw alpha)", "n_magnitudes": n_all, "magnitudes": span,
         "mean_alpha": summary["mean_alpha_raw"], "fitted_layers": summary["n_raw"], "reason": ""},
        {"stratum": "all (adjusted for the token count)", "n_magnitudes": n_all, "magnitudes": span,
         "mean_alpha": summary["mean_alpha_adjusted"], "fitted_layers": summary["n_adjusted"],
         "reason": summary["reason"]},
    ]
    return pd.DataFrame(rows, columns=columns)


def tokenization_sentence(result: AnalysisResult, measure: str) -> str:
    """One sentence: the raw and the adjusted mean core alpha, or why there is no adjusted alpha."""
    summary = result.tokenization_summary(measure)
    splitting = f"The tokenizer {result.digit_splitting}. " if result.digit_splitting else ""
    if not summary["recorded"]:
        return f"{splitting}No alpha adjusted for tokenization: {result.tokenization_note}."
    counts = ", ".join(str(level["n_tokens"]) for level in summary["strata"])
    raw = fixed(summary["mean_alpha_raw"], 4)
    if len(summary["strata"]) == 1:
        count = summary["strata"][0]["n_tokens"]
        return (f"{splitting}Every magnitude here is written as {count} token{'s' if count != 1 else ''}, so the "
                f"alpha adjusted for the token count is the raw one: mean core alpha of {measure_title(measure)} {raw}.")
    if not summary["n_adjusted"]:
        return (f"{splitting}Token counts {counts}; no adjusted alpha of {measure_title(measure)} at the core "
                f"layers: {summary['reason']}.")
    return (
        f"{splitting}Mean core alpha of {measure_title(measure)}: raw {raw}, adjusted for the token count "
        f"(strata of {counts} tokens) {fixed(summary['mean_alpha_adjusted'], 4)} over {summary['n_adjusted']} core "
        "layers; what separates them is what the steps at the digit-count boundaries add to the raw exponent."
    )


# -- each magnitude's tokens --------------------------------------------------------------


def has_token_facts(result: AnalysisResult) -> bool:
    """Whether the analysis had its vectors' token facts (the tokenization figures have something to draw)."""
    return result.has_tokenization


def token_facts_table(result: AnalysisResult) -> pd.DataFrame:
    """Per magnitude: its token count, kept token (id and text), length and whether every carrier
    tokenized it alike."""
    return result.tokens.reset_index(drop=True)
