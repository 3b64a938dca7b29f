"""The results of the probes: one layer's (:class:`LayerProbe`) and a model's (:class:`ProbeResult`),
as tidy tables, with the plain compressed-JSON payload the result cache stores (never pickle: a
shared store must not be able to run code).

Tables (one row per ...; every :class:`ProbeResult` table starts with ``layer`` and ``label``):

- ``scores``: layer x scheme x target x task: :data:`SCORE_COLUMNS`;
- ``selectivity``: layer x scheme x target: :data:`SELECTIVITY_COLUMNS`;
- ``directions``: layer x target: :data:`DIRECTION_COLUMNS`;
- ``decoded``: layer x target x magnitude: :data:`DECODED_COLUMNS`;
- ``decoded_scaling``: layer x target: :data:`SCALING_COLUMNS`;
- ``best_layers``: layer x target: :data:`BEST_COLUMNS`;
- ``layers``: layer: :data:`LAYER_COLUMNS`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.caveats import Caveat, Severity, lines
from magdash.errors import AnalysisError
from magdash.overflow import nonfinite_warning
from magdash.params import ranges
from magdash.probes.baseline import Strata
from magdash.probes.probe_params import ProbeParams
from magdash.probes.selection import best_band
from magdash.result_codec import PayloadCodec, not_stored

SCORE_COLUMNS = [
    "scheme", "target", "task",
    "r2", "r2_low", "r2_high",
    "baseline_r2", "r2_over_baseline", "r2_over_baseline_low", "r2_over_baseline_high",
    "r2_within_strata", "r2_within_strata_low", "r2_within_strata_high", "n_strata_within",
    "spearman", "spearman_low", "spearman_high",
    "error_log", "error_log_low", "error_log_high",
    "share_nonpositive",
    "alpha", "alpha_at_floor", "n_folds", "n_magnitudes",
]
"""scheme (carrier|magnitude), target (log|linear), task (real|control); held-out R² with its
interval; the held-out R² of the strata's means on the same folds (:mod:`magdash.probes.baseline`:
the digit count, and the token count where recorded) and R² minus it with its paired interval;
the R² within strata with its interval and the strata it pools; Spearman and mean
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

SCALING_COLUMNS = ["target", "beta", "beta_low", "beta_high", "beta_null", "beta_null_low", "beta_null_high",
                   "beta_null_p", "intercept", "weber_mean", "weber_mean_low", "weber_mean_high", "calibration",
                   "n_points", "note"]
"""Slope beta of log SD(n-hat) on log n with its interval; what a read-out of constant error gives
for this design (:func:`magdash.probes.decoded.constant_error_null`: its mean, its permutations'
interval) and beta's permutation p against it; the intercept; the mean of SD(n-hat)/n with its
interval; the slope of log mean n-hat on log n (1: calibrated); the magnitudes in the fit; why
there is no fit (no spread between carriers beyond rounding), "" when there is one."""

BEST_COLUMNS = ["target", "r2", "gap", "gap_low", "best", "in_band"]
"""The held-out-magnitude R² of the real labels, its gap to the largest, the gap's lower bound at
the level adjusted for choosing the best (:func:`magdash.probes.selection.best_band`), whether the
layer has the largest R², whether its gap's bound reaches 0 (the band of layers that cannot be
told from the best; the best alone when there is no bootstrap)."""

LAYER_COLUMNS = ["layer", "label", "probed", "exact", "n_features", "variance_kept", "nonfinite"]
"""Whether the layer was probed (not when it holds Inf/NaN vectors: ``nonfinite`` counts them),
exactly or in a principal-component basis of ``n_features`` coordinates holding ``variance_kept``
of the layer's variance."""

TABLES = ("scores", "selectivity", "directions", "decoded", "decoded_scaling", "best_layers", "layers")
_PER_LAYER = ("scores", "selectivity", "directions", "decoded", "decoded_scaling")
"""The tables each layer's probe holds (the others are assembled over layers)."""

PROBE_VERSION = "3"
"""Bumped whenever :func:`magdash.probes.probe.run_probes` can give another result for the same vectors
and parameters: the cache key of :mod:`magdash.runs.probe_runs` (``tests/test_cache_versions.py``
checks it). Here, not beside the fits, so that a cached result is found without importing them."""

# The grid's smallest penalty chosen in more than this share of a layer's folds: extend the grid down.
# (Its largest is what a layer without a decodable code chooses: predicting the mean is the answer there.)
FLOOR_SHARE = 0.5


@dataclass
class LayerProbe:
    """The probes of one layer: the tables without their ``layer`` and ``label`` columns, the
    basis used, each real-task probe's unit direction in the layer's d dimensions, and the
    bootstrap replicates of its held-out-magnitude R² per target (from which a run chooses the
    band of best layers: :func:`magdash.probes.selection.best_band`)."""

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
    r2_replicates: dict[str, np.ndarray] = field(default_factory=dict)

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


def _best_layer_table(probes: list[tuple[int, str, LayerProbe]], targets: tuple[str, ...], ci: float) -> pd.DataFrame:
    """The ``best_layers`` table of the probed layers (:func:`magdash.probes.selection.best_band`
    on each target's held-out-magnitude R² of the real labels).

    Args:
        probes: (layer, label, its probe) of every probed layer, in layer order.
        targets: the targets read out.
        ci: the band's confidence level.
    """
    rows = []
    for target in targets:
        r2 = np.array([float(probe.score("magnitude", target)["r2"]) for _, _, probe in probes])
        replicates = (np.column_stack([probe.r2_replicates[target] for _, _, probe in probes]) if probes
                      else np.empty((0, 0)))
        best, bounds, band = best_band(r2, replicates, ci)
        for index, (layer, label, _) in enumerate(probes):
            rows.append({"layer": layer, "label": label, "target": target, "r2": r2[index],
                         "gap": r2[best] - r2[index] if best >= 0 else math.nan, "gap_low": float(bounds[index]),
                         "best": index == best, "in_band": bool(band[index])})
    return pd.DataFrame(rows, columns=["layer", "label", *BEST_COLUMNS])


@dataclass
class ProbeResult(PayloadCodec):
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
        best_layers: per layer and target: the held-out-magnitude R², its gap to the best, the band.
        layers: per layer: probed or not, exact or reduced, features, variance kept, non-finite vectors.
        strata: each magnitude's stratum of the baseline ("2 digits"; "3 digits, 2 tokens").
        strata_by: what the strata are made of: ``digit count``, or ``digit count and token count``
            where the items' token facts were given.
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
    best_layers: pd.DataFrame
    layers: pd.DataFrame
    strata: list[str]
    strata_by: str
    nonfinite_layers: dict[int, int] = field(default_factory=dict)
    from_cache: bool = field(default=False, compare=False, metadata=not_stored(True))

    _payload_order = ("model", "stimuli", "magnitudes", "n_carriers", "layer_labels", "params", "strata", "strata_by")

    @classmethod
    def from_layers(cls, probes: list[tuple[int, str, LayerProbe | None, int]], *, model: str, stimuli: str,
                    magnitudes: np.ndarray, n_carriers: int, params: ProbeParams, strata: Strata) -> ProbeResult:
        """Assemble (layer, label, probe or None when left out, non-finite vector count) tuples.

        Args:
            probes: (layer, label, the layer's probe or None when left out, its non-finite vector count) per layer.
            model: the model's name.
            stimuli: the stimulus set's name.
            magnitudes: the magnitudes.
            n_carriers: carriers per magnitude.
            params: the probes' parameters.
            strata: the magnitudes' strata of the baseline.
        """
        tables: dict[str, list[tuple[int, str, pd.DataFrame]]] = {name: [] for name in _PER_LAYER}
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
            best_layers=_best_layer_table([(layer, label, probe) for layer, label, probe, _ in probes
                                          if probe is not None], params.targets, params.ci),
            layers=pd.DataFrame(layer_rows, columns=LAYER_COLUMNS),
            strata=strata.names(), strata_by=strata.by,
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

    def best_and_band(self, target: str = "log") -> tuple[int | None, list[int]]:
        """The layer with the largest held-out-magnitude R² of ``target`` (None when no layer was
        probed) and the band of layers that cannot be told from it (``best_layers``).

        Args:
            target: what is decoded: ``log`` or ``linear`` n.
        """
        rows = self.best_layers[self.best_layers["target"] == target]
        best = rows.loc[rows["best"].astype(bool), "layer"]
        band = rows.loc[rows["in_band"].astype(bool), "layer"]
        return (int(best.iloc[0]) if len(best) else None), sorted(int(layer) for layer in band)

    def warnings(self) -> list[str]:
        """Layers left out for Inf/NaN vectors; layers whose probes chose the grid's smallest penalty
        (:meth:`caveats` as lines, most severe first)."""
        return lines(self.caveats())

    def caveats(self) -> list[Caveat]:
        """What to know before reading the probes (:mod:`magdash.caveats`): layers left out for Inf/NaN
        vectors (a caution), layers whose probes chose the grid's smallest ridge penalty (a note)."""
        name = self.model or "the model"
        total = self.magnitudes.size * self.n_carriers
        found = []
        warning = nonfinite_warning(name, self.nonfinite_layers, total)
        if warning:
            text = warning.replace("every fit and diagnostic", "every probe").removeprefix(f"{name}: ")
            found.append(Caveat(Severity.CAUTION, text, (), name))
        if not self.scores.empty:
            real = self.scores[self.scores["task"] == "real"]
            floor = real[real["alpha_at_floor"] > FLOOR_SHARE]
            if not floor.empty:
                found.append(Caveat(Severity.NOTE, (
                    f"the probes chose the grid's smallest ridge penalty ({self.params.alphas[0]:g}) in most "
                    f"folds at layer(s) {ranges(floor['layer'].unique().tolist())}: they may want less "
                    "regularisation than the grid offers; add smaller alphas"), (), name))
        return found

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
            "strata": list(self.strata),
            "strata_by": self.strata_by,
            **{name: getattr(self, name).to_dict(orient="records") for name in TABLES},
            "nonfinite_layers": dict(self.nonfinite_layers),
            "warnings": self.warnings(),
        }

    def equals(self, other: ProbeResult) -> bool:
        """Same identity, parameters and tables (NaN equal to NaN; ``from_cache`` ignored).

        Args:
            other: the result to compare with.
        """
        return (
            (self.model, self.stimuli, self.n_carriers, self.layer_labels, self.params, self.nonfinite_layers,
             self.strata, self.strata_by)
            == (other.model, other.stimuli, other.n_carriers, other.layer_labels, other.params, other.nonfinite_layers,
                other.strata, other.strata_by)
            and np.array_equal(self.magnitudes, other.magnitudes)
            and all(getattr(self, name).equals(getattr(other, name)) for name in TABLES)
        )


def _side_by_side(model: ProbeResult, control: ProbeResult, table: str, keys: list[str], values: list[str],
                  difference: str) -> pd.DataFrame:
    """``table``'s ``values`` of two results on the same stimuli merged on ``keys`` (suffixes ``_model``
    and ``_control``), with ``<difference>_difference`` = model minus control."""
    if not np.array_equal(model.magnitudes, control.magnitudes) or model.n_carriers != control.n_carriers:
        raise AnalysisError("the two probe results were computed on different magnitudes or carriers")
    merged = getattr(model, table)[["label", *keys, *values]].merge(
        getattr(control, table)[[*keys, *values]], on=keys, how="inner", suffixes=("_model", "_control"))
    merged[f"{difference}_difference"] = merged[f"{difference}_model"] - merged[f"{difference}_control"]
    return merged[["layer", "label", *keys[1:], *[c for c in merged.columns if c not in ("layer", "label", *keys)]]]


def compare_probes(model: ProbeResult, control: ProbeResult) -> pd.DataFrame:
    """A model's held-out scores beside another's on the same stimuli (e.g. its ``@random`` control),
    layer by layer: the ``scores`` columns r2, spearman, error_log of both (suffixes ``_model`` and
    ``_control``, intervals included) and ``r2_difference`` = model minus control."""
    return _side_by_side(model, control, "scores", ["layer", "scheme", "target", "task"],
                         ["r2", "r2_low", "r2_high", "spearman", "spearman_low", "spearman_high", "error_log",
                          "error_log_low", "error_log_high"], "r2")


def compare_scaling(model: ProbeResult, control: ProbeResult) -> pd.DataFrame:
    """A model's decoded-noise exponent beside another's (its ``@random`` control, say), layer by
    layer: beta with its interval and its constant-error null of both (suffixes ``_model`` and
    ``_control``) and ``beta_difference`` = model minus control."""
    return _side_by_side(model, control, "decoded_scaling", ["layer", "target"],
                         ["beta", "beta_low", "beta_high", "beta_null", "beta_null_p"], "beta")
