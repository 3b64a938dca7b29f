"""The scalar-variability analysis of one model on one stimulus set, from its vectors.

:func:`run_analysis` takes the vectors one layer at a time (a generator reading a store keeps
memory at a single layer), computes the chosen variability measures
(:mod:`magdash.variability.measures`), the E4 on/off-axis variances, the coefficient of variation
and the centroid geometry (:mod:`magdash.variability.geometry`) of that layer, and then fits and
tests everything from the small (n_layers x n_magnitudes) arrays of V:

- per layer and measure: the scaling fit (:func:`magdash.variability.fits.fit_scaling`; the 3x-median
  outlier rule for V_eucl and V_residual only, as in the paper) and the AICc noise-model
  comparison on the same points;
- per measure: H1–H4 over the core layers and the E3 boundary sensitivity
  (:mod:`magdash.variability.hypotheses`); E4 once per model;
- per layer: the Spearman correlation of CV(n) with n (the paper's CV check);
- given the items' token facts (:mod:`magdash.tokenization`), per layer and measure: alpha
  within each token-count stratum and alpha adjusted for tokenization, beside the raw alpha
  (:mod:`magdash.variability.tokenization_fits`); without them, no adjusted alpha and a note
  saying why (``tokenization_note``).

The bootstrap CI runs on the core layers by default (``bootstrap_layers="core"``, like the
paper's script); "all" gives CI bands on every layer, "none" skips it.

``AnalysisParams.conventions`` chooses magdash's statistical conventions (the default) or those
of the paper's script (``"paper"``), which reproduce its numbers exactly; every difference is
listed in :mod:`magdash.variability.conventions`. The paper's consistency checks run in both
(``AnalysisResult.checks``; tripped ones are in :meth:`AnalysisResult.warnings`).

:class:`AnalysisResult` is plain data (``to_payload``: compressed JSON, never pickle); the run over
a store that caches it under :data:`ANALYSIS_VERSION` is :func:`magdash.runs.analysis_runs.analyze`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.caveats import Caveat, Severity, lines, ranked
from magdash.errors import AnalysisError
from magdash.formatting import format_number, layer_span
from magdash.jsonio import frame_to_plain
from magdash.norm_outliers import outsized_warning
from magdash.overflow import count_nonfinite, nonfinite_warning
from magdash.params import ProgressCallback, ranges
from magdash.phase.massive_dims import DimensionStats, find_massive
from magdash.result_codec import PayloadCodec, not_stored, stored_as
from magdash.significance import unreachable_note
from magdash.tokenization import DigitSplitting, NumberTokens, per_magnitude
from magdash.variability.analysis_params import AnalysisParams
from magdash.variability.artifacts import (
    MIN_LOO_CARRIERS,
    CarrierInfluence,
    OutlierVector,
    carrier_influence,
    leave_one_carrier_out,
    outlier_vectors,
)
from magdash.variability.conventions import (
    ConsistencyChecks,
    consistency_checks,
)
from magdash.variability.fits import (
    NOISE_MODEL_COLUMNS,
    ScalingFit,
    fit_scaling,
    noise_model_rows,
    outlier_mask,
    scaling_mask,
)
from magdash.variability.geometry import LayerGeometry, ModelRdms, layer_geometry
from magdash.variability.html_summary import html_summary
from magdash.variability.hypotheses import (
    HYPOTHESES,
    AxisSpecificity,
    BoundarySensitivity,
    HypothesisResult,
    axis_specificity,
    boundary_sensitivity,
    evaluate_hypotheses,
)
from magdash.variability.measures import MEASURES, MIN_CARRIERS, OUTLIER_RULE_MEASURES, LayerVectors, measure_title
from magdash.variability.stimulus_bootstrap import StimulusDraws, draw_stimuli, layer_resamples
from magdash.variability.tokenization_fits import STRATA_COLUMNS, TOKENIZATION_COLUMNS, tokenization_frames

log = logging.getLogger(__name__)

ANALYSIS_VERSION = "11"
"""Bump whenever a change to the analysis code can change a result: old cache entries die.
8: the result holds its artifact checks (outlier vectors, leave-one-carrier-out alphas) and can
leave carriers out (``exclude_carriers``).
9: the result holds the tokenization fits (alpha within token-count strata, alpha adjusted for
tokenization) and the token facts they were computed from.
10: the stimulus bootstrap (:mod:`magdash.variability.stimulus_bootstrap`): the mean core alpha's
interval and p, E4's difference and ratio with theirs, a comparison's mean delta with its own; whether
H4's Spearman and the Wilcoxon tests can reach their level with the layers they have.
11: H4's asymptotic p is never below 2 / n!, the exact p of a perfect ordering; leaving one carrier
out runs at the core layers only (``carrier_alphas`` is NaN elsewhere)."""

FIT_COLUMNS = [f.name for f in dataclasses.fields(ScalingFit)]
_FITS_STORED = ["measure", "layer", "label", "core", *FIT_COLUMNS]
FITS_LEAD = ["measure", "layer", "alpha"]
FITS_TAIL = ["ci_low", "ci_high"]
"""``AnalysisResult.fits`` opens with :data:`FITS_LEAD` and closes with alpha's interval: pandas
keeps a wide frame's first and last columns when it elides the middle ones with '...', so
``print(result.fits)`` in an 80-column terminal shows alpha and its CI."""


def _stored_fits(fits: pd.DataFrame) -> dict[str, Any]:
    """The fits as the cache has always held them: its column order, not the display's (the payload does
    not change with the display)."""
    order = [*(name for name in _FITS_STORED if name in fits.columns),
             *(name for name in fits.columns if name not in _FITS_STORED)]
    return frame_to_plain(fits[order])


TOKEN_COLUMNS = ["magnitude", "n_tokens", "kept_id", "kept_text", "n_chars", "n_digits", "uniform"]
"""Per magnitude, :class:`magdash.tokenization.MagnitudeTokens` (``AnalysisResult.tokens``)."""
NOT_RECORDED = (
    "the token facts of these vectors are not recorded (extracted before magdash recorded them, or imported): "
    "run `magdash extract` for this model and stimulus set again to record them from its tokenizer (no vector "
    "is extracted again), or import the vectors with their model where its tokenizer is at hand"
)
"""The tokenization note of an analysis of vectors without token facts."""


def _frame(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(columns=list(columns))


def _with_label(columns: Sequence[str]) -> list[str]:
    """measure, layer, label, core, then the rest: the tokenization frames' columns."""
    return [*columns[:2], "label", "core", *columns[2:]]


@dataclass
class AnalysisResult(PayloadCodec):
    """Everything the analysis knows about one model on one stimulus set.

    ``values[measure]`` is V with shape (n_layers, n_magnitudes) for every requested measure
    plus "on_axis", "off_axis" and "cv". ``fits`` has one row per (measure, layer) with the
    :class:`~magdash.variability.fits.ScalingFit` fields (NaN where there is no fit) plus label and core.
    ``noise_models`` has one row per (measure, layer, noise model). ``geometry`` one row per
    layer (:class:`~magdash.variability.geometry.LayerGeometry` fields), ``cv_trend`` the Spearman
    correlation of CV(n) with n per layer, ``checks`` the paper's consistency checks.

    Attributes:
        model: the model's name.
        stimuli: the stimulus set's name.
        n_blocks: the model's number of blocks L.
        layer_labels: the label of every layer analysed (0 = embeddings).
        magnitudes: the magnitudes n, ascending.
        core_layers: the core band the hypotheses are tested over.
        params: every choice of the analysis.
        values: measure -> V, (n_layers, n_magnitudes), plus ``on_axis``, ``off_axis`` and ``cv``.
        fits: one row per (measure, layer): the scaling fit's alpha first (:data:`FITS_LEAD`), then the layer's
            label, whether it is core, intercept, R², p, SE, Theil-Sen slope, points and outliers, and alpha's CI last.
        hypotheses: measure -> H1-H4 over the core layers.
        e3: measure -> E3, alpha refitted without the boundary magnitudes.
        e4: E4: on-axis against off-axis alpha.
        noise_models: one row per (measure, layer, noise model) with its AICc.
        geometry: one row per layer: RSA against the log and linear models, PC1 against log n.
        cv_trend: the Spearman correlation of CV(n) with n, per layer.
        checks: the paper's consistency checks.
        nonfinite_layers: layer -> vectors holding Inf or NaN there; such a layer has no fit.
        massive_dims: layer -> the massive dimensions dropped there (``massive="drop"``).
        carriers: the stimulus set's carriers, left-out ones included.
        outlier_vectors: the vectors whose norm exceeds 10x their layer's median (:mod:`magdash.variability.artifacts`).
        carrier_alphas: measure -> alpha per layer without each carrier, (n_layers, n_carriers), NaN outside
            the core layers (only their mean is judged); empty below 3 carriers.
        tokens: per magnitude its token facts (``TOKEN_COLUMNS``: token count, kept token, characters, digits);
            empty without token facts.
        tokenization: per (measure, layer) the raw alpha and the alphas adjusted for the token count and for the
            token count and kept token (:mod:`magdash.variability.tokenization_fits`), with label and core.
        token_strata: per (measure, layer, token count) the stratum's fit.
        tokenization_note: why there are no tokenization fits ("" when there are).
        splits_digits: whether the model's tokenizer splits digits: "yes", "partly", "no"; "" not recorded.
        digit_splitting: how it splits them, in one line.
        from_cache: whether the result was read from the store's cache.
    """

    model: str
    stimuli: str
    n_blocks: int
    layer_labels: list[str]
    magnitudes: np.ndarray
    core_layers: list[int]
    params: AnalysisParams
    values: dict[str, np.ndarray]
    fits: pd.DataFrame = field(metadata=stored_as(encode=_stored_fits))
    hypotheses: dict[str, HypothesisResult]
    e3: dict[str, BoundarySensitivity]
    e4: AxisSpecificity
    noise_models: pd.DataFrame
    geometry: pd.DataFrame
    cv_trend: pd.DataFrame
    checks: ConsistencyChecks
    nonfinite_layers: dict[int, int] = field(default_factory=dict)
    massive_dims: dict[int, list[int]] = field(default_factory=dict)  # layer -> dims dropped (massive="drop")
    carriers: list[str] = field(default_factory=list)  # the stimulus set's carriers, excluded ones included
    # magdash.variability.artifacts: the vectors over 10x their layer's median norm, and each
    # measure's alpha per layer without each carrier (n_layers, n_carriers; empty below 3 carriers).
    outlier_vectors: list[OutlierVector] = field(default_factory=list)
    carrier_alphas: dict[str, np.ndarray] = field(default_factory=dict)
    # magdash.variability.tokenization_fits: per magnitude its token facts (TOKEN_COLUMNS), per
    # (measure, layer) the adjusted alphas beside the raw one, per (measure, layer, token count)
    # the stratum's fit; all empty, with the reason in tokenization_note, without token facts.
    tokens: pd.DataFrame = field(default_factory=lambda: _frame(TOKEN_COLUMNS))
    tokenization: pd.DataFrame = field(default_factory=lambda: _frame(_with_label(TOKENIZATION_COLUMNS)))
    token_strata: pd.DataFrame = field(default_factory=lambda: _frame(_with_label(STRATA_COLUMNS)))
    # Results cached by an analysis version before 9 (decoded only for their metric rows) have no token facts.
    tokenization_note: str = field(default="", metadata=stored_as(missing=lambda document: NOT_RECORDED))
    splits_digits: str = ""  # the model's tokenizer splits digits: "yes", "partly", "no", "" not recorded
    digit_splitting: str = ""  # how, in one line (magdash.tokenization.DigitSplitting.description)
    from_cache: bool = field(default=False, compare=False, metadata=not_stored(True))

    def __post_init__(self):  # the display's order (FITS_LEAD ... FITS_TAIL)
        lead, tail = ([name for name in names if name in self.fits.columns] for names in (FITS_LEAD, FITS_TAIL))
        self.fits = self.fits[[*lead, *(name for name in self.fits.columns if name not in lead + tail), *tail]]

    @property
    def n_layers(self) -> int:
        return len(self.layer_labels)

    def __repr__(self) -> str:
        return (f"AnalysisResult(model={self.model!r}, stimuli={self.stimuli!r}, layers={self.n_layers}, "
                f"core_layers={self.core_layers}, measures={self.params.measures})")

    def warnings(self) -> list[str]:
        """What the reader must know before trusting the numbers, most severe first, one line each
        named by the model: :meth:`caveats` as lines."""
        return lines(self.caveats())

    def caveats(self) -> list[Caveat]:
        """What the reader must know before trusting the numbers (:class:`magdash.caveats.Caveat`, with
        the severities of :mod:`magdash.caveats`): flagged Inf/NaN layers, the artifact checks
        (:meth:`artifact_caveats`) and the paper's consistency checks that tripped, in that order."""
        name = self.model or "the model"
        warning = nonfinite_warning(name, self.nonfinite_layers)
        found = [Caveat(Severity.CAUTION, warning.removeprefix(f"{name}: "), (), name)] if warning else []
        return found + self.artifact_caveats() + self.checks.caveats(name)

    def carrier_label(self, carrier: int) -> str:
        """How the warnings name a carrier: its index and sentence.

        Args:
            carrier: the carrier's index (0-based, in the stimulus set's order).
        """
        sentence = self.carriers[carrier] if carrier < len(self.carriers) else "?"
        return f"carrier {carrier} ({sentence!r})"

    def artifact_warnings(self) -> list[str]:
        """The artifact checks of :mod:`magdash.variability.artifacts`, one line each, most severe first
        (:meth:`artifact_caveats`' texts)."""
        return [caveat.text for caveat in ranked(self.artifact_caveats())]

    def artifact_caveats(self) -> list[Caveat]:
        """The artifact checks of :mod:`magdash.variability.artifacts` as caveats of this model: outlier
        vectors (serious, every measure), a carrier that drives a measure's result (caution), points the
        outlier rule dropped (a note), and a note when leaving one carrier out could not be judged."""
        name = self.model or "the model"
        found = []
        by_carrier: dict[int, list[OutlierVector]] = {}
        for item in self.outlier_vectors:
            by_carrier.setdefault(item.carrier, []).append(item)
        for carrier, items in sorted(by_carrier.items()):
            ratio = max(item.norm_ratio for item in items)
            found.append(Caveat(Severity.SERIOUS, f"{self.carrier_label(carrier)}: " + outsized_warning(
                [i.magnitude for i in items], [i.layer for i in items], ratio,
                "the result is read with them unless that carrier is left out"), (), name, carrier))
        unjudged = []
        for measure in self.params.measures:
            title = MEASURES[measure].title
            influences = self.carrier_influence(measure)
            if influences and not any(item.judged for item in influences):
                unjudged.append(measure)
            for influence in influences:
                if not influence.drives:
                    continue
                found.append(Caveat(Severity.CAUTION, (
                    f"{title}: leaving out {self.carrier_label(influence.carrier)} moves the mean core alpha from "
                    f"{influence.mean_all:.3g} to {influence.mean_without:.3g} ({influence.how()}): the result rests on "
                    "that carrier"), (measure,), name, influence.carrier))
            dropped = self.dropped_points(measure)
            if dropped:
                magnitudes = sorted({m for ms in dropped.values() for m in ms})
                found.append(Caveat(Severity.NOTE, (
                    f"{title}: the {self.params.outlier_factor:g}x-median outlier rule dropped "
                    f"magnitude(s) {ranges(magnitudes)} at core layer(s) {ranges(dropped)} "
                    f"(up to {max(len(ms) for ms in dropped.values())} of {self.magnitudes.size} points a layer)"),
                    (measure,), name))
        if unjudged:
            found.append(Caveat(Severity.NOTE, (
                f"{', '.join(MEASURES[m].title for m in unjudged)}: whether one carrier drives the result is not "
                "judged without the core layers' CIs (n_boot = 0 or bootstrap_layers = 'none')"),
                tuple(unjudged), name))
        return found

    def dropped_points(self, measure: str) -> dict[int, list[int]]:
        """Core layer -> the magnitudes the outlier rule left out of ``measure``'s fit there.

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
        """
        if measure not in OUTLIER_RULE_MEASURES or measure not in self.values:
            return {}
        dropped = {}
        for layer in self.core_layers:
            values = self.values[measure][layer]
            if not np.isfinite(values).all():
                continue
            kept = outlier_mask(values, self.params.outlier_factor)
            if not kept.all():
                dropped[layer] = [int(m) for m in self.magnitudes[~kept]]
        return dropped

    def core_half_width(self, measure: str) -> float:
        """The mean over the core layers of each layer's bootstrap CI half-width (NaN without CIs).

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
        """
        rows = self.fits[(self.fits["measure"] == measure) & self.fits["layer"].isin(self.core_layers)]
        widths = ((rows["ci_high"] - rows["ci_low"]) / 2).to_numpy(dtype=np.float64)
        return float(np.nanmean(widths)) if np.isfinite(widths).any() else math.nan

    def carrier_influence(self, measure: str, means_without: Sequence[float] | None = None) -> list[CarrierInfluence]:
        """Leave-one-carrier-out over the core layers, judged by the one rule of
        :func:`magdash.variability.artifacts.carrier_influence` against :meth:`core_half_width`; empty below
        3 carriers.

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
            means_without: the mean core alpha without each carrier, when computed elsewhere (the
                controls); None: from ``carrier_alphas``.
        """
        if means_without is None:
            alphas = self.carrier_alphas.get(measure)
            if alphas is None or alphas.size == 0:
                return []
            core = alphas[self.core_layers]
            means_without = [float(np.nanmean(core[:, c])) if np.isfinite(core[:, c]).any() else math.nan
                             for c in range(core.shape[1])]
        return carrier_influence(self.hypotheses[measure].mean_alpha, self.core_half_width(measure), means_without)

    def alphas(self, measure: str) -> np.ndarray:
        """OLS alpha per layer for ``measure`` (NaN where there is no fit).

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
        """
        return _alphas(self.fits, measure)

    @property
    def has_tokenization(self) -> bool:
        """Whether the tokenization fits were computed (the vectors' token facts were given)."""
        return not self.tokens.empty

    def tokenization_summary(self, measure: str) -> dict[str, Any]:
        """The tokenization fits of ``measure`` over the core layers: the mean raw alpha, the mean
        adjusted alpha (token count; token count and kept token) over the core layers where each has
        a fit, and per token-count stratum its magnitudes and mean core alpha. Without token facts,
        ``recorded`` is False and ``note`` says why.

        Args:
            measure: an analysed measure (``eucl``, ``residual``, ``proj``, ...).
        """
        summary: dict[str, Any] = {"recorded": self.has_tokenization, "note": self.tokenization_note}
        if not self.has_tokenization:
            return summary
        rows = self.tokenization[(self.tokenization["measure"] == measure) & self.tokenization["core"]]

        def mean_over(column: str) -> tuple[float, int]:
            found = rows[column].to_numpy(dtype=np.float64)
            fitted = np.isfinite(found)
            return (float(found[fitted].mean()) if fitted.any() else math.nan), int(fitted.sum())

        raw, n_raw = mean_over("alpha_raw")
        adjusted, n_adjusted = mean_over("alpha")
        identity, n_identity = mean_over("alpha_identity")
        strata = self.token_strata[(self.token_strata["measure"] == measure) & self.token_strata["core"]]
        levels = []
        for count, group in strata.groupby("n_tokens", sort=True):
            alphas = group["alpha"].to_numpy(dtype=np.float64)
            fitted = np.isfinite(alphas)
            reasons = [reason for reason in group["reason"] if reason]
            levels.append({
                "n_tokens": int(count), "n_magnitudes": int(group["n_magnitudes"].iloc[0]),
                "smallest": float(group["smallest"].iloc[0]), "largest": float(group["largest"].iloc[0]),
                "mean_alpha": float(alphas[fitted].mean()) if fitted.any() else math.nan,
                "n_fitted": int(fitted.sum()), "reason": reasons[0] if reasons and not fitted.any() else "",
            })
        first_reason = [reason for reason in rows["reason"] if reason]
        identity_reason = [reason for reason in rows["identity_reason"] if reason]
        return {
            **summary, "n_core": len(rows), "mean_alpha_raw": raw, "n_raw": n_raw,
            "mean_alpha_adjusted": adjusted, "n_adjusted": n_adjusted,
            "reason": first_reason[0] if first_reason and not n_adjusted else "",
            "mean_alpha_identity": identity, "n_identity": n_identity,
            "identity_reason": identity_reason[0] if identity_reason and not n_identity else "",
            "strata": levels,
        }

    def fit(self, measure: str, layer: int) -> ScalingFit:
        """The scaling fit of ``measure`` at ``layer`` (NaN fields where there is no fit).

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
            layer: the layer index (0 = embeddings).
        """
        rows = self.fits[(self.fits["measure"] == measure) & (self.fits["layer"] == layer)]
        if rows.empty:
            raise AnalysisError(f"no fit for measure {measure!r} at layer {layer}")
        row = rows.iloc[0]
        return ScalingFit(
            **{
                name: (int(row[name]) if name in ("n_points", "n_outliers") else float(row[name]))
                for name in FIT_COLUMNS
            }
        )

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``analyze --json`` shape (NaN stays NaN here; the CLI writes null).

        Per layer and measure every :class:`~magdash.variability.fits.ScalingFit` field; per measure the
        H1–H4 verdicts (``H1``..``H4``) with every statistic of
        :class:`~magdash.variability.hypotheses.HypothesisResult` (``mean_alpha_ci``, the stimulus
        bootstrap's interval of the mean core alpha, a two-element list), ``h4_note`` (why H4's test cannot
        reach .05 with its layers; "" when it can), E3, and the noise-model rows of each layer; E4 (with
        ``wilcoxon_note`` likewise), the consistency checks, the warnings and the parameters once.
        """
        layers = []
        for layer, label in enumerate(self.layer_labels):
            entry: dict[str, Any] = {"layer": layer, "label": label}
            for measure in self.params.measures:
                entry[measure] = dataclasses.asdict(self.fit(measure, layer))
            layers.append(entry)
        hypotheses = {}
        for measure in self.params.measures:
            result = self.hypotheses[measure]
            statistics = {k: v for k, v in dataclasses.asdict(result).items() if k.upper() not in HYPOTHESES}
            hypotheses[measure] = {**result.verdicts(), **statistics,
                                   "h4_note": unreachable_note("spearman", len(result.h4_layers), unit="layers")}
        noise = {
            measure: rows.drop(columns="measure").to_dict(orient="records")
            for measure, rows in self.noise_models.groupby("measure", sort=False)
        }
        return {
            "model": self.model,
            "stimuli": self.stimuli,
            "conventions": self.params.conventions,
            "n_blocks": self.n_blocks,
            "core_layers": list(self.core_layers),
            "layers": layers,
            "hypotheses": hypotheses,
            "e3": {measure: dataclasses.asdict(item) for measure, item in self.e3.items()},
            "e4": {**dataclasses.asdict(self.e4),
                   "wilcoxon_note": unreachable_note("wilcoxon", self.e4.n_pairs, unit="layer pairs")},
            "noise_models": noise,
            "checks": dataclasses.asdict(self.checks),
            "warnings": self.warnings(),
            "nonfinite_layers": dict(self.nonfinite_layers),
            "massive_dims": dict(self.massive_dims),
            "carriers": list(self.carriers),
            "outlier_vectors": [dataclasses.asdict(item) for item in self.outlier_vectors],
            "carrier_influence": {measure: [dataclasses.asdict(item) for item in self.carrier_influence(measure)]
                                  for measure in self.params.measures},
            "dropped_points": {measure: self.dropped_points(measure) for measure in self.params.measures},
            "tokenization": self._tokenization_json(),
            "params": dataclasses.asdict(self.params),
        }

    def hypothesis_table(self) -> pd.DataFrame:
        """H1–H4 over the core layers, one row per measure: the mean core alpha with its stimulus-bootstrap
        interval and p (the estimate that leads), the verdicts, the paper's tests over the core layers, and a
        note when H4's test cannot reach .05 with its layers
        (:class:`~magdash.variability.hypotheses.HypothesisResult` has every statistic)."""
        rows = []
        for measure in self.params.measures:
            h = self.hypotheses[measure]
            rows.append({"measure": measure_title(measure), "mean_alpha": h.mean_alpha,
                         "mean_alpha_ci_low": h.mean_alpha_ci[0], "mean_alpha_ci_high": h.mean_alpha_ci[1],
                         "mean_alpha_p": h.mean_alpha_p, **h.verdicts(), "h1_p": h.h1_p, "h2_p": h.h2_p,
                         "h4_rho": h.h4_rho, "h4_p": h.h4_p,
                         "note": unreachable_note("spearman", len(h.h4_layers), unit="layers")})
        return pd.DataFrame(rows, columns=["measure", "mean_alpha", "mean_alpha_ci_low", "mean_alpha_ci_high",
                                           "mean_alpha_p", *HYPOTHESES, "h1_p", "h2_p", "h4_rho", "h4_p", "note"])

    def _repr_html_(self) -> str:
        """The notebook's view: model, stimuli, core band, the verdicts, the core fits of the first measure."""
        first = self.params.measures[0]
        fits = self.fits[(self.fits["measure"] == first) & self.fits["core"]]
        facts = [
            ("stimuli", f"{self.stimuli or 'arrays'}: {self.magnitudes.size} magnitudes "
                        f"({format_number(self.magnitudes.min(), 'g')}..{format_number(self.magnitudes.max(), 'g')}) "
                        f"x {len(self.carriers)} carriers"),
            ("layers", f"{self.n_layers} ({self.n_blocks} blocks)"),
            ("core band", layer_span(self.core_layers)),
            ("measures", ", ".join(measure_title(m) for m in self.params.measures)),
            ("conventions", self.params.conventions),
        ]
        tables = [
            ("Hypotheses over the core layers", self.hypothesis_table()),
            (f"Fits of {measure_title(first)} at the core layers",
             fits[["layer", "label", "alpha", "ci_low", "ci_high", "r2", "p", "n_points"]]),
        ]
        notes = self.warnings() + ["tables: .fits, .hypothesis_table(), .noise_models, .geometry, .cv_trend; "
                                   "charts: magdash.charts"]
        return html_summary(f"Scalar variability of {self.model or 'the model'}", facts, tables, notes)
    def _tokenization_json(self) -> dict[str, Any]:
        """The ``tokenization`` block of :meth:`to_json`: whether the token facts were recorded (and
        if not, why), the tokenizer's digit splitting, each magnitude's facts, and per measure the
        summary over the core layers, each layer's raw and adjusted alphas and each stratum's fit."""
        measures = self.params.measures
        return {
            "recorded": self.has_tokenization,
            "note": self.tokenization_note,
            "splits_digits": self.splits_digits,
            "digit_splitting": self.digit_splitting,
            "magnitudes": self.tokens.to_dict(orient="records"),
            "summary": {measure: self.tokenization_summary(measure) for measure in measures},
            "layers": {measure: self.tokenization[self.tokenization["measure"] == measure]
                       .drop(columns="measure").to_dict(orient="records") for measure in measures},
            "strata": {measure: self.token_strata[self.token_strata["measure"] == measure]
                       .drop(columns="measure").to_dict(orient="records") for measure in measures},
        }


# -- per-layer measurement ---------------------------------------------------------------


@dataclass(frozen=True)
class LayerMeasurement:
    """What one layer contributes: V per measure (incl. on_axis, off_axis, cv) and geometry."""

    values: dict[str, np.ndarray]
    geometry: LayerGeometry

    @classmethod
    def left_out(cls, measures: Sequence[str], n_magnitudes: int) -> LayerMeasurement:
        """A layer kept out of every fit: NaN everywhere, which every fit reads as no fit."""
        names = dict.fromkeys([*measures, "on_axis", "off_axis", "cv"])
        geometry = LayerGeometry(*[math.nan] * len(dataclasses.fields(LayerGeometry)))
        return cls({name: np.full(n_magnitudes, math.nan) for name in names}, geometry)


def measure_layer(
    layer: LayerVectors,
    magnitudes: np.ndarray,
    measures: Sequence[str],
    models: ModelRdms | None = None,
) -> LayerMeasurement:
    """Compute ``measures`` plus the E4 variances, CV and geometry for one layer's vectors.

    All measures come from one pass over the layer (:class:`~magdash.variability.measures.LayerVectors`);
    the magnitude axis is computed once and shared by V_proj, E4, the PC1 geometry and the layer's
    carrier moments (the stimulus bootstrap's).
    ``models`` may pass the magnitudes' precomputed :class:`~magdash.variability.geometry.ModelRdms`.
    """
    values = layer.compute(list(dict.fromkeys([*measures, "on_axis", "off_axis", "cv"])))
    return LayerMeasurement(values, layer_geometry(layer.centroids, magnitudes, layer.axis, models))


E4_MEASURES = ("on_axis", "off_axis")
"""The variances E4 fits (no outlier rule), resampled with the analysed measures."""


def _without_massive(vectors: np.ndarray, params: AnalysisParams) -> tuple[np.ndarray, list[int]]:
    """The vectors without their massive dimensions when ``params.massive`` is "drop" (and which)."""
    if params.massive != "drop":
        return vectors, []
    flat = vectors.reshape(-1, vectors.shape[-1])
    dropped = find_massive(DimensionStats.of(flat).abs_mean, params.massive_ratio)
    return np.delete(vectors, dropped, axis=-1), dropped.tolist()


def resamples_wanted(params: AnalysisParams) -> bool:
    """Whether ``params`` ask for the stimulus bootstrap: resamples, and bootstrap layers other than "none".

    Args:
        params: the analysis parameters.
    """
    return params.n_boot > 0 and params.bootstrap_layers != "none"


def stimulus_resamples(
    layers: Iterable[tuple[int, np.ndarray]],
    magnitudes: np.ndarray,
    params: AnalysisParams,
    *,
    outlier_rule: frozenset[str] = OUTLIER_RULE_MEASURES,
) -> dict[str, dict[int, np.ndarray]]:
    """Each of ``params.measures``' alpha in every stimulus resample, per layer, with the draws and
    rules :func:`run_analysis` uses for its core band: measure -> layer -> (B,)
    (:mod:`magdash.variability.stimulus_bootstrap`).

    The vectors are prepared as the analysis prepares them (``params.exclude_carriers`` left out, a
    layer with Inf/NaN vectors skipped, the massive dimensions dropped when asked), and the draws
    are those of the analysis (``params.n_boot``, ``params.seed``), so two models resampled with the
    same parameters on the same stimuli share every draw: the pairing of a comparison.

    Args:
        layers: (layer index, vectors (n_magnitudes, n_carriers, d)) for each layer wanted.
        magnitudes: the magnitudes.
        params: the analysis parameters (measures, resamples, seed, carriers left out, massive dimensions).
        outlier_rule: the measures whose fits apply the 3x-median outlier rule.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    found: dict[str, dict[int, np.ndarray]] = {m: {} for m in params.measures}
    draws: StimulusDraws | None = None
    for index, vectors in layers:
        kept = _kept_carriers(vectors.shape[1], params.exclude_carriers)
        vectors = vectors[:, kept] if len(kept) != vectors.shape[1] else vectors
        if count_nonfinite(vectors):
            continue
        vectors, _ = _without_massive(vectors, params)
        draws = draws or draw_stimuli(magnitudes.size, len(kept), params.n_boot, params.seed)
        alphas = layer_resamples(magnitudes, LayerVectors(vectors).moments(), list(found), draws,
                                 outlier_rule=outlier_rule, rules=params.fit_rules())
        for measure, values in alphas.items():
            found[measure][int(index)] = values
    return found


def core_resamples(resamples: dict[int, np.ndarray], layers: Sequence[int], n_boot: int) -> np.ndarray | None:
    """(B, K) resampled alphas of ``layers`` in their order; a layer without resamples (Inf/NaN vectors)
    is NaN throughout. None when nothing was resampled.

    Args:
        resamples: layer -> (B,) alphas (:func:`stimulus_resamples`).
        layers: the layers wanted, in order.
        n_boot: B.
    """
    if not resamples:
        return None
    return np.stack([resamples.get(layer, np.full(n_boot, math.nan)) for layer in layers], axis=1)


def run_analysis(
    layers: Iterable[tuple[str, np.ndarray]],
    magnitudes: np.ndarray,
    *,
    n_blocks: int,
    params: AnalysisParams,
    model: str = "",
    stimuli: str = "",
    n_layers: int | None = None,
    progress: ProgressCallback | None = None,
    carriers: Sequence[str] | None = None,
    number_tokens: Sequence[NumberTokens] | None = None,
    digit_splitting: DigitSplitting | None = None,
    tokenization_note: str = NOT_RECORDED,
) -> AnalysisResult:
    """The whole analysis from an iterable of (label, vectors) per layer, in layer order.

    ``number_tokens`` are the token facts of the vectors' items (any order; carriers left out by
    ``params.exclude_carriers`` are not counted), from which each magnitude's token count and kept
    token are agreed (:func:`magdash.tokenization.per_magnitude`) for the tokenization fits;
    without them there are none, and ``tokenization_note`` says why. ``digit_splitting`` is the
    model's, reported with them.

    ``carriers`` names the vectors' carriers (axis 1) for the warnings; the carriers of
    ``params.exclude_carriers`` are removed from every layer first. Each layer is checked for
    artifacts as it is read (:mod:`magdash.variability.artifacts`): vectors of outsized norm, and
    alpha without each carrier.

    ``vectors`` has shape (n_magnitudes, n_carriers, d); each layer is dropped once measured,
    so a generator that reads one layer at a time keeps memory at one layer. A layer holding an
    Inf or NaN vector (float16 overflow) is left out of every fit and listed in
    ``nonfinite_layers`` (see :mod:`magdash.overflow`). With ``params.massive == "drop"`` each
    layer's massive dimensions, found over all its vectors, are removed first and listed in
    ``massive_dims``.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    if n_layers is not None:
        params.core_for(n_blocks, n_layers)  # a bad core band fails before any layer is read
    models = ModelRdms.for_magnitudes(magnitudes)
    labels: list[str] = []
    measured: list[LayerMeasurement] = []
    nonfinite: dict[int, int] = {}
    massive: dict[int, list[int]] = {}
    flagged: list[OutlierVector] = []
    loo: dict[str, list[np.ndarray]] = {measure: [] for measure in params.measures}
    resampled_measures = list(dict.fromkeys([*params.measures, *E4_MEASURES]))
    resampled: dict[str, dict[int, np.ndarray]] = {measure: {} for measure in resampled_measures}
    # Leaving a carrier out is judged on the mean core alpha only, so only the core layers pay for it.
    loo_band = set(params.core_band(n_blocks))
    core_band = loo_band if resamples_wanted(params) else set()
    draws: StimulusDraws | None = None
    kept_carriers, total_carriers = None, 0
    # Counted by hand: enumerate() would keep the previous layer alive while the next is read.
    index = -1
    for label, vectors in layers:
        index += 1
        if vectors.shape[0] != magnitudes.size:
            raise AnalysisError(
                f"layer {index} has {vectors.shape[0]} magnitudes, expected {magnitudes.size}"
            )
        if kept_carriers is None:
            total_carriers = vectors.shape[1]
            kept_carriers = _kept_carriers(total_carriers, params.exclude_carriers)
        if len(kept_carriers) != vectors.shape[1]:
            vectors = vectors[:, kept_carriers]
        bad = count_nonfinite(vectors)
        with_loo = vectors.shape[1] >= MIN_LOO_CARRIERS
        if bad or index not in loo_band:
            for measure in params.measures:
                loo[measure].append(np.full(vectors.shape[1] if with_loo else 0, math.nan))
        if bad:
            nonfinite[index] = bad
            measured.append(LayerMeasurement.left_out(params.measures, magnitudes.size))
        else:
            flagged += outlier_vectors(index, vectors, magnitudes)
            if index in loo_band:
                alphas = leave_one_carrier_out(vectors, magnitudes, params.measures, rules=params.fit_rules()) \
                    if with_loo else np.zeros((len(params.measures), 0))
                for row, measure in enumerate(params.measures):
                    loo[measure].append(alphas[row])
            if params.massive == "drop":
                vectors, massive[index] = _without_massive(vectors, params)
            layer = LayerVectors(vectors)
            measured.append(measure_layer(layer, magnitudes, params.measures, models))
            if index in core_band:
                draws = draws or draw_stimuli(magnitudes.size, vectors.shape[1], params.n_boot, params.seed)
                alphas = layer_resamples(magnitudes, layer.moments(), resampled_measures, draws,
                                         outlier_rule=OUTLIER_RULE_MEASURES, rules=params.fit_rules())
                for measure, values in alphas.items():
                    resampled[measure][index] = values
            del layer
        labels.append(label)
        del vectors
        if progress is not None:
            progress(index + 1, n_layers or 0)
    if not measured:
        raise AnalysisError("there are no layers to analyse")
    core = params.core_for(n_blocks, len(labels))
    values = {
        name: np.stack([layer.values[name] for layer in measured])
        for name in measured[0].values
    }
    geometry = pd.DataFrame([dataclasses.asdict(layer.geometry) for layer in measured])
    geometry.insert(0, "layer", np.arange(len(labels)))
    geometry.insert(1, "label", labels)
    if carriers and len(carriers) != total_carriers:
        raise AnalysisError(f"{len(carriers)} carrier sentences named for vectors of {total_carriers} carriers")
    names = list(carriers) if carriers else [f"carrier {c}" for c in range(total_carriers)]
    fitted = _fit_everything(
        n_blocks=n_blocks,
        labels=labels,
        magnitudes=magnitudes,
        core=core,
        params=params,
        values=values,
        resampled={measure: core_resamples(layers_found, core, params.n_boot)
                   for measure, layers_found in resampled.items()},
    )
    if number_tokens is None:
        tokenization: dict[str, Any] = {"tokenization_note": tokenization_note}
    else:
        tokenization = _fit_tokenization([fact for fact in number_tokens if fact.carrier_index in kept_carriers],
                                         magnitudes, values, fitted["fits"], labels, core, params)
    return AnalysisResult(
        model=model,
        stimuli=stimuli,
        n_blocks=n_blocks,
        layer_labels=labels,
        magnitudes=magnitudes,
        core_layers=core,
        params=params,
        values=values,
        geometry=geometry,
        **fitted,
        nonfinite_layers=nonfinite,
        massive_dims=massive,
        # Flags and warnings name carriers by their place in the stimulus set, excluded ones counted.
        carriers=names,
        outlier_vectors=[dataclasses.replace(item, carrier=kept_carriers[item.carrier]) for item in flagged],
        carrier_alphas={measure: _in_set_order(np.stack(rows), kept_carriers, len(names))
                        for measure, rows in loo.items()},
        **tokenization,
        **({"splits_digits": digit_splitting.splits_digits, "digit_splitting": digit_splitting.description}
           if digit_splitting is not None else {}),
    )


def _fit_tokenization(
    facts: Sequence[NumberTokens],
    magnitudes: np.ndarray,
    values: dict[str, np.ndarray],
    fits: pd.DataFrame,
    labels: list[str],
    core_layers: list[int],
    params: AnalysisParams,
) -> dict[str, Any]:
    """The result's tokenization fields from its items' token facts: each magnitude's facts, the
    tokenization fits per layer and per stratum, and no note."""
    tokens = per_magnitude(facts)
    found = np.array([row.magnitude for row in tokens], dtype=np.float64)
    if not np.array_equal(found, magnitudes):
        raise AnalysisError(
            f"token facts of {found.size} magnitudes for an analysis of {magnitudes.size}: give the facts of "
            "the analysed stimulus set's items"
        )
    raw = {measure: _alphas(fits, measure) for measure in params.measures}
    layers, strata = tokenization_frames(
        magnitudes, {measure: values[measure] for measure in params.measures}, raw,
        [row.n_tokens for row in tokens], [row.kept_id for row in tokens],
        drop_outliers={measure: measure in OUTLIER_RULE_MEASURES for measure in params.measures},
        bootstrap_layers=_bootstrap_layers(params, core_layers, len(labels)),
        rules=params.fit_rules(),
    )
    core = set(core_layers)
    for frame in (layers, strata):
        frame.insert(2, "label", [labels[layer] for layer in frame["layer"]])
        frame.insert(3, "core", [layer in core for layer in frame["layer"]])
    return {"tokens": pd.DataFrame([dataclasses.asdict(row) for row in tokens], columns=TOKEN_COLUMNS),
            "tokenization": layers, "token_strata": strata, "tokenization_note": ""}


def _alphas(fits: pd.DataFrame, measure: str) -> np.ndarray:
    """OLS alpha per layer for ``measure`` from the fits (NaN where there is no fit)."""
    rows = fits[fits["measure"] == measure].sort_values("layer")
    if rows.empty:
        raise AnalysisError(f"measure {measure!r} was not analysed; add it to measures")
    return rows["alpha"].to_numpy(dtype=np.float64)


def _kept_carriers(n_carriers: int, excluded: Sequence[int]) -> list[int]:
    outside = [c for c in excluded if c >= n_carriers]
    if outside:
        raise AnalysisError(f"exclude_carriers=({outside[0]},): the stimulus set has carriers 0 to {n_carriers - 1}",
                            parameters=("exclude_carriers",))
    kept = [c for c in range(n_carriers) if c not in excluded]
    if len(kept) < MIN_CARRIERS:
        raise AnalysisError(f"leaving out carriers {list(excluded)} leaves {len(kept)}; V needs at least {MIN_CARRIERS}")
    return kept


def _in_set_order(alphas: np.ndarray, kept: list[int], n_carriers: int) -> np.ndarray:
    """(n_layers, kept carriers) -> (n_layers, n_carriers), NaN for excluded carriers."""
    if alphas.shape[1] == 0:
        return alphas
    full = np.full((alphas.shape[0], n_carriers), math.nan)
    full[:, kept] = alphas
    return full


def _bootstrap_layers(params: AnalysisParams, core: Sequence[int], n_layers: int) -> set[int]:
    if params.bootstrap_layers == "all":
        return set(range(n_layers))
    if params.bootstrap_layers == "core":
        return set(core)
    return set()


def _fit_everything(
    *,
    n_blocks: int,
    labels: list[str],
    magnitudes: np.ndarray,
    core: list[int],
    params: AnalysisParams,
    values: dict[str, np.ndarray],
    resampled: dict[str, np.ndarray | None],
) -> dict[str, Any]:
    """The result's fitted fields: the scaling fits and noise models per (measure, layer), H1-H4 and E3 per
    measure, E4, the CV trend and the consistency checks."""
    n_layers = len(labels)
    rules = params.rules
    with_ci = _bootstrap_layers(params, core, n_layers)
    core_set = set(core)
    fit_rows = []
    noise_rows = []
    hypotheses = {}
    e3 = {}
    for measure in params.measures:
        drop = measure in OUTLIER_RULE_MEASURES
        fit_rules = params.fit_rules(drop_outliers=drop)
        for layer in range(n_layers):
            v = values[measure][layer]
            fit = fit_scaling(magnitudes, v, rules=fit_rules if layer in with_ci else fit_rules.without_interval())
            fit_rows.append(
                {
                    "measure": measure,
                    "layer": layer,
                    "label": labels[layer],
                    "core": layer in core_set,
                    **dataclasses.asdict(fit),
                }
            )
            mask, _ = scaling_mask(magnitudes, v, rules=fit_rules.with_outlier_rule(drop and rules.noise_outlier_rule))
            for row in noise_model_rows(magnitudes, v, mask=mask, scoring=rules.noise_scoring):
                noise_rows.append({"measure": measure, "layer": layer, **row})
        alphas = np.array([row["alpha"] for row in fit_rows if row["measure"] == measure])
        hypotheses[measure] = evaluate_hypotheses(
            alphas,
            core,
            window=params.window,
            h4_all_layers=rules.h4_all_layers,
            h4_exact_p=rules.h4_exact_p,
            resampled=resampled.get(measure),
            ci=params.ci,
        )
        e3[measure] = boundary_sensitivity(
            magnitudes,
            values[measure],
            core,
            drop_outliers=drop,
            boundary=params.boundary,
            refit_drop_outliers=drop and rules.e3_outlier_rule,
        )
    e4 = axis_specificity(magnitudes, values["on_axis"], values["off_axis"], core,
                          resampled_on=resampled.get("on_axis"), resampled_off=resampled.get("off_axis"), ci=params.ci)
    fits = pd.DataFrame(fit_rows)
    eucl = fits[fits["measure"] == "eucl"].sort_values("layer")
    checks = consistency_checks(
        {m: fits.loc[fits["measure"] == m].sort_values("layer")["alpha"].to_numpy() for m in params.measures},
        eucl["alpha_theil_sen"].to_numpy() if len(eucl) else None,
        core,
        rules,
    )
    return {
        "fits": fits,
        "hypotheses": hypotheses,
        "e3": e3,
        "e4": e4,
        "noise_models": pd.DataFrame(noise_rows, columns=["measure", "layer", *NOISE_MODEL_COLUMNS]),
        "cv_trend": _cv_trend(magnitudes, values["cv"]),
        "checks": checks,
    }


def _cv_trend(magnitudes: np.ndarray, cv_values: np.ndarray) -> pd.DataFrame:
    """Spearman correlation of CV(n) with n per layer (a constant CV is Weber's law)."""
    from scipy import stats

    rows = []
    for layer, cv_layer in enumerate(cv_values):
        finite = np.isfinite(cv_layer)
        rho = p_value = math.nan
        if np.count_nonzero(finite) >= 3 and np.ptp(cv_layer[finite]) > 0:
            result = stats.spearmanr(magnitudes[finite], cv_layer[finite])
            rho, p_value = float(result.statistic), float(result.pvalue)
        rows.append({"layer": layer, "spearman": rho, "p": p_value})
    return pd.DataFrame(rows)
