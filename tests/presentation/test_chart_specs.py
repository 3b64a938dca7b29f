"""The Vega-Lite specs of a few charts against the specs they had before the figure modules were
reorganised (tests/presentation/data/chart_specs.json): moving a figure between modules, or
naming a colour in chart_style instead of writing it out, draws the same chart. Drawn from
frames with their numbers rounded, so the stored specs do not depend on the last bits of a fit.

When a chart changes on purpose, write the file again:
``python -m tests.presentation.test_chart_specs``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from magdash.variability.analysis import run_analysis
from magdash.variability.analysis_params import AnalysisParams

STORED = Path(__file__).with_name("data") / "chart_specs.json"
MODULES = ("scaling_figures", "tokenization_figures", "weber_figures", "compare_figures", "geometry_figures",
           "depth_figures")
MAGNITUDES = np.array([1, 2, 3, 5, 8, 10, 20, 50, 100, 200, 500, 1000], dtype=np.float64)


def presentation_function(name: str) -> Callable:
    """A chart function of magdash.presentation by its name, wherever its module keeps it."""
    for module in MODULES:
        found = getattr(importlib.import_module(f"magdash.presentation.{module}"), name, None)
        if found is not None:
            return found
    raise LookupError(name)


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.round(3)


def chart_specs(find: Callable[[str], Callable] = presentation_function) -> dict[str, dict]:
    """The specs of the charts compared, keyed by chart."""
    rng = np.random.default_rng(3)
    layers = [(f"L{layer}", (rng.normal(size=(MAGNITUDES.size, 1, 8)) * 3 + rng.normal(size=(MAGNITUDES.size, 4, 8))
                             * MAGNITUDES[:, None, None] ** (0.3 * layer - 0.3)).astype(np.float32))
              for layer in range(4)]
    result = run_analysis(iter(layers), MAGNITUDES, n_blocks=3, params=AnalysisParams(n_boot=20), model="m",
                          stimuli="s")
    views = pd.DataFrame({"view": ["raw"] * 3 + ["massive dimensions dropped"] * 3, "layer": [0, 1, 2] * 2,
                          "label": ["emb", "1", "2"] * 2, "core": [False, True, True] * 2,
                          "alpha": [np.nan, 0.2, 0.4, np.nan, 0.1, 0.3], "ci_low": [np.nan, 0.1, 0.3, np.nan, 0.0, 0.2],
                          "ci_high": [np.nan, 0.3, 0.5, np.nan, 0.2, 0.4]})
    token_views = pd.concat([views.iloc[:3].assign(view=view) for view in
                             ("raw", "adjusted: token count", "adjusted: + kept token")], ignore_index=True)
    histogram = pd.DataFrame({"low": [0.1, 0.5, 1.0], "high": [0.5, 1.0, 2.0], "count": [4, 3, 1],
                              "density": [2.5, 1.5, 0.25]})
    mp = pd.DataFrame({"eigenvalue": [0.2, 0.6, 1.2], "density": [2.0, 1.2, 0.3]})
    spikes = pd.DataFrame({"rank": [1], "eigenvalue": [3.0]})
    charts = {
        "alpha_profile": lambda: find("alpha_profile")(_rounded(find("fits_frame")(result)), measures=["eucl"]),
        "e4_chart": lambda: find("e4_chart")(_rounded(find("e4_frame")(result))),
        "noise_model_chart": lambda: find("noise_model_chart")(_rounded(find("noise_frame")(result))),
        "massive_alpha_chart": lambda: find("massive_alpha_chart")(views),
        "tokenization_views": lambda: find("massive_alpha_chart")(token_views, colors=find("TOKEN_VIEW_COLORS")),
        "rsa_by_layer": lambda: find("rsa_by_layer")(_rounded(find("rsa_frame")(result))),
        "pc1_vs_logn": lambda: find("pc1_vs_logn")(pd.DataFrame({"magnitude": [1.0, 10.0, 100.0],
                                                                  "pc1": [-1.0, 0.2, 0.8]})),
        "spectrum_chart": lambda: find("spectrum_chart")(histogram, mp, spikes, edge=1.5),
    }
    return {name: json.loads(json.dumps(chart().to_dict(), sort_keys=True)) for name, chart in charts.items()}


def test_the_charts_draw_as_before_the_reorganisation():
    stored = json.loads(STORED.read_text(encoding="utf-8"))
    drawn = chart_specs()
    assert sorted(drawn) == sorted(stored)
    for name, spec in drawn.items():
        assert spec == stored[name], name


if __name__ == "__main__":
    STORED.write_text(json.dumps(chart_specs(), sort_keys=True, indent=1) + "\n", encoding="utf-8")
