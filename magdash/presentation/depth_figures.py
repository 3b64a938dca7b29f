"""The depth diagnostics as figures and tables (Alpay & Kilictas, arXiv 2601.19942): the order
parameter m(gamma) with gamma_c, Omega by layer, covariance spectra against the Marchenko–Pastur
law, effective rank and participation ratio, each against the random-weight control and the
isotropic-Gaussian null.

Each figure's frame, chart (:mod:`magdash.presentation.chart_style`) and figure function sit
together, as in :mod:`magdash.presentation.scaling_figures`. Computed here because only a figure needs them:
the histogram densities and the fitted Marchenko–Pastur density on a grid (:func:`omega_histogram_frame`,
:func:`spectrum_frames`), the isotropic baseline's expected effective rank and participation ratio
(:func:`rank_frame`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from magdash.caveats import Caveat, Severity
from magdash.depth_statistics.diagnostics import DepthResult, Transition, depth_fraction, layer_frame
from magdash.depth_statistics.massive_dims import MASSIVE_LABELS
from magdash.depth_statistics.omega import isotropic_omega_mean
from magdash.errors import AnalysisError
from magdash.formatting import fixed, format_number, layer_span
from magdash.presentation import chart_style as style

if TYPE_CHECKING:
    from magdash.depth_statistics.omega import OmegaSummary
    from magdash.depth_statistics.spectrum import SpectrumFit


# -- the sentences and the adjusted view --------------------------------------------------


def _trained(results: Mapping[str, DepthResult]) -> DepthResult:
    return next(iter(results.values()))


def _interval(transition: Transition) -> tuple[float, float] | None:
    return (transition.low, transition.high) if math.isfinite(transition.low) else None


def phase_sentence(results: Mapping[str, DepthResult], adjusted: Mapping[str, DepthResult] | None = None) -> str:
    """gamma_c of each series with its bootstrap interval and the units it resampled, raw and adjusted,
    and the largest jumps."""

    def gamma_cs(items: Mapping[str, DepthResult]) -> str:
        parts = []
        for series, result in items.items():
            order = result.order
            interval = (f" [{fixed(order.low, 2)}, {fixed(order.high, 2)}] over {order.units.describe()}"
                        if math.isfinite(order.low) else "")
            parts.append(f"{series} ({result.model}): gamma_c = {fixed(order.gamma_c, 2)}{interval}")
        return "; ".join(parts)

    trained = _trained(results)
    text = ("Depth of the largest change of m(gamma), with its bootstrap interval over the independent units "
            "(each with all of its vectors) — " + gamma_cs(results))
    if adjusted:
        text += f". {MASSIVE_LABELS[_trained(adjusted).params.massive].capitalize()}: " + gamma_cs(adjusted)
    if caveat := trained.order.units.caveat():
        text += f". {caveat[0].upper()}{caveat[1:]}"
    if trained.jumps:
        steps = ", ".join(
            f"to gamma {fixed(j.gamma, 2)} ({format_number(j.change, '+.3f')}"
            + (f", the largest in {j.p_largest:.0%} of resamples)" if math.isfinite(j.p_largest) else ")")
            for j in trained.jumps
        )
        text += f". Largest steps of the trained curve: {steps}"
        if trained.jumps[0].gamma == depth_fraction(1, trained.n_blocks) and not trained.params.skip_embedding_step:
            text += (". gamma_c is the embeddings-to-block-1 step, where massive activations usually appear, "
                     "not a transition inside the network")
    return text + ". The paper reports gamma_c ≈ 0.42 for models of 1.5B-30B parameters and none for small ones."


def adjusted_view_differs(results: Mapping[str, DepthResult], massive: str) -> bool:
    """Whether the adjusted view ``massive`` differs from the raw vectors: standardising always
    changes them; dropping the massive dimensions only where a series has some at some layer (else
    the page would draw every raw curve, table row and spectrum twice, the same).

    Args:
        results: series name -> depth diagnostics of the raw vectors.
        massive: the adjusted view, ``drop`` or ``standardise``.
    """
    return massive != "drop" or any(item.massive for result in results.values() for item in result.layers)


def massive_sentence(results: Mapping[str, DepthResult]) -> str:
    """Where the trained model has massive-activation dimensions and how much of ||h||² they hold."""
    trained = _trained(results)
    ratio = trained.params.massive_ratio
    with_massive = [item for item in trained.layers if item.massive]
    rule = f"mean |h_j| above {ratio:g}x the median over dimensions"
    if not with_massive:
        return f"{trained.model}: no massive-activation dimensions ({rule}) in any layer."
    counts = pd.Series([j for item in with_massive for j in item.massive]).value_counts()
    top = max(with_massive, key=lambda item: item.massive_share)
    return (
        f"{trained.model}: massive-activation dimensions ({rule}) in {len(with_massive)} of {len(trained.layers)} "
        f"layers, most often {', '.join(map(str, counts.index[:5]))}; they hold up to "
        f"{format_number(top.massive_share, '.0%')} of ||h||² (layer {top.layer}, {len(top.massive)} dimensions). The paper's claim "
        "is about Omega of the raw hidden states: where the raw and adjusted curves part, the 'solid' "
        "regime is those few coordinates, not a sparse representation."
    )


# -- the order parameter ------------------------------------------------------------------


ISOTROPIC_OMEGA_BASELINE = 1.0 - math.sqrt(2.0 / math.pi)
"""Mean Omega of an isotropic Gaussian vector as d grows (Alpay & Kilictas, arXiv 2601.19942)."""


def order_parameter_frame(results: Mapping[str, DepthResult]) -> pd.DataFrame:
    """m(gamma) = mean Omega per layer of each series (e.g. "trained", "random control").

    The band is each layer's bootstrap interval of m over the independent units (texts, or
    magnitudes and carriers: :mod:`magdash.depth_statistics.unit_bootstrap`), from the resamples that give
    gamma_c's interval; no band without a bootstrap. Layers without a depth fraction (the
    post-norm extra layer) are left out. Columns: series, view, layer, gamma, m, ci_low,
    ci_high, n (vectors).
    """
    rows = []
    for series, result in results.items():
        for item in result.layers:
            if not math.isfinite(item.gamma):
                continue
            rows.append(
                {
                    "series": series,
                    "view": MASSIVE_LABELS[result.params.massive],
                    "layer": item.layer,
                    "gamma": item.gamma,
                    "m": item.omega.mean,
                    "ci_low": item.omega_mean_low,
                    "ci_high": item.omega_mean_high,
                    "n": item.omega.n,
                }
            )
    return pd.DataFrame(rows, columns=["series", "view", "layer", "gamma", "m", "ci_low", "ci_high", "n"])


def order_parameter_chart(
    frame: pd.DataFrame,
    *,
    baseline: float | None = ISOTROPIC_OMEGA_BASELINE,
    gamma_c: float | None = None,
    gamma_c_interval: tuple[float, float] | None = None,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Order parameter m(gamma) = mean Omega per layer, with CI, control and null baseline.

    ``frame``: gamma, m, ci_low, ci_high, series ("trained", "random control"; layer, label
    and view optional). With a ``view`` column (raw, massive dimensions dropped, ...) each
    view gets its own dash pattern, so raw and adjusted curves sit together. ``baseline``
    draws the isotropic-Gaussian mean 1 - sqrt(2/pi) (pass the exact finite-d value from
    :func:`magdash.depth_statistics.omega.isotropic_omega_mean` if wanted; None hides it). ``gamma_c``
    (a dashed rule) and its interval are marked in orange.
    """
    style.require_columns(frame, ["gamma", "m", "ci_low", "ci_high", "series"], "order_parameter_chart")
    data = frame.copy()
    if "layer" not in data:
        data["layer"] = np.nan
    if "view" not in data:
        data["view"] = "raw"
    data["curve"] = data["series"].astype(str) + " · " + data["view"].astype(str)
    views = list(dict.fromkeys(data["view"].astype(str)))
    dash = None if len(views) < 2 else alt.StrokeDash(
        "view:N", title="vectors", scale=alt.Scale(domain=views, range=[[1, 0], [6, 3], [2, 2]][: len(views)]),
        legend=alt.Legend(labelLimit=style.LEGEND_LABEL_LIMIT),
    )
    series = list(dict.fromkeys(data["series"].astype(str)))
    color = alt.Color("series:N", scale=style.color_scale(series, style.SERIES_COLORS), title="model")
    layers = style.gamma_c_layers(gamma_c, gamma_c_interval)
    if baseline is not None:
        layers.append(
            alt.Chart()
            .mark_rule(color=style.REFERENCE_COLOR, strokeDash=[2, 3])
            .encode(
                y=alt.datum(float(baseline)),
                tooltip=alt.value(f"isotropic Gaussian baseline {float(baseline):.4f}"),
            )
        )
    layers += style.profile_layers(
        data.loc[:, ["series", "view", "curve", "gamma", "layer", "m", "ci_low", "ci_high"]],
        x=style.DepthAxis.of(data["gamma"], "gamma", style.GAMMA_TITLE).encoding(),
        y_field="m",
        y_title="m(gamma) = mean Omega",
        # Omega sits in a narrow range (about 0.2 for isotropic vectors): a zero-based axis
        # would flatten the curves and their CIs into one line.
        y_scale=alt.Scale(zero=False),
        color=color,
        stroke_dash=dash,
        tooltip=[
            alt.Tooltip("series:N", title="model"),
            alt.Tooltip("view:N", title="vectors"),
            alt.Tooltip("gamma:Q", format=".3f"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("m:Q", title="m = mean object integrity Omega", format=".4f"),
            alt.Tooltip("ci_low:Q", title="CI low", format=".4f"),
            alt.Tooltip("ci_high:Q", title="CI high", format=".4f"),
        ],
        band=("ci_low", "ci_high"),
        detail="curve",
    )
    text = title or f"Order parameter m(gamma) (dotted: isotropic baseline; {style.GAMMA_C_NOTE})"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def order_figure(results: Mapping[str, DepthResult], adjusted: Mapping[str, DepthResult] | None = None) -> alt.LayerChart:
    """m(gamma) = mean Omega by depth with its interval, the isotropic-Gaussian baseline and gamma_c.

    Args:
        results: series name -> depth diagnostics: the trained model first, then its ``@random`` control when there is
            one.
        adjusted: the same series with the massive dimensions dropped or standardised, drawn dashed; None leaves them
            out.
    """
    trained = _trained(results)
    dim = trained.layers[0].dim
    frame = order_parameter_frame(results)
    subtitle = f"{trained.model}; dotted: isotropic Gaussian in d = {dim}"
    if adjusted:
        frame = pd.concat([frame, order_parameter_frame(adjusted)], ignore_index=True)
        subtitle += f"; solid: raw, dashed: {MASSIVE_LABELS[_trained(adjusted).params.massive]}"
    return order_parameter_chart(
        frame, baseline=isotropic_omega_mean(dim),
        gamma_c=trained.order.gamma_c, gamma_c_interval=_interval(trained.order),
        subtitle=subtitle, width="container",
    )


def jumps_frame(results: Mapping[str, DepthResult]) -> pd.DataFrame:
    """The largest steps of m(gamma) of each series, largest first.

    Columns: series, view, rank, gamma (depth after the step), change, ci_low, ci_high (its
    bootstrap interval), p_largest (share of resamples in which it is the largest step).
    """
    from magdash.depth_statistics.massive_dims import MASSIVE_LABELS

    rows = [
        {"series": series, "view": MASSIVE_LABELS[result.params.massive], "rank": rank, "gamma": jump.gamma,
         "change": jump.change, "ci_low": jump.low, "ci_high": jump.high, "p_largest": jump.p_largest}
        for series, result in results.items()
        for rank, jump in enumerate(result.jumps, start=1)
    ]
    return pd.DataFrame(rows, columns=["series", "view", "rank", "gamma", "change", "ci_low", "ci_high", "p_largest"])


def jumps_table(results: Mapping[str, DepthResult], adjusted: Mapping[str, DepthResult] | None = None) -> pd.DataFrame:
    """The three largest steps of m(gamma) of every series, raw and adjusted; the step's rank is
    ``jump`` (1 = the largest), as in the store's ``phase_jumps``, not the covariance ``rank`` of
    :func:`phase_table`."""
    frames = [jumps_frame(results)] + ([jumps_frame(adjusted)] if adjusted else [])
    return pd.concat(frames, ignore_index=True).rename(columns={"rank": "jump"})


# -- Omega by layer -----------------------------------------------------------------------


def omega_histogram_frame(
    summaries: Sequence[OmegaSummary],
    layers: Sequence[int],
    gammas: Sequence[float],
    *,
    edges: np.ndarray | None = None,
    merge: int = 1,
) -> pd.DataFrame:
    """Omega histograms of several layers, long, without the empty bins.

    ``gammas`` are the layers' depth fractions (NaN for a post-norm extra layer). ``edges``
    default :data:`magdash.depth_statistics.omega.OMEGA_HISTOGRAM_EDGES`. ``merge`` > 1 adds that many
    neighbouring bins together (fewer rows to draw for deep models). Columns: layer, gamma,
    omega_low, omega_high, count, fraction (count / the layer's total).
    """
    if edges is None:
        from magdash.depth_statistics.omega import OMEGA_HISTOGRAM_EDGES

        edges = OMEGA_HISTOGRAM_EDGES
    edges = np.asarray(edges, dtype=np.float64)
    if not len(summaries) == len(layers) == len(gammas):
        raise AnalysisError(
            f"{len(summaries)} Omega summaries for {len(layers)} layers and {len(gammas)} depths"
        )
    merge = max(1, int(merge))
    low_edges = edges[:-1][::merge]
    high_edges = np.append(low_edges[1:], edges[-1])
    frames = []
    for summary, layer, gamma in zip(summaries, layers, gammas, strict=True):
        counts = np.asarray(summary.histogram, dtype=np.int64)
        if counts.size != edges.size - 1:
            raise AnalysisError("Omega histogram counts do not match the bin edges")
        merged = np.add.reduceat(counts, np.arange(0, counts.size, merge))
        total = merged.sum()
        frame = pd.DataFrame(
            {
                "layer": int(layer),
                "gamma": float(gamma),
                "omega_low": low_edges,
                "omega_high": high_edges,
                "count": merged,
                "fraction": merged / total if total else np.zeros(merged.size),
            }
        )
        frames.append(frame[frame["count"] > 0])
    return pd.concat(frames, ignore_index=True)


def phase_omega_histogram(result: DepthResult, *, merge: int = 1) -> pd.DataFrame:
    """:func:`omega_histogram_frame` of every layer of a :class:`magdash.depth_statistics.DepthResult`."""
    return omega_histogram_frame(
        [item.omega for item in result.layers],
        [item.layer for item in result.layers],
        [item.gamma for item in result.layers],
        merge=merge,
    )


def omega_heatmap(
    histogram: pd.DataFrame,
    *,
    y: str = "layer",
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.Chart:
    """Distribution of Omega per layer as a heatmap (rows: layers, deepest on top).

    ``histogram`` (:func:`omega_histogram_frame`): layer, omega_low,
    omega_high, count, fraction (gamma optional; ``y="gamma"`` labels rows by depth
    fraction). Colour is the fraction of the layer's vectors in each bin, so layers with
    different counts compare; empty bins stay blank.
    """
    style.require_columns(histogram, ["layer", "omega_low", "omega_high", "count", "fraction"], "omega_heatmap")
    if y not in ("layer", "gamma"):
        raise AnalysisError(f"y must be 'layer' or 'gamma', got {y!r}")
    columns = ["layer", "omega_low", "omega_high", "count", "fraction"]
    if "gamma" in histogram:
        columns.append("gamma")
    frame = histogram.loc[histogram["count"] > 0, columns]
    chart = (
        alt.Chart(style.inline_data(frame))
        .mark_rect()
        .encode(
            x=alt.X("omega_low:Q", title="object integrity Omega", scale=alt.Scale(zero=False)),
            x2="omega_high:Q",
            y=alt.Y(
                f"{y}:O",
                sort="descending",
                title=style.LAYER_TITLE if y == "layer" else style.GAMMA_TITLE,
            ),
            color=alt.Color(
                "fraction:Q", scale=alt.Scale(scheme="greys"), title="fraction of vectors"
            ),
            tooltip=[
                alt.Tooltip("layer:O"),
                alt.Tooltip("omega_low:Q", title="Omega from", format=".2f"),
                alt.Tooltip("omega_high:Q", title="Omega to", format=".2f"),
                alt.Tooltip("count:Q", format=",d"),
                alt.Tooltip("fraction:Q", format=".3f"),
            ],
        )
    )
    text = title or "Omega distribution by layer"
    return style.finish(chart, style.chart_title(text, subtitle), width, height)


def omega_figure(results: Mapping[str, DepthResult]) -> alt.Chart:
    """The distribution of Omega at every layer of the trained model.

    Args:
        results: series name -> depth diagnostics: the trained model first, then its ``@random`` control when there is
            one.
    """
    trained = _trained(results)
    return omega_heatmap(
        phase_omega_histogram(trained), subtitle=f"{trained.model}, {trained.layers[0].count} vectors per layer",
        width="container",
    )


# -- the covariance spectrum --------------------------------------------------------------


def spectrum_frames(
    eigenvalues: np.ndarray, fit: SpectrumFit, *, bins: int = 60, log_bins: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Histogram, fitted Marchenko–Pastur density and spikes of one layer's spectrum.

    The histogram is a density over all non-zero eigenvalues (count / (rank x bin width)), the
    scale of the MP density, which integrates to 1 over the non-zero eigenvalues; bins are
    log-spaced by default because spikes lie far above the bulk. Returns

    - histogram: low, high, count, density
    - mp: eigenvalue, density (the fitted MP law with sigma^2 = fit.sigma2, q = fit.q)
    - spikes: rank (1 = largest), eigenvalue (the fit's n_spikes largest; none where the fit
      did not converge: a capped count marks no spikes)
    """
    from magdash.depth_statistics.spectrum import marchenko_pastur_density, marchenko_pastur_edges

    lam = np.asarray(eigenvalues, dtype=np.float64)
    lam = np.sort(lam[np.isfinite(lam) & (lam > 0)])[::-1]
    if lam.size == 0:
        raise AnalysisError("the spectrum has no positive eigenvalues to draw")
    low, high = float(lam.min()), float(lam.max())
    if log_bins and high > low:
        edges = np.geomspace(low, high, bins + 1)
    else:
        edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
    counts, edges = np.histogram(lam, bins=edges)
    widths = np.diff(edges)
    histogram = pd.DataFrame(
        {
            "low": edges[:-1],
            "high": edges[1:],
            "count": counts,
            "density": counts / (lam.size * widths),
        }
    )
    histogram = histogram[histogram["count"] > 0].reset_index(drop=True)
    mp = pd.DataFrame(columns=["eigenvalue", "density"])
    if math.isfinite(fit.sigma2) and math.isfinite(fit.q):
        lower, upper = marchenko_pastur_edges(fit.q, fit.sigma2)
        # Geometric spacing keeps the curve smooth near the lower edge on a log axis too.
        grid = np.geomspace(max(lower, 1e-6 * upper), upper, 400)[1:-1]
        mp = pd.DataFrame(
            {"eigenvalue": grid, "density": marchenko_pastur_density(grid, fit.q, fit.sigma2)}
        )
    n_spikes = fit.n_spikes if fit.converged else 0
    spikes = pd.DataFrame({"rank": np.arange(1, n_spikes + 1), "eigenvalue": lam[:n_spikes]})
    return histogram, mp, spikes


def phase_spectrum_frames(
    result: DepthResult, layer: int, *, bins: int = 60, log_bins: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`spectrum_frames` of one layer of a :class:`magdash.depth_statistics.DepthResult`."""
    return spectrum_frames(
        result.sample(layer).eigenvalues,
        result.diagnostics(layer).spectrum,
        bins=bins,
        log_bins=log_bins,
    )


def spectrum_chart(
    histogram: pd.DataFrame,
    mp: pd.DataFrame,
    spikes: pd.DataFrame,
    *,
    edge: float | None = None,
    threshold: float | None = None,
    log_x: bool = True,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """One layer's covariance spectrum over the fitted Marchenko–Pastur density, spikes marked.

    From :func:`spectrum_frames`: ``histogram`` (low, high, count, density),
    ``mp`` (eigenvalue, density) and ``spikes`` (rank, eigenvalue; red rules). ``edge`` is
    the fitted bulk edge lambda+ (solid grey), ``threshold`` the Tracy–Widom spike threshold
    (dashed orange); without a threshold (a fit that did not converge) no spike count is
    written. The histogram is a density per unit eigenvalue, as the MP curve is.
    """
    style.require_columns(histogram, ["low", "high", "density"], "spectrum_chart")
    style.require_columns(mp, ["eigenvalue", "density"], "spectrum_chart")
    style.require_columns(spikes, ["rank", "eigenvalue"], "spectrum_chart")
    scale = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    x_title = "eigenvalue" + (" (log scale)" if log_x else "")
    y_title = "density"
    bars = style.finite_rows(histogram, "low", "high", "density", positive=log_x)
    bar_columns = [c for c in ("low", "high", "count", "density") if c in bars]
    layers: list[alt.Chart] = [
        alt.Chart(style.inline_data(bars.loc[:, bar_columns]))
        .mark_rect(color=style.HISTOGRAM_FILL, stroke=style.HISTOGRAM_STROKE, strokeWidth=0.3)
        .encode(
            x=alt.X("low:Q", scale=scale, title=x_title),
            x2="high:Q",
            y=alt.Y("density:Q", title=y_title),
            y2=alt.datum(0),
            tooltip=[
                alt.Tooltip("low:Q", title="from", format=".4g"),
                alt.Tooltip("high:Q", title="to", format=".4g"),
                *([alt.Tooltip("count:Q", format=",d")] if "count" in bars else []),
                alt.Tooltip("density:Q", title="density per unit eigenvalue", format=".4g"),
            ],
        )
    ]
    curve = style.finite_rows(mp, "eigenvalue", "density", positive=log_x)
    if len(curve):
        layers.append(
            alt.Chart(style.inline_data(curve.loc[:, ["eigenvalue", "density"]]))
            .mark_line(color=style.FIT_COLOR, strokeWidth=1.5, invalid=style.PATH_INVALID)
            .encode(
                x=alt.X("eigenvalue:Q", scale=scale, title=x_title),
                y=alt.Y("density:Q", title=y_title),
            )
        )
    marked = style.finite_rows(spikes, "eigenvalue", positive=log_x)
    if len(marked):
        layers.append(
            alt.Chart(style.inline_data(marked.loc[:, ["rank", "eigenvalue"]]))
            .mark_rule(color=style.SPIKE_COLOR, strokeWidth=1.2)
            .encode(
                x=alt.X("eigenvalue:Q", scale=scale, title=x_title),
                tooltip=[
                    alt.Tooltip("rank:Q", title="spike rank"),
                    alt.Tooltip("eigenvalue:Q", format=".4g"),
                ],
            )
        )
    for value, dash, colour, name in (
        (edge, [1, 0], style.REFERENCE_COLOR, "MP bulk edge lambda+"),
        (threshold, [5, 3], style.SPIKE_COLOR, "Tracy-Widom spike threshold"),
    ):
        if value is not None and math.isfinite(float(value)) and (float(value) > 0 or not log_x):
            layers.append(
                alt.Chart()
                .mark_rule(color=colour, strokeDash=dash, strokeWidth=1.5)
                .encode(
                    x=alt.datum(float(value)),
                    tooltip=alt.value(f"{name} = {float(value):.4g}"),
                )
            )
    notes = style.subtitle_lines(subtitle)
    if threshold is not None and math.isfinite(float(threshold)):  # no threshold, no count: not zero spikes
        notes.append(f"{len(marked)} spike(s) above the Tracy-Widom threshold (orange lines)")
    text = title or "Covariance spectrum over the fitted Marchenko-Pastur density"
    return style.finish(style.layered(*layers), style.chart_title(text, notes), width, height)


SPIKE_SHARE = 0.25
"""Share of the non-zero eigenvalues called spikes beyond which a spectrum is said not to be a
Marchenko–Pastur bulk with a few outliers (the robust fit stops at half of them)."""


def spectrum_caveat(fit) -> str | None:
    """Why a layer's spectrum cannot be read as a Marchenko–Pastur bulk plus spikes, None when it can:
    the fit did not converge (:attr:`SpectrumFit.unfitted_reason`), or more than :data:`SPIKE_SHARE` of
    the non-zero eigenvalues sit above its threshold."""
    if not fit.converged:
        return fit.unfitted_reason
    if fit.rank and fit.n_spikes > SPIKE_SHARE * fit.rank:
        return (f"{fit.n_spikes} of {fit.rank} non-zero eigenvalues above the threshold: not an MP bulk with a few "
                "spikes, so the fitted curve and the spike count do not describe this spectrum")
    return None


def spectrum_caveats(results: Mapping[str, DepthResult]) -> list[Caveat]:
    """A caution naming every layer without a usable Marchenko–Pastur fit (none if every fit is usable).

    Args:
        results: series name -> depth diagnostics: the trained model first, then its ``@random`` control when there is
            one.
    """
    trained = _trained(results)
    layers = [item.layer for item in trained.layers if spectrum_caveat(item.spectrum)]
    if not layers:
        return []
    return [Caveat(Severity.CAUTION, (
        f"Marchenko–Pastur fit not usable at layer(s) {layer_span(layers)} of {trained.model}: the fit did not "
        "converge (no sigma², edge or spike count is reported) or called more than a quarter of the non-zero "
        "eigenvalues spikes (the threshold needs many more vectors than dimensions). Spike counts there are not "
        "evidence of a 'solid' regime."))]


def spectrum_figure(results: Mapping[str, DepthResult], layer: int) -> alt.LayerChart:
    """One layer's covariance spectrum over its fitted Marchenko-Pastur density, with the spikes marked;
    a fit that did not converge, or that calls more than :data:`SPIKE_SHARE` of the eigenvalues spikes
    (:func:`spectrum_caveat`), draws no density, edge, threshold or spike and says why.

    Args:
        results: series name -> depth diagnostics: the trained model first, then its ``@random`` control when there is
            one.
        layer: the layer shown.
    """
    trained = _trained(results)
    fit = trained.diagnostics(layer).spectrum
    histogram, mp, spikes = phase_spectrum_frames(trained, layer)
    where = f"{MASSIVE_LABELS[trained.params.massive]}, layer {layer}: q = d/N = {fixed(fit.q, 2)}"
    caveat = spectrum_caveat(fit)
    if caveat is None:
        subtitle = [f"{where}, sigma² = {fixed(fit.sigma2, 4)}, bulk edge {fixed(fit.mp_edge, 4)}"]
        edge, threshold, title = fit.mp_edge, fit.spike_threshold, None
    else:
        # A fit the tool itself says does not describe the spectrum is not drawn as one.
        subtitle = [f"{where}; no sigma², bulk edge or spikes:", caveat]  # a line each: one would be cut
        edge = threshold = None
        mp, spikes = mp.iloc[0:0], spikes.iloc[0:0]
        title = ("Covariance spectrum (the Marchenko-Pastur fit does not describe it)" if fit.converged
                 else "Covariance spectrum (no Marchenko-Pastur fit)")
    return spectrum_chart(histogram, mp, spikes, edge=edge, threshold=threshold, title=title, subtitle=subtitle,
                          width="container")


# -- effective rank and participation ratio -----------------------------------------------


ISOTROPIC_SERIES = "isotropic Gaussian"


def rank_frame(results: Mapping[str, DepthResult], *, baseline: bool = True) -> pd.DataFrame:
    """Effective rank and participation ratio per layer of each series.

    With ``baseline``, rows of series :data:`ISOTROPIC_SERIES` give the Marchenko–Pastur
    expectations for isotropic Gaussian vectors of the first result's d and N per layer
    (:func:`magdash.depth_statistics.spectrum.isotropic_spectrum_baseline`). Post-norm layers (no depth
    fraction) are left out. Columns: series, layer, gamma, effective_rank, participation_ratio.
    """
    from magdash.depth_statistics.spectrum import isotropic_spectrum_baseline

    rows = []
    for series, result in results.items():
        for item in result.layers:
            if math.isfinite(item.gamma):
                rows.append(
                    {
                        "series": series,
                        "layer": item.layer,
                        "gamma": item.gamma,
                        "effective_rank": item.spectrum.effective_rank,
                        "participation_ratio": item.spectrum.participation_ratio,
                    }
                )
    if baseline and results:
        for item in next(iter(results.values())).layers:
            if math.isfinite(item.gamma):
                expected = isotropic_spectrum_baseline(item.dim, item.count)
                rows.append(
                    {
                        "series": ISOTROPIC_SERIES,
                        "layer": item.layer,
                        "gamma": item.gamma,
                        "effective_rank": expected["effective_rank"],
                        "participation_ratio": expected["participation_ratio"],
                    }
                )
    columns = ["series", "layer", "gamma", "effective_rank", "participation_ratio"]
    return pd.DataFrame(rows, columns=columns)


def rank_chart(
    frame: pd.DataFrame,
    *,
    gamma_c: float | None = None,
    gamma_c_interval: tuple[float, float] | None = None,
    log_y: bool = True,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Effective rank (Roy & Vetterli) and participation ratio against gamma, gamma_c marked.

    ``frame``: gamma, effective_rank, participation_ratio, series ("trained", "random
    control"; layer optional). Colour = series, dash = which dimension count.
    """
    style.require_columns(
        frame, ["gamma", "effective_rank", "participation_ratio", "series"], "rank_chart"
    )
    data = frame.copy()
    if "layer" not in data:
        data["layer"] = np.nan
    long = data.melt(
        id_vars=["series", "gamma", "layer"],
        value_vars=["effective_rank", "participation_ratio"],
        var_name="quantity",
        value_name="dimensions",
    )
    long["quantity"] = long["quantity"].map(
        {"effective_rank": "effective rank", "participation_ratio": "participation ratio"}
    )
    long["line"] = long["series"].astype(str) + ", " + long["quantity"]
    if log_y:
        long.loc[~(pd.to_numeric(long["dimensions"], errors="coerce") > 0), "dimensions"] = np.nan
    series = list(dict.fromkeys(long["series"].astype(str)))
    color = alt.Color("series:N", scale=style.color_scale(series, style.SERIES_COLORS), title="model")
    dash = alt.StrokeDash(
        "quantity:N",
        scale=alt.Scale(
            domain=["effective rank", "participation ratio"], range=[[1, 0], [5, 3]]
        ),
        title="quantity",
    )
    layers = style.gamma_c_layers(gamma_c, gamma_c_interval)
    profile = style.profile_layers(
        long,
        x=style.DepthAxis.of(long["gamma"], "gamma", style.GAMMA_TITLE).encoding(),
        y_field="dimensions",
        y_title="dimensions" + (" (log scale)" if log_y else ""),
        color=color,
        tooltip=[
            alt.Tooltip("series:N", title="model"),
            alt.Tooltip("quantity:N"),
            alt.Tooltip("gamma:Q", format=".3f"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("dimensions:Q", format=".2f"),
        ],
        detail="line",
        stroke_dash=dash,
        y_scale=alt.Scale(type="log") if log_y else None,
    )
    layers += profile
    text = title or f"Effective rank and participation ratio by depth ({style.GAMMA_C_NOTE})"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def rank_figure(results: Mapping[str, DepthResult]) -> alt.LayerChart:
    """Effective rank and participation ratio by depth, with gamma_c.

    Args:
        results: series name -> depth diagnostics: the trained model first, then its ``@random`` control when there is
            one.
    """
    trained = _trained(results)
    return rank_chart(
        rank_frame(results), gamma_c=trained.order.gamma_c, gamma_c_interval=_interval(trained.order),
        subtitle=f"{trained.model}, {MASSIVE_LABELS[trained.params.massive]} vectors", width="container",
    )


# -- the per-layer table ------------------------------------------------------------------


def phase_table(results: Mapping[str, DepthResult], adjusted: Mapping[str, DepthResult] | None = None) -> pd.DataFrame:
    """Every per-layer diagnostic of every series (raw, then adjusted), with the isotropic-Gaussian
    expectations; a spike count is empty where the Marchenko-Pastur fit did not converge."""
    items = list(results.items()) + list((adjusted or {}).items())
    return pd.concat(
        [layer_frame(result).assign(series=series, view=MASSIVE_LABELS[result.params.massive])
         for series, result in items],
        ignore_index=True,
    )
