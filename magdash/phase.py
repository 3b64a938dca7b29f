"""Depth-wise "phase transition" diagnostics of hidden states (Alpay & Kilictas, arXiv 2601.19942).

Per layer l of a model with L blocks, at depth fraction gamma = l / L, over a set of vectors
(the number-token vectors of a stimulus set, or every token of a prompt set):

- the Omega distribution (:mod:`magdash.phase_omega`): mean m(gamma), SD, quantiles,
  histogram, Hartigan's dip test;
- the covariance spectrum of the centred vectors against the Marchenko-Pastur law
  (:mod:`magdash.phase_spectrum`): sigma^2, bulk edge, Tracy-Widom margin, spikes, largest
  gap, effective rank, participation ratio;
- gamma_c, the depth of the largest change of m(gamma) (:func:`largest_change`), with a
  bootstrap interval over vectors, and the same for the spike count and the effective rank.

Layers past L (the post-norm extra layer) get gamma = NaN: they are reported but take no part
in gamma_c, which is about the residual stream. The vectors are reduced to
:class:`~magdash.phase_accumulate.LayerSample` (eigenvalues, Omega values, counts), which is
what gets cached; everything here is recomputed from it in milliseconds. Runs over stored
vectors or a model's forward passes live in :mod:`magdash.phase_run`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.phase_accumulate import LayerSample
from magdash.phase_omega import (
    OMEGA_HISTOGRAM_EDGES,
    OMEGA_QUANTILES,
    OmegaSummary,
    isotropic_omega_mean,
    isotropic_omega_std,
    summarize_omega,
)
from magdash.phase_spectrum import (
    SpectrumFit,
    fit_spectrum,
    isotropic_spectrum_baseline,
    marchenko_pastur_density,
)

BASELINE_SERIES = "isotropic Gaussian"

# Bootstrap resample-count matrices are built in blocks of at most this many cells.
_BOOTSTRAP_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class LayerDiagnostics:
    layer: int
    gamma: float
    dim: int
    count: int
    omega: OmegaSummary
    spectrum: SpectrumFit


@dataclass(frozen=True)
class Transition:
    """Depth of the largest change of a per-layer curve, with its percentile interval.

    ``gamma_c`` is the depth fraction of the layer *after* the largest absolute change between
    consecutive layers, i.e. the first depth at which the new value is reached; ``change`` is
    that signed change. ``low``/``high`` are NaN when no bootstrap was run.
    """

    gamma_c: float
    change: float
    low: float = math.nan
    high: float = math.nan
    n_boot: int = 0


@dataclass(frozen=True)
class PhaseResult:
    """Diagnostics of every layer of one model, and the three transition depths."""

    model: str
    n_blocks: int
    samples: tuple[LayerSample, ...]
    layers: tuple[LayerDiagnostics, ...]
    order: Transition  # m(gamma) = mean Omega, bootstrap interval over vectors
    spikes: Transition  # spike count, point estimate
    rank: Transition  # effective rank, point estimate
    nonfinite_layers: dict[int, int] = field(default_factory=dict)  # layer -> Inf/NaN vectors; left out

    @property
    def gamma_c(self) -> float:
        return self.order.gamma_c

    def sample(self, layer: int) -> LayerSample:
        for sample in self.samples:
            if sample.layer == layer:
                return sample
        raise AnalysisError(f"no layer {layer}: layers are {[s.layer for s in self.samples]}")

    def diagnostics(self, layer: int) -> LayerDiagnostics:
        for item in self.layers:
            if item.layer == layer:
                return item
        raise AnalysisError(f"no layer {layer}: layers are {[d.layer for d in self.layers]}")


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


def bootstrap_order_transition(
    omegas: Sequence[np.ndarray],
    gammas: Sequence[float],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Transition:
    """gamma_c of m(gamma) = mean Omega, with a percentile bootstrap interval over vectors.

    m(gamma) needs only the Omega values, so the bootstrap resamples those. When every layer
    holds the same vectors (same count: the same tokens seen at every depth) one resample of
    vector indices is shared by all layers, keeping the dependence between depths; otherwise
    each layer is resampled on its own. Resample means are computed as count matrices times
    the Omega matrix, so the cost is O(n_boot x N) whatever the number of layers.
    """
    means = np.array([np.nanmean(v) if np.isfinite(v).any() else math.nan for v in omegas])
    gamma_c, change = largest_change(gammas, means)
    if n_boot < 1 or not math.isfinite(gamma_c):
        return Transition(gamma_c, change)
    rng = np.random.default_rng(seed)
    lengths = {len(v) for v in omegas}
    if len(lengths) == 1:
        replicates = _bootstrap_means(np.column_stack(omegas), n_boot, rng)
    else:
        replicates = np.column_stack(
            [_bootstrap_means(np.asarray(v)[:, None], n_boot, rng)[:, 0] for v in omegas]
        )
    gamma_star = np.array([largest_change(gammas, row)[0] for row in replicates])
    gamma_star = gamma_star[np.isfinite(gamma_star)]
    tail = (1.0 - confidence) / 2
    low, high = np.quantile(gamma_star, [tail, 1.0 - tail], method="inverted_cdf")
    return Transition(gamma_c, change, float(low), float(high), n_boot)


def _bootstrap_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, k) means of the columns of ``values`` (n, k) over resampled rows, NaN-aware."""
    finite = np.isfinite(values)
    filled = np.where(finite, values, 0.0).astype(np.float64)
    weights = None if finite.all() else finite.astype(np.float64)
    n = values.shape[0]
    block = max(1, min(n_boot, _BOOTSTRAP_BLOCK_CELLS // max(n, 1)))
    out = np.empty((n_boot, values.shape[1]))
    for start in range(0, n_boot, block):
        rows = min(block, n_boot - start)
        # int32 is enough: a block never has more than _BOOTSTRAP_BLOCK_CELLS cells.
        picks = rng.integers(0, n, size=(rows, n), dtype=np.int32)
        picks += (np.arange(rows, dtype=np.int32) * n)[:, None]
        counts = np.bincount(picks.ravel(), minlength=rows * n).reshape(rows, n).astype(np.float64)
        totals = n if weights is None else counts @ weights
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:start + rows] = (counts @ filled) / totals
    return out


def analyze_samples(
    samples: Sequence[LayerSample],
    n_blocks: int,
    *,
    model: str = "",
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.99,
) -> PhaseResult:
    """Every per-layer diagnostic and the three transitions from the layers' samples.

    Layers whose sample met Inf or NaN vectors are left out and listed in ``nonfinite_layers``
    (see :mod:`magdash.overflow`). The spike-count and effective-rank transitions are point estimates: resampling vectors
    with replacement duplicates some of them, which lowers the rank and the effective sample
    size of the covariance and so biases exactly the spectral quantities measured (and in
    all-token mode the vectors are not kept). Sampling noise in the spike count is already
    bounded by the Tracy-Widom margin.
    """
    nonfinite = {s.layer: s.nonfinite for s in samples if s.nonfinite}
    ordered = sorted((s for s in samples if not s.nonfinite), key=lambda s: s.layer)
    if not ordered:
        raise AnalysisError(
            "no layers to analyse" if not nonfinite else
            "every layer holds Inf/NaN activations (float16 overflow?); extract again in bfloat16 or float32"
        )
    layers = tuple(
        LayerDiagnostics(
            layer=s.layer,
            gamma=depth_fraction(s.layer, n_blocks),
            dim=s.dim,
            count=s.count,
            omega=summarize_omega(s.omegas),
            spectrum=fit_spectrum(s.eigenvalues, s.dim, s.count, level=level),
        )
        for s in ordered
    )
    gammas = [d.gamma for d in layers]
    return PhaseResult(
        model=model,
        n_blocks=n_blocks,
        samples=tuple(ordered),
        layers=layers,
        order=bootstrap_order_transition([s.omegas for s in ordered], gammas, n_boot=n_boot, seed=seed),
        spikes=Transition(*largest_change(gammas, [d.spectrum.n_spikes for d in layers])),
        rank=Transition(*largest_change(gammas, [d.spectrum.effective_rank for d in layers])),
        nonfinite_layers=nonfinite,
    )


# -- tidy tables for the Depth page and the CLI -------------------------------------------


def _quantile_column(prob: float) -> str:
    return f"omega_q{round(prob * 100):02d}"


def layer_frame(result: PhaseResult) -> pd.DataFrame:
    """One row per layer: every scalar diagnostic plus the isotropic-Gaussian expectations."""
    rows = []
    for item in result.layers:
        fit, summary = item.spectrum, item.omega
        baseline = isotropic_spectrum_baseline(item.dim, item.count)
        row = {
            "model": result.model, "layer": item.layer, "gamma": item.gamma, "dim": item.dim,
            "n_vectors": item.count, "omega_mean": summary.mean, "omega_std": summary.std,
        }
        row |= {_quantile_column(p): summary.quantiles[p] for p in OMEGA_QUANTILES}
        row |= {
            "dip": summary.dip, "dip_p": summary.dip_p, "rank": fit.rank, "q": fit.q,
            "sigma2": fit.sigma2, "mp_edge": fit.mp_edge, "tw_margin": fit.tw_margin,
            "n_spikes": fit.n_spikes, "largest_gap": fit.largest_gap, "gap_rank": fit.gap_rank,
            "effective_rank": fit.effective_rank, "participation_ratio": fit.participation_ratio,
            "mp_converged": fit.converged,
            "baseline_omega_mean": isotropic_omega_mean(item.dim),
            "baseline_omega_std": isotropic_omega_std(item.dim),
            "baseline_effective_rank": baseline["effective_rank"],
            "baseline_participation_ratio": baseline["participation_ratio"],
        }
        rows.append(row)
    return pd.DataFrame(rows)


CURVE_METRICS = ("omega_mean", "n_spikes", "effective_rank", "participation_ratio", "dip_p")


def depth_curves_frame(results: Mapping[str, PhaseResult] | Sequence[PhaseResult]) -> pd.DataFrame:
    """Long table (series, layer, gamma, metric, value) of each result and the null baseline.

    Pass the model and its ``@random`` control; the isotropic-Gaussian rows (series
    :data:`BASELINE_SERIES`) use the first result's d and N per layer: E[Omega] exactly,
    no spikes, and the MP expectations of effective rank and participation ratio.
    """
    named = dict(results) if isinstance(results, Mapping) else {r.model: r for r in results}
    if not named:
        raise AnalysisError("no results to draw")
    frames = []
    for series, result in named.items():
        table = layer_frame(result)
        long = table.melt(id_vars=["layer", "gamma"], value_vars=list(CURVE_METRICS),
                          var_name="metric", value_name="value")
        frames.append(long.assign(series=series))
    first = layer_frame(next(iter(named.values())))
    baseline = first[["layer", "gamma"]].assign(
        omega_mean=first["baseline_omega_mean"], n_spikes=0.0,
        effective_rank=first["baseline_effective_rank"],
        participation_ratio=first["baseline_participation_ratio"],
    ).melt(id_vars=["layer", "gamma"], var_name="metric", value_name="value")
    frames.append(baseline.assign(series=BASELINE_SERIES))
    out = pd.concat(frames, ignore_index=True)
    out["value"] = out["value"].astype(np.float64)
    return out[["series", "layer", "gamma", "metric", "value"]]


def omega_histogram_frame(result: PhaseResult) -> pd.DataFrame:
    """Per layer and bin: Omega density over the fixed edges (bin_left, bin_right, density)."""
    width = np.diff(OMEGA_HISTOGRAM_EDGES)
    frames = []
    for item in result.layers:
        counts = item.omega.histogram
        total = counts.sum()
        density = counts / (total * width) if total else np.zeros_like(width)
        frames.append(pd.DataFrame({
            "layer": item.layer, "gamma": item.gamma, "bin_left": OMEGA_HISTOGRAM_EDGES[:-1],
            "bin_right": OMEGA_HISTOGRAM_EDGES[1:], "density": density,
        }))
    return pd.concat(frames, ignore_index=True)


def spectrum_frame(result: PhaseResult, layer: int, *, bins: int = 60, points: int = 400) -> pd.DataFrame:
    """Eigenvalue histogram of one layer beside its fitted MP density: (series, x, density).

    Both are densities over the non-zero eigenvalues on [0, 1.5 x spike threshold]; spikes
    beyond that range are left to :func:`eigenvalue_frame`. Series: "eigenvalues" (bin
    centres) and "Marchenko-Pastur" (the fitted law, sigma^2 and q of the fit).
    """
    sample, fit = result.sample(layer), result.diagnostics(layer).spectrum
    lam = sample.eigenvalues
    if lam.size == 0 or not math.isfinite(fit.sigma2):
        return pd.DataFrame({"series": [], "x": [], "density": []})
    upper = 1.5 * fit.spike_threshold
    counts, edges = np.histogram(lam, bins=bins, range=(0.0, upper))
    empirical = counts / (lam.size * np.diff(edges))
    grid = np.linspace(0.0, upper, points)
    curve = marchenko_pastur_density(grid, fit.q, fit.sigma2)
    return pd.DataFrame({
        "series": ["eigenvalues"] * bins + ["Marchenko-Pastur"] * points,
        "x": np.concatenate([(edges[:-1] + edges[1:]) / 2, grid]),
        "density": np.concatenate([empirical, curve]),
    })


def eigenvalue_frame(result: PhaseResult, layer: int) -> pd.DataFrame:
    """Scree table of one layer: rank (1 = largest), eigenvalue, is_spike, edge, threshold."""
    sample, fit = result.sample(layer), result.diagnostics(layer).spectrum
    rank = np.arange(1, sample.eigenvalues.size + 1)
    return pd.DataFrame({
        "rank": rank, "eigenvalue": sample.eigenvalues, "is_spike": rank <= fit.n_spikes,
        "mp_edge": fit.mp_edge, "spike_threshold": fit.spike_threshold,
    })


SUMMARY_FIELDS = ("omega_mean", "dip_p", "n_spikes", "mp_edge", "sigma2", "effective_rank",
                  "participation_ratio")


def phase_summary(result: PhaseResult) -> dict:
    """The CLI's JSON shape: {"model", "gamma_c", "layers": [{layer, gamma, ...}]}."""
    table = layer_frame(result)
    layers = [
        {"layer": int(row.layer), "gamma": float(row.gamma)}
        | {name: (int(getattr(row, name)) if name == "n_spikes" else float(getattr(row, name)))
           for name in SUMMARY_FIELDS}
        for row in table.itertuples(index=False)
    ]
    return {"model": result.model, "gamma_c": result.gamma_c, "layers": layers}


# -- prompt texts ---------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
TokenCounter = Callable[[Sequence[str]], Sequence[int]]


def chunk_text(
    text: str,
    max_tokens: int,
    *,
    count_tokens: TokenCounter | None = None,
    chars_per_token: float = 3.0,
    fill: float = 0.9,
) -> list[str]:
    """Cut a document into pieces that fit a model's context, at sentence boundaries.

    The text is split into sentences (after ., ! or ? followed by white space; line breaks are
    white space), sentences longer than the budget into words, and words longer than it into
    character slices; consecutive pieces are then packed greedily up to ``fill x max_tokens``
    tokens. Tokens are counted with ``count_tokens`` (a batch callback, e.g. the model's
    tokenizer without special tokens) or, tokenizer-free, estimated as characters /
    ``chars_per_token`` (3 is conservative for English BPE/WordPiece, about 4 chars a token).
    Counting pieces separately and summing is approximate at the joins, hence the 10% margin;
    a chunk that still overflows is truncated by the extraction, losing only its tail.
    """
    if max_tokens < 1:
        raise AnalysisError(f"a context of {max_tokens} tokens cannot hold any text")
    budget = max(1, int(max_tokens * fill))

    def measure(pieces: Sequence[str]) -> list[int]:
        if count_tokens is not None:
            return [int(n) for n in count_tokens(list(pieces))] if pieces else []
        # +1: the space that joins the piece to the previous one.
        return [math.ceil((len(p) + 1) / chars_per_token) for p in pieces]

    slice_chars = budget if count_tokens is not None else max(1, int(budget * chars_per_token))
    pieces: list[str] = []
    sentences = [s for s in _SENTENCE_END.split(" ".join(text.split())) if s]
    for sentence, size in zip(sentences, measure(sentences), strict=True):
        if size <= budget:
            pieces.append(sentence)
            continue
        words = sentence.split(" ")
        for word, word_size in zip(words, measure(words), strict=True):
            if word_size <= budget:
                pieces.append(word)
            else:
                pieces.extend(word[i:i + slice_chars] for i in range(0, len(word), slice_chars))
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for piece, size in zip(pieces, measure(pieces), strict=True):
        if current and used + size > budget:
            chunks.append(" ".join(current))
            current, used = [], 0
        current.append(piece)
        used += size
    if current:
        chunks.append(" ".join(current))
    return chunks
