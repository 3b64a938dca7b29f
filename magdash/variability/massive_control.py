"""Alpha with the massive-activation dimensions dropped, as a control beside the raw alpha.

A handful of massive dimensions (:mod:`magdash.depth_statistics.massive_dims`) can hold most of ||h||^2, so
every variability measure of the raw vectors is partly a measure of those few coordinates.
The control reruns the same analysis (same parameters, seed and core band) on the vectors
without each layer's massive dimensions and sets the two alphas side by side: a conclusion
that survives the drop is not carried by the massive dimensions. The run over a store is
:func:`magdash.runs.analysis_runs.massive_control`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from magdash.variability.analysis import AnalysisResult


@dataclass(frozen=True)
class MassiveControl:
    """The raw analysis and the one without massive dimensions, of the same model and stimuli."""

    raw: AnalysisResult
    dropped: AnalysisResult

    def layers(self) -> pd.DataFrame:
        """One row per (measure, layer): alpha raw and dropped, their CIs, the dims dropped.

        Columns: measure, layer, label, core, alpha_raw, ci_low_raw, ci_high_raw,
        alpha_dropped, ci_low_dropped, ci_high_dropped, delta (dropped - raw), n_massive,
        massive_dims.
        """
        rows = []
        for measure in self.raw.params.measures:
            for layer, label in enumerate(self.raw.layer_labels):
                raw, dropped = self.raw.fit(measure, layer), self.dropped.fit(measure, layer)
                dims = self.dropped.massive_dims.get(layer, [])
                rows.append({
                    "measure": measure, "layer": layer, "label": label, "core": layer in self.raw.core_layers,
                    "alpha_raw": raw.alpha, "ci_low_raw": raw.ci_low, "ci_high_raw": raw.ci_high,
                    "alpha_dropped": dropped.alpha, "ci_low_dropped": dropped.ci_low,
                    "ci_high_dropped": dropped.ci_high, "delta": dropped.alpha - raw.alpha,
                    "n_massive": len(dims), "massive_dims": ", ".join(map(str, dims)),
                })
        return pd.DataFrame(rows)

    def summary(self) -> pd.DataFrame:
        """Per measure: mean core alpha raw and dropped, the shift, and whether its sign holds."""
        rows = []
        for measure in self.raw.params.measures:
            raw = self.raw.hypotheses[measure].mean_alpha
            dropped = self.dropped.hypotheses[measure].mean_alpha
            same_sign = bool(np.sign(raw) == np.sign(dropped)) if math.isfinite(raw) and math.isfinite(dropped) else None
            rows.append({"measure": measure, "mean_alpha_raw": raw, "mean_alpha_dropped": dropped,
                         "shift": dropped - raw, "sign_holds": same_sign})
        return pd.DataFrame(rows)

    def to_json(self) -> dict[str, Any]:
        return {
            "massive_ratio": self.dropped.params.massive_ratio,
            "core_layers": list(self.raw.core_layers),
            "summary": self.summary().to_dict(orient="records"),
            "layers": self.layers().to_dict(orient="records"),
        }

