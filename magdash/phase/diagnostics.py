"""Depth-wise "phase transition" diagnostics of hidden states (Alpay & Kilictas, arXiv 2601.19942).

Per layer l of a model with L blocks, at depth fraction gamma = l / L, over a set of vectors
(the number-token vectors of a stimulus set, or every token of a prompt set):

- the Omega distribution (:mod:`magdash.phase.omega`): mean m(gamma), SD, quantiles,
  histogram, Hartigan's dip test;
- the covariance spectrum of the centred vectors against the Marchenko-Pastur law
  (:mod:`magdash.phase.spectrum`): sigma^2, bulk edge, Tracy-Widom margin, spikes, largest
  gap, effective rank, participation ratio;
- gamma_c, the depth of the largest change of m(gamma) (:func:`largest_change`), with a
  bootstrap interval, and the same for the spike count and the effective rank;
- the three largest steps of m(gamma) (:class:`Jump`), each with a bootstrap interval of its
  size and the share of resamples in which it is the largest, so a gamma_c that is one step
  among equals, or the embeddings-to-block-1 step, shows as such, and each layer's m(gamma)
  with its interval;
- the massive-activation dimensions of the layer (:mod:`magdash.phase.massive_dims`) and their
  share of ||h||^2; ``PhaseParams.massive`` chooses whether everything above is computed on
  the raw vectors, without those dimensions, or per-dimension standardised.

The bootstrap resamples the independent units the vectors come from, each with all of its
vectors (:mod:`magdash.phase.unit_bootstrap`): the texts in all-token mode, magnitudes and
carriers in number-token mode; the tokens of one text are not independent draws, and resampling
them as if they were gave intervals far too narrow.

Layers past L (the post-norm extra layer) get gamma = NaN: they are reported but take no part
in gamma_c, which is about the residual stream. ``PhaseParams.skip_embedding_step`` also
leaves the embeddings (gamma = 0) out of every transition and jump. It is off by default:
the paper's m(gamma) runs from gamma = 0, and its gamma_c is comparable only so; the jumps
make a gamma_c that is just the first step visible instead of hiding it. The vectors are reduced to
:class:`~magdash.phase.accumulate.LayerSample` (eigenvalues, Omega values, counts), which is
what gets cached; everything here is recomputed from it in milliseconds. Runs over stored
vectors or a model's forward passes live in :mod:`magdash.runs.depth_runs`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import format_number
from magdash.params import DEFAULT_CI, DEFAULT_N_BOOT
from magdash.phase.accumulate import LayerSample
from magdash.phase.massive_dims import MASSIVE_LABELS, find_massive, massive_share
from magdash.phase.omega import (
    OMEGA_QUANTILES,
    OmegaSummary,
    isotropic_omega_mean,
    isotropic_omega_std,
    summarize_omega,
)
from magdash.phase.phase_params import PhaseParams
from magdash.phase.spectrum import (
    SpectrumFit,
    fit_spectrum,
    isotropic_spectrum_baseline,
)
from magdash.phase.unit_bootstrap import VECTOR_UNIT, ResampledUnits, default_units, unit_bootstrap_means
from magdash.variability.fits import percentile_interval
from magdash.variability.html_summary import html_summary


@dataclass(frozen=True)
class LayerDiagnostics:
    """One layer's diagnostics; ``dim`` is that of the view (d - |massive| when dropped).

    ``massive`` lists the layer's massive-activation dimensions in the raw vectors (largest
    first) and ``massive_share`` their share of E||h||^2, whatever the view. ``omega_mean_low``
    and ``omega_mean_high`` are the bootstrap interval of mean Omega over the units (NaN
    without a bootstrap).
    """

    layer: int
    gamma: float
    dim: int
    count: int
    omega: OmegaSummary
    spectrum: SpectrumFit
    massive: tuple[int, ...] = ()
    massive_share: float = math.nan
    omega_mean_low: float = math.nan
    omega_mean_high: float = math.nan


@dataclass(frozen=True)
class Transition:
    """Depth of the largest change of a per-layer curve, with its percentile interval.

    ``gamma_c`` is the depth fraction of the layer *after* the largest absolute change between
    consecutive layers, i.e. the first depth at which the new value is reached; ``change`` is
    that signed change. ``low``/``high`` are NaN when no bootstrap was run; ``units`` says what
    it resampled and how many of each (empty without a bootstrap).
    """

    gamma_c: float
    change: float
    low: float = math.nan
    high: float = math.nan
    n_boot: int = 0
    units: ResampledUnits = ResampledUnits()


@dataclass(frozen=True)
class Jump:
    """One step of m(gamma) between consecutive depths, ranked by its size.

    ``gamma`` is the depth after the step, ``change`` its signed size, ``low``/``high`` the
    percentile bootstrap interval of the size and ``p_largest`` the share of resamples in which
    this step is the largest one (NaN without a bootstrap).
    """

    gamma: float
    change: float
    low: float = math.nan
    high: float = math.nan
    p_largest: float = math.nan


TOP_JUMPS = 3


@dataclass(frozen=True)
class PhaseResult:
    """Diagnostics of every layer of one model, and the three transition depths.

    Attributes:
        model: the model's name or spec.
        n_blocks: its number of blocks L (gamma = l / L).
        samples: one accumulated sample per layer (Omega values, covariance spectrum).
        layers: the diagnostics of every layer (Omega, spectrum fit, effective rank, massive dimensions).
        order: the transition of m(gamma) = mean Omega, with its bootstrap interval over the units.
        spikes: the transition of the spike count (point estimate).
        rank: the transition of the effective rank (point estimate).
        nonfinite_layers: layer -> vectors holding Inf or NaN there; they are left out.
        jumps: the three largest steps of m(gamma), largest first.
        params: the depth parameters.
    """

    model: str
    n_blocks: int
    samples: tuple[LayerSample, ...]
    layers: tuple[LayerDiagnostics, ...]
    order: Transition  # m(gamma) = mean Omega, bootstrap interval over the units
    spikes: Transition  # spike count, point estimate
    rank: Transition  # effective rank, point estimate
    nonfinite_layers: dict[int, int] = field(default_factory=dict)  # layer -> Inf/NaN vectors; left out
    jumps: tuple[Jump, ...] = ()  # the TOP_JUMPS largest steps of m(gamma), largest first
    params: PhaseParams = field(default_factory=PhaseParams)

    @property
    def gamma_c(self) -> float:
        return self.order.gamma_c

    def __repr__(self) -> str:
        return (f"PhaseResult(model={self.model!r}, layers={len(self.layers)}, n_blocks={self.n_blocks}, "
                f"gamma_c={self.gamma_c:.3g}, massive={self.params.massive!r})")

    @property
    def first_position_left_out(self) -> int:
        """All-token mode: tokens left out for standing at a sequence's first position (the
        attention sink); 0 in number-token mode, where no number is there."""
        return max((sample.first_position for sample in self.samples), default=0)

    def sample(self, layer: int) -> LayerSample:
        """The accumulated sample of one layer.

        Args:
            layer: the layer index (0 = embeddings).
        """
        for sample in self.samples:
            if sample.layer == layer:
                return sample
        raise AnalysisError(f"no layer {layer}: layers are {[s.layer for s in self.samples]}")

    def diagnostics(self, layer: int) -> LayerDiagnostics:
        """The diagnostics of one layer.

        Args:
            layer: the layer index (0 = embeddings).
        """
        for item in self.layers:
            if item.layer == layer:
                return item
        raise AnalysisError(f"no layer {layer}: layers are {[d.layer for d in self.layers]}")

    @property
    def table(self) -> pd.DataFrame:
        """One row per layer, every scalar diagnostic with the isotropic expectations (:func:`layer_frame`)."""
        return layer_frame(self)

    def _repr_html_(self) -> str:
        """The notebook's view: the three transition depths and the main diagnostics per layer."""
        order = self.order
        interval = (f" (interval {format_number(order.low, '.3f')}..{format_number(order.high, '.3f')} "
                    f"over {order.units.describe()})" if math.isfinite(order.low) else "")
        facts = [
            ("layers", f"{len(self.layers)} ({self.n_blocks} blocks)"),
            ("vectors", MASSIVE_LABELS.get(self.params.massive, self.params.massive)),
            ("gamma_c of the order parameter m(gamma)", format_number(order.gamma_c, ".3f") + interval),
            ("gamma of the largest change of the spike count", format_number(self.spikes.gamma_c, ".3f")),
            ("gamma of the largest change of the effective rank", format_number(self.rank.gamma_c, ".3f")),
        ]
        columns = ["layer", "gamma", "n_vectors", "omega_mean", "n_spikes", "effective_rank", "participation_ratio"]
        notes = [f"layers {', '.join(map(str, sorted(self.nonfinite_layers)))} hold Inf/NaN vectors and are left out"
                 ] if self.nonfinite_layers else []
        notes.append("every diagnostic: .table; charts: magdash.charts.order, .omega, .spectrum, .rank")
        return html_summary(f"Depth diagnostics of {self.model or 'the model'}", facts,
                            [("By layer", self.table[columns])], notes)


def depth_fraction(layer: int, n_blocks: int) -> float:
    """gamma = l / L for the residual stream (0 = embeddings, 1 = last block), NaN past it."""
    if n_blocks < 1:
        raise AnalysisError(f"a model needs at least one block, got {n_blocks}")
    return layer / n_blocks if 0 <= layer <= n_blocks else math.nan


def largest_change(gammas: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    """(gamma_c, signed change) of the largest |change| between consecutive depths.

    Layers with a NaN depth or value are left out; ties go to the shallowest. NaN when fewer
    than two layers remain.
    """
    gamma = np.asarray(gammas, dtype=np.float64)
    value = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(gamma) & np.isfinite(value)
    order = np.argsort(gamma[keep], kind="stable")
    gamma, value = gamma[keep][order], value[keep][order]
    if gamma.size < 2:
        return math.nan, math.nan
    steps = np.diff(value)
    index = int(np.argmax(np.abs(steps)))
    return float(gamma[index + 1]), float(steps[index])


@dataclass(frozen=True)
class OrderBootstrap:
    """What the bootstrap of m(gamma) gives: gamma_c, the largest steps and each layer's interval.

    Attributes:
        transition: gamma_c with its percentile interval and the units resampled.
        jumps: the largest steps of m(gamma), largest first, each with its interval.
        intervals: per layer (in the order given), the percentile interval of m; NaN without a bootstrap.
    """

    transition: Transition
    jumps: tuple[Jump, ...]
    intervals: tuple[tuple[float, float], ...]


def bootstrap_order(
    omegas: Sequence[np.ndarray],
    gammas: Sequence[float],
    *,
    units: Sequence[np.ndarray] | None = None,
    unit_names: tuple[str, ...] = (VECTOR_UNIT,),
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    confidence: float = DEFAULT_CI,
    top: int = TOP_JUMPS,
) -> OrderBootstrap:
    """gamma_c of m(gamma) = mean Omega, its ``top`` largest steps and each layer's m, bootstrapped over units.

    m(gamma) needs only the Omega values, so the bootstrap resamples those, by unit
    (:func:`magdash.phase.unit_bootstrap.unit_bootstrap_means`): one draw of the units serves
    every layer, keeping the dependence between depths. Each jump stays at its depth in the
    resamples: its interval is that of the step's size there.

    Args:
        omegas: per layer, the Omega of each vector.
        gammas: per layer, its depth fraction (NaN: not part of the curve).
        units: per layer, each Omega's unit codes (n_l, len(unit_names)); None: each vector its
            own unit, the i-th vector of every layer the same one.
        unit_names: the factors the codes name (("chunk",), ("magnitude", "carrier"), ...).
        n_boot: resamples (0: no intervals).
        seed: the generator's seed.
        confidence: the intervals' level.
        top: how many of the largest steps to give.
    """
    means = np.array([np.nanmean(v) if np.isfinite(v).any() else math.nan for v in omegas])
    gamma_c, change = largest_change(gammas, means)
    positions, depths = _curve_order(gammas, means)
    steps = np.diff(means[positions])
    ranked = np.argsort(-np.abs(steps), kind="stable")[:top]
    nan_intervals = tuple((math.nan, math.nan) for _ in omegas)
    if n_boot < 1 or not math.isfinite(gamma_c):
        jumps = tuple(Jump(float(depths[i + 1]), float(steps[i])) for i in ranked)
        return OrderBootstrap(Transition(gamma_c, change), jumps, nan_intervals)
    codes = [default_units(len(v)) for v in omegas] if units is None else list(units)
    replicates, counts = unit_bootstrap_means(omegas, codes, n_boot, np.random.default_rng(seed))
    gamma_star = np.array([largest_change(gammas, row)[0] for row in replicates])
    gamma_star = gamma_star[np.isfinite(gamma_star)]
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(gamma_star, [tail, 1.0 - tail], method="inverted_cdf")
    replicate_steps = np.diff(replicates[:, positions], axis=1)
    largest = np.argmax(np.abs(np.nan_to_num(replicate_steps, nan=0.0)), axis=1)
    jumps = []
    for index in ranked:
        step_low, step_high = np.nanquantile(replicate_steps[:, index], [tail, 1.0 - tail])
        jumps.append(Jump(float(depths[index + 1]), float(steps[index]), float(step_low), float(step_high),
                          float(np.mean(largest == index))))
    intervals = tuple(percentile_interval(column, confidence) for column in replicates.T)
    transition = Transition(gamma_c, change, float(low), float(high), n_boot, ResampledUnits(unit_names, counts))
    return OrderBootstrap(transition, tuple(jumps), intervals)


def _curve_order(gammas: Sequence[float], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the layers with a finite depth and value, by depth, and those depths."""
    gamma = np.asarray(gammas, dtype=np.float64)
    keep = np.flatnonzero(np.isfinite(gamma) & np.isfinite(values))
    positions = keep[np.argsort(gamma[keep], kind="stable")]
    return positions, gamma[positions]


def _sample_units(samples: Sequence[LayerSample]) -> tuple[list[np.ndarray], tuple[str, ...]]:
    """Every layer's unit codes and their one set of factor names."""
    coded = [sample.unit_codes() for sample in samples]
    names = {found for _, found in coded}
    if len(names) != 1:
        raise AnalysisError(f"the layers' vectors carry different units: {sorted(names)}")
    return [codes for codes, _ in coded], names.pop()


def analyze_samples(
    samples: Sequence[LayerSample],
    n_blocks: int,
    params: PhaseParams | None = None,
    *,
    model: str = "",
) -> PhaseResult:
    """Every per-layer diagnostic and the three transitions from the layers' samples.

    Layers whose sample met Inf or NaN vectors are left out and listed in ``nonfinite_layers``
    (see :mod:`magdash.overflow`). Spike counts of fits that did not converge (capped) count
    as missing. m(gamma), its steps and gamma_c are bootstrapped over the samples' units
    (:func:`bootstrap_order`). The spike-count and effective-rank transitions are point estimates: resampling vectors with replacement duplicates some of them, which lowers the rank and the effective sample
    size of the covariance and so biases exactly the spectral quantities measured (and in
    all-token mode the vectors are not kept). Sampling noise in the spike count is already
    bounded by the Tracy-Widom margin.
    """
    params = params or PhaseParams()
    nonfinite = {s.layer: s.nonfinite for s in samples if s.nonfinite}
    ordered = sorted((s for s in samples if not s.nonfinite), key=lambda s: s.layer)
    if not ordered:
        raise AnalysisError(
            "no layers to analyse" if not nonfinite else
            "every layer holds Inf/NaN activations (float16 overflow?); extract again in bfloat16 or float32"
        )
    depths = [depth_fraction(s.layer, n_blocks) for s in ordered]
    # The transitions' depths: the embeddings leave them when asked to.
    gammas = [math.nan if params.skip_embedding_step and gamma == 0 else gamma for gamma in depths]
    units, unit_names = _sample_units(ordered)
    order = bootstrap_order([s.omegas for s in ordered], gammas, units=units, unit_names=unit_names,
                            n_boot=params.n_boot, seed=params.seed, confidence=params.confidence)
    layers = tuple(
        LayerDiagnostics(
            layer=s.layer,
            gamma=gamma,
            dim=s.dim,
            count=s.count,
            omega=summarize_omega(s.omegas),
            spectrum=fit_spectrum(s.eigenvalues, s.dim, s.count, level=params.level),
            **_massive_fields(s, params.massive_ratio),
            omega_mean_low=low,
            omega_mean_high=high,
        )
        for s, gamma, (low, high) in zip(ordered, depths, order.intervals, strict=True)
    )
    return PhaseResult(
        model=model,
        n_blocks=n_blocks,
        samples=tuple(ordered),
        layers=layers,
        order=order.transition,
        spikes=Transition(*largest_change(gammas, [d.spectrum.spike_count for d in layers])),
        rank=Transition(*largest_change(gammas, [d.spectrum.effective_rank for d in layers])),
        nonfinite_layers=nonfinite,
        jumps=order.jumps,
        params=params,
    )


def _massive_fields(sample: LayerSample, ratio: float) -> dict:
    if sample.raw is None:
        return {}
    indices = find_massive(sample.raw.abs_mean, ratio)
    return {"massive": tuple(int(i) for i in indices), "massive_share": massive_share(sample.raw.square_mean, indices)}


# -- tidy tables for the Depth page and the CLI -------------------------------------------


def _quantile_column(prob: float) -> str:
    return f"omega_q{round(prob * 100):02d}"


def layer_frame(result: PhaseResult) -> pd.DataFrame:
    """One row per layer: every scalar diagnostic plus the isotropic-Gaussian expectations.

    ``n_spikes``, ``sigma2``, ``mp_edge``, ``tw_margin`` and ``largest_gap`` are NaN where the
    Marchenko-Pastur fit did not converge (``mp_converged`` False; ``mp_cap`` is the cap it may
    have hit): a capped fit is not a fit. ``omega_mean_low``/``omega_mean_high``: the bootstrap
    interval of mean Omega over the units.
    """
    rows = []
    for item in result.layers:
        fit, summary = item.spectrum, item.omega
        baseline = isotropic_spectrum_baseline(item.dim, item.count)
        row = {
            "model": result.model, "layer": item.layer, "gamma": item.gamma, "dim": item.dim,
            "n_vectors": item.count, "omega_mean": summary.mean, "omega_mean_low": item.omega_mean_low,
            "omega_mean_high": item.omega_mean_high, "omega_std": summary.std,
            "n_massive": len(item.massive), "massive_dims": ", ".join(map(str, item.massive)),
            "massive_share": item.massive_share,
        }
        row |= {_quantile_column(p): summary.quantiles[p] for p in OMEGA_QUANTILES}
        row |= {
            "dip": summary.dip, "dip_p": summary.dip_p, "rank": fit.rank, "q": fit.q,
            "sigma2": fit.sigma2, "mp_edge": fit.mp_edge, "tw_margin": fit.tw_margin,
            "n_spikes": fit.spike_count, "largest_gap": fit.largest_gap, "gap_rank": fit.gap_rank,
            "effective_rank": fit.effective_rank, "participation_ratio": fit.participation_ratio,
            "mp_converged": fit.converged, "mp_cap": fit.cap,
            "baseline_omega_mean": isotropic_omega_mean(item.dim),
            "baseline_omega_std": isotropic_omega_std(item.dim),
            "baseline_effective_rank": baseline["effective_rank"],
            "baseline_participation_ratio": baseline["participation_ratio"],
        }
        rows.append(row)
    return pd.DataFrame(rows)


SUMMARY_FIELDS = ("omega_mean", "omega_mean_low", "omega_mean_high", "dip_p", "n_spikes", "mp_edge", "sigma2",
                  "effective_rank", "participation_ratio")


def phase_summary(result: PhaseResult) -> dict:
    """The CLI's JSON shape: {"model", "gamma_c", "layers": [{layer, gamma, ...}], ...}.

    Per layer, where the Marchenko-Pastur fit did not converge (``mp_converged`` false,
    ``mp_cap`` the fit's cap) ``n_spikes``, ``sigma2`` and ``mp_edge`` are null and ``mp_note``
    says why; ``massive_dims`` and ``massive_share`` describe the raw vectors. ``gamma_c_units``
    names what the bootstrap resampled and how many ({"chunk": 15}, {"magnitude": 26,
    "carrier": 5}); ``jumps`` are the three largest steps of m(gamma); ``massive`` the view
    everything was computed on.
    """
    table = layer_frame(result)
    layers = []
    for row, item in zip(table.itertuples(index=False), result.layers, strict=True):
        entry = {"layer": int(row.layer), "gamma": float(row.gamma), "dim": int(row.dim)}
        entry |= {name: float(getattr(row, name)) for name in SUMMARY_FIELDS}
        entry["n_spikes"] = int(item.spectrum.n_spikes) if item.spectrum.converged else None
        entry |= {"mp_converged": bool(item.spectrum.converged), "mp_cap": int(item.spectrum.cap),
                  "mp_note": item.spectrum.unfitted_reason,
                  "massive_dims": list(item.massive), "massive_share": float(item.massive_share)}
        layers.append(entry)
    order, params = result.order, result.params
    return {
        "model": result.model, "gamma_c": result.gamma_c,
        "gamma_c_low": order.low, "gamma_c_high": order.high,
        "gamma_c_units": dict(zip(order.units.names, order.units.counts, strict=True)),
        "massive": params.massive, "massive_ratio": params.massive_ratio,
        "skip_embedding_step": params.skip_embedding_step,
        "first_position_left_out": result.first_position_left_out,
        "jumps": [dataclasses.asdict(jump) for jump in result.jumps],
        "layers": layers,
    }
