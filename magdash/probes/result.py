"""The results of the probes: one layer's (:class:`LayerProbe`) and a model's (:class:`ProbeResult`),
as tidy tables, with the plain compressed-JSON payload the result cache stores (never pickle: a
shared store must not be able to run code).

Tables (one row per ...; every :class:`ProbeResult` table starts with ``layer`` and ``label``):

- ``scores``: layer x scheme x target x task: :data:`SCORE_COLUMNS`;
- ``selectivity``: layer x scheme x target: :data:`SELECTIVITY_COLUMNS`;
- ``directions``: layer x target: :data:`DIRECTION_COLUMNS`;
- ``decoded``: layer x target x magnitude: :data:`DECODED_COLUMNS`;
- ``decoded_scaling``: layer x target: :data:`SCALING_COLUMNS`;
- ``layers``: layer: :data:`LAYER_COLUMNS`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.jsonio import frame_from_plain, frame_to_plain, pack, unpack
from magdash.overflow import nonfinite_warning
from magdash.params import ranges
from magdash.probes.probe_params import ProbeParams

SCORE_COLUMNS = [
    "scheme", "target", "task",
    "r2", "r2_low", "r2_high",
    "spearman", "spearman_low", "spearman_high",
    "error_log", "error_log_low", "error_log_high",
    "share_nonpositive",
    "alpha", "alpha_at_floor", "n_folds", "n_magnitudes",
]
"""scheme (carrier|magnitude), target (log|linear), task (real|control); held-out R², Spearman and mean
|ln n-hat - ln n| with their intervals; the share of predictions without a log (n-hat <= 0); the
median chosen penalty over the folds (relative units), the share of folds that chose the grid's
smallest penalty; the number of folds and of magnitudes predicted."""

SELECTIVITY_COLUMNS = ["scheme", "target", "selectivity", "selectivity_low", "selectivity_high"]
"""Real-task R² minus control-task R² (held out), with its paired interval."""

DIRECTION_COLUMNS = ["target", "cosine_pc1", "fold_cosine", "cosine_previous_layer", "alpha"]
"""The real-task probe direction (all rows, penalty by GCV): its cosine with the centroids' PC1
oriented with n, the mean cosine of the held-out-carrier folds' directions with it, its cosine
with the previous layer's direction (NaN for the first layer probed), and its penalty."""

DECODED_COLUMNS = ["target", "magnitude", "mean_decoded", "sd_decoded", "weber_fraction"]
"""Per magnitude from the held-out-carrier predictions: mean and SD over carriers of n-hat, SD / n."""

SCALING_COLUMNS = ["target", "beta", "beta_low", "beta_high", "intercept", "weber_mean", "weber_mean_low",
                   "weber_mean_high", "calibration", "n_points"]
"""Slope beta of log SD(n-hat) on log n (1: constant Weber fraction; 0: constant absolute noise)
with its interval and intercept; the mean Weber fraction with its interval; the slope of log mean
n-hat on log n (1: calibrated); the magnitudes in the fit."""

LAYER_COLUMNS = ["layer", "label", "probed", "exact", "n_features", "variance_kept", "nonfinite"]
"""Whether the layer was probed (not when it holds Inf/NaN vectors: ``nonfinite`` counts them),
exactly or in a principal-component basis of ``n_features`` coordinates holding ``variance_kept``
of the layer's variance."""

TABLES = ("scores", "selectivity", "directions", "decoded", "decoded_scaling", "layers")

PROBE_VERSION = "2"
"""Bumped whenever :func:`magdash.probes.probe.run_probes` can give another result for the same vectors
and parameters: the cache key of :mod:`magdash.runs.probe_runs` (``tests/test_cache_versions.py``
checks it). Here, not beside the fits, so that a cached result is found without importing them."""

# The grid's smallest penalty chosen in more than this share of a layer's folds: extend the grid down.
# (Its largest is what a layer without a decodable code chooses: predicting the mean is the answer there.)
FLOOR_SHARE = 0.5


@dataclass
class LayerProbe:
    """The probes of one layer: the tables without their ``layer`` and ``label`` columns, the
    basis used, and each real-task probe's unit direction in the layer's d dimensions."""

    scores: pd.DataFrame
    selectivity: pd.DataFrame
    directions: pd.DataFrame
    decoded: pd.DataFrame
    decoded_scaling: pd.DataFrame
    exact: bool
    n_features: int
    variance_kept: float
    direction_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    axis: np.ndarray | None = None  # the centroids' PC1, oriented with n

    def score(self, scheme: str, target: str, task: str = "real") -> pd.Series:
        """The ``scores`` row of one scheme, target and task."""
        rows = self.scores[(self.scores["scheme"] == scheme) & (self.scores["target"] == target)
                           & (self.scores["task"] == task)]
        return rows.iloc[0]


def _stack(frames: list[tuple[int, str, pd.DataFrame]], columns: list[str]) -> pd.DataFrame:
    """Per-layer tables, one below the other, with ``layer`` and ``label`` in front."""
    if not frames:
        return pd.DataFrame(columns=["layer", "label", *columns])
    stacked = pd.concat([frame for _, _, frame in frames], ignore_index=True)
    lengths = [len(frame) for _, _, frame in frames]
    stacked.insert(0, "layer", np.repeat([layer for layer, _, _ in frames], lengths))
    stacked.insert(1, "label", np.repeat(np.array([label for _, label, _ in frames], dtype=object), lengths))
    return stacked


@dataclass
class ProbeResult:
    """The probes of every layer of one model on one stimulus set (tables: see the module docstring).

    Attributes:
        model: the model's name.
        stimuli: the stimulus set's name.
        magnitudes: the magnitudes, ascending.
        n_carriers: carriers per magnitude.
        layer_labels: every layer's label.
        params: every choice of the probes.
        scores: held-out scores per layer, scheme, target and task.
        selectivity: real minus control scores per layer, scheme and target.
        directions: the probe direction against PC1 per layer and target.
        decoded: the decoded magnitudes per layer, target and magnitude.
        decoded_scaling: the scaling of the decoded magnitudes' spread per layer and target.
        layers: per layer: probed or not, exact or reduced, features, variance kept, non-finite vectors.
        nonfinite_layers: layer -> vectors holding Inf or NaN; such a layer is not probed.
        from_cache: whether the result was read from the store's cache.
    """

    model: str
    stimuli: str
    magnitudes: np.ndarray
    n_carriers: int
    layer_labels: list[str]
    params: ProbeParams
    scores: pd.DataFrame
    selectivity: pd.DataFrame
    directions: pd.DataFrame
    decoded: pd.DataFrame
    decoded_scaling: pd.DataFrame
    layers: pd.DataFrame
    nonfinite_layers: dict[int, int] = field(default_factory=dict)
    from_cache: bool = field(default=False, compare=False)

    @classmethod
    def from_layers(cls, probes: list[tuple[int, str, LayerProbe | None, int]], *, model: str, stimuli: str,
                    magnitudes: np.ndarray, n_carriers: int, params: ProbeParams) -> ProbeResult:
        """Assemble (layer, label, probe or None when left out, non-finite vector count) tuples.

        Args:
            probes: (layer, label, the layer's probe or None when left out, its non-finite vector count) per layer.
            model: the model's name.
            stimuli: the stimulus set's name.
            magnitudes: the magnitudes.
            n_carriers: carriers per magnitude.
            params: the probes' parameters.
        """
        tables: dict[str, list[tuple[int, str, pd.DataFrame]]] = {name: [] for name in TABLES if name != "layers"}
        layer_rows = []
        for layer, label, probe, nonfinite in probes:
            layer_rows.append({"layer": layer, "label": label, "probed": probe is not None,
                               "exact": bool(probe.exact) if probe else False,
                               "n_features": int(probe.n_features) if probe else 0,
                               "variance_kept": float(probe.variance_kept) if probe else float("nan"),
                               "nonfinite": int(nonfinite)})
            if probe is None:
                continue
            for name in tables:
                tables[name].append((layer, label, getattr(probe, name)))
        columns = {"scores": SCORE_COLUMNS, "selectivity": SELECTIVITY_COLUMNS, "directions": DIRECTION_COLUMNS,
                   "decoded": DECODED_COLUMNS, "decoded_scaling": SCALING_COLUMNS}
        return cls(
            model=model, stimuli=stimuli, magnitudes=np.asarray(magnitudes, dtype=np.float64), n_carriers=n_carriers,
            layer_labels=[label for _, label, _, _ in probes], params=params,
            **{name: _stack(frames, columns[name]) for name, frames in tables.items()},
            layers=pd.DataFrame(layer_rows, columns=LAYER_COLUMNS),
            nonfinite_layers={layer: count for layer, _, probe, count in probes if probe is None},
        )

    @property
    def n_layers(self) -> int:
        return len(self.layer_labels)

    def score_table(self, scheme: str = "carrier", target: str = "log", task: str = "real") -> pd.DataFrame:
        """One scheme, target and task over layers (rows of ``scores`` in layer order).

        Args:
            scheme: the cross-validation scheme: ``carrier`` or ``magnitude`` folds.
            target: what is decoded: ``log`` or ``linear`` n.
            task: ``real`` labels or the ``control`` task.
        """
        rows = self.scores[(self.scores["scheme"] == scheme) & (self.scores["target"] == target)
                           & (self.scores["task"] == task)]
        return rows.sort_values("layer").reset_index(drop=True)

    def warnings(self) -> list[str]:
        """Layers left out for Inf/NaN vectors; layers whose probes chose the grid's smallest penalty."""
        name = self.model or "the model"
        total = self.magnitudes.size * self.n_carriers
        lines = []
        warning = nonfinite_warning(name, self.nonfinite_layers, total)
        if warning:
            lines.append(warning.replace("every fit and diagnostic", "every probe"))
        if not self.scores.empty:
            real = self.scores[self.scores["task"] == "real"]
            floor = real[real["alpha_at_floor"] > FLOOR_SHARE]
            if not floor.empty:
                lines.append(
                    f"{name}: the probes chose the grid's smallest ridge penalty ({self.params.alphas[0]:g}) in most "
                    f"folds at layer(s) {ranges(floor['layer'].unique().tolist())}: they may want less "
                    "regularisation than the grid offers; add smaller alphas")
        return lines

    # -- output -------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``probe --json`` shape: every table as records, params, warnings (NaN stays NaN
        here; the CLI writes null)."""
        return {
            "model": self.model,
            "stimuli": self.stimuli,
            "magnitudes": self.magnitudes.tolist(),
            "n_carriers": self.n_carriers,
            "layer_labels": list(self.layer_labels),
            "params": dataclasses.asdict(self.params),
            **{name: getattr(self, name).to_dict(orient="records") for name in TABLES},
            "nonfinite_layers": dict(self.nonfinite_layers),
            "warnings": self.warnings(),
        }

    def to_payload(self) -> bytes:
        """The result as plain compressed JSON for the store's cache (never pickle)."""
        document = {
            "model": self.model,
            "stimuli": self.stimuli,
            "magnitudes": self.magnitudes,
            "n_carriers": self.n_carriers,
            "layer_labels": self.layer_labels,
            "params": self.params,
            **{name: frame_to_plain(getattr(self, name)) for name in TABLES},
            "nonfinite_layers": self.nonfinite_layers,
        }
        return pack(document)

    @classmethod
    def from_payload(cls, payload: bytes) -> ProbeResult:
        """The result a payload of :meth:`to_payload` holds.

        Args:
            payload: bytes written by :meth:`to_payload`.
        """
        document = unpack(payload)
        return cls(
            model=document["model"],
            stimuli=document["stimuli"],
            magnitudes=np.asarray(document["magnitudes"], dtype=np.float64),
            n_carriers=int(document["n_carriers"]),
            layer_labels=list(document["layer_labels"]),
            params=ProbeParams.from_dict(document["params"]),
            **{name: frame_from_plain(document[name]) for name in TABLES},
            nonfinite_layers={int(k): int(v) for k, v in document["nonfinite_layers"].items()},
            from_cache=True,
        )

    def equals(self, other: ProbeResult) -> bool:
        """Same identity, parameters and tables (NaN equal to NaN; ``from_cache`` ignored).

        Args:
            other: the result to compare with.
        """
        return (
            (self.model, self.stimuli, self.n_carriers, self.layer_labels, self.params, self.nonfinite_layers)
            == (other.model, other.stimuli, other.n_carriers, other.layer_labels, other.params, other.nonfinite_layers)
            and np.array_equal(self.magnitudes, other.magnitudes)
            and all(getattr(self, name).equals(getattr(other, name)) for name in TABLES)
        )


def compare_probes(model: ProbeResult, control: ProbeResult) -> pd.DataFrame:
    """A model's held-out scores beside another's on the same stimuli (e.g. its ``@random`` control),
    layer by layer: the ``scores`` columns r2, spearman, error_log of both (suffixes ``_model`` and
    ``_control``, intervals included) and ``r2_difference`` = model minus control."""
    keys = ["layer", "scheme", "target", "task"]
    if not np.array_equal(model.magnitudes, control.magnitudes) or model.n_carriers != control.n_carriers:
        raise AnalysisError("the two probe results were computed on different magnitudes or carriers")
    values = ["r2", "r2_low", "r2_high", "spearman", "spearman_low", "spearman_high", "error_log",
              "error_log_low", "error_log_high"]
    merged = model.scores[["label", *keys, *values]].merge(
        control.scores[[*keys, *values]], on=keys, how="inner", suffixes=("_model", "_control"))
    merged["r2_difference"] = merged["r2_model"] - merged["r2_control"]
    return merged[["layer", "label", *keys[1:], *[c for c in merged.columns if c not in ("layer", "label", *keys)]]]
