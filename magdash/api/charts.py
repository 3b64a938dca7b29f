"""The charts the app draws, from the results of :mod:`magdash`: each function is the figure
function a page draws (:mod:`magdash.presentation`), so a notebook shows the same Altair chart
with the same caption. They render inline in Jupyter; ``chart.save("alpha.html")`` (or ``.png``,
``.svg``) writes one out.

Charts of a layer's vectors (the carriers' distances, the centroid RDM, PC1) take the data the
result was computed from (``data``): the :class:`~magdash.store.Store` (the result names the model
and stimuli), the :class:`~magdash.store.Activations`, or the layer's (n_magnitudes, n_carriers, d)
array.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from magdash.controls.design import DesignResult
from magdash.controls.robustness import ControlsResult
from magdash.errors import AnalysisError
from magdash.frequency.sources import FrequencySource
from magdash.phase.diagnostics import PhaseResult
from magdash.presentation import controls_figures as cf
from magdash.presentation import depth_figures as df
from magdash.presentation import frequency_figures as ff
from magdash.presentation import geometry_figures as gf
from magdash.presentation import variability_figures as vf
from magdash.store import Activations, Store
from magdash.variability.analysis import AnalysisResult
from magdash.variability.compare import ComparisonResult
from magdash.variability.measures import CARRIER_MEASURES, DEFAULT_MEASURE

# -- scaling and hypotheses ----------------------------------------------------------------------


def scaling(result: AnalysisResult, measure: str = DEFAULT_MEASURE, layer: int | None = None, data: Any = None):
    """log V against log n at one layer, with the OLS line and the alpha = 1 and alpha = 0 references
    (the Scaling page's first chart).

    Args:
        result: the analysis.
        measure: the variability measure (one the analysis computed).
        layer: the layer; default the middle of the core band.
        data: the store, activations or layer array the result came from: the carriers' own
            distances are drawn under V (for the measures whose V is their mean).
    """
    _check_measure(result, measure)
    layer = result.core_layers[len(result.core_layers) // 2] if layer is None else _check_layer(result, layer)
    vectors = _vectors(result, layer, data) if data is not None and measure in CARRIER_MEASURES else None
    return vf.scaling_figure(result, measure, layer, vectors)


def profile(result: AnalysisResult, measure: str = DEFAULT_MEASURE):
    """alpha by layer for the primary measures, with the CI band on the core layers.

    Args:
        result: the analysis.
        measure: a measure to draw beside the three primary ones.
    """
    _check_measure(result, measure)
    return vf.profile_figure(result, measure)


def weber(*results: AnalysisResult | Mapping[str, AnalysisResult], measure: str = DEFAULT_MEASURE, x: str = "layer"):
    """alpha per layer of one or several models against the Weber window (H2).

    Args:
        results: the analyses (or one mapping of name to analysis).
        measure: the measure.
        x: ``layer`` or ``gamma`` (depth l / L, for models of different depths).
    """
    return vf.weber_figure(_named(results), measure, x)


def cv(result: AnalysisResult):
    """CV(n) at the core layers (flat under Weber's law).

    Args:
        result: the analysis.
    """
    return vf.cv_figure(result)


def noise(result: AnalysisResult, measure: str = DEFAULT_MEASURE):
    """AICc of the four noise models at every core layer.

    Args:
        result: the analysis.
        measure: the measure.
    """
    _check_measure(result, measure)
    return vf.noise_figure(result, measure)


def e3(result: AnalysisResult):
    """E3: alpha without the boundary magnitudes against alpha with all.

    Args:
        result: the analysis.
    """
    return vf.e3_figure(result)


def e4(result: AnalysisResult):
    """E4: the scaling of on-axis and off-axis variance.

    Args:
        result: the analysis.
    """
    return vf.e4_figure(result)


def comparison(result: ComparisonResult, measure: str = DEFAULT_MEASURE, x: str = "layer"):
    """Both models' alpha by layer and their difference with its CI (E6).

    Args:
        result: the comparison.
        measure: a compared measure.
        x: ``layer`` or ``gamma``.
    """
    if measure not in result.measures:
        raise AnalysisError(f"measure {measure!r} was not compared; the comparison has {', '.join(result.measures)}")
    return vf.compare_figure(result, measure, x)


def massive_control(raw: AnalysisResult, dropped: AnalysisResult, measure: str = DEFAULT_MEASURE):
    """alpha by layer with the massive dimensions kept and dropped
    (``magdash.analyze(..., massive="drop")`` gives the second).

    Args:
        raw: the analysis of the raw vectors.
        dropped: the analysis without the massive dimensions.
        measure: the measure.
    """
    return vf.massive_control_figure(raw, dropped, measure)


# -- geometry ------------------------------------------------------------------------------------


def rsa(result: AnalysisResult, metric: str = "euclidean"):
    """RSA by layer: the centroid RDM against the log-ratio and linear models (Cacioli, arXiv 2603.20642).

    Args:
        result: the analysis.
        metric: the RDM's distance, ``euclidean`` or ``cosine``.
    """
    return gf.rsa_figure(result, metric)


def rdm(result: AnalysisResult, layer: int, data: Any, metric: str = "euclidean"):
    """The centroid RDM of one layer as a heatmap.

    Args:
        result: the analysis.
        layer: the layer.
        data: the store, activations or layer array the result came from.
        metric: ``euclidean`` or ``cosine``.
    """
    layer = _check_layer(result, layer)
    return gf.rdm_figure(result, _vectors(result, layer, data), layer, metric)


def pc1(result: AnalysisResult, layer: int, data: Any):
    """The centroids' first principal coordinate against log n at one layer.

    Args:
        result: the analysis.
        layer: the layer.
        data: the store, activations or layer array the result came from.
    """
    layer = _check_layer(result, layer)
    return gf.pc1_figure(result, _vectors(result, layer, data), layer)


# -- controls and design -------------------------------------------------------------------------


def loo(result: ControlsResult, measure: str = DEFAULT_MEASURE):
    """alpha by layer without each carrier, against alpha with all.

    Args:
        result: the controls.
        measure: the measure.
    """
    return cf.loo_figure(result, measure)


def icc(result: ControlsResult):
    """ICC(3,k) of the carriers' RDMs by layer.

    Args:
        result: the controls.
    """
    return cf.icc_figure(result)


def permutation(result: ControlsResult, measure: str = DEFAULT_MEASURE):
    """Permutation p of alpha by layer beside the parametric p.

    Args:
        result: the controls.
        measure: the measure.
    """
    return cf.permutation_figure(result, measure)


def variant(result: ControlsResult, name: str | None = None, measure: str = DEFAULT_MEASURE):
    """The model against one variant, or its ``@random`` control.

    Args:
        result: the controls.
        name: a variant's name, or the control's; default the first compared.
        measure: the measure.
    """
    compared = cf.compared(result)
    if not compared:
        raise AnalysisError("no variant or @random control was compared: store or pass one")
    name = compared[0] if name is None else name
    if name not in compared:
        raise AnalysisError(f"{name!r} was not compared; these were: {', '.join(compared)}")
    return cf.variant_figure(result, name, measure)


def h1_power(result: DesignResult):
    """Power of H1 against the true alpha, nominal and size-adjusted.

    Args:
        result: the design.
    """
    return cf.h1_figure(result)


def e6_power(result: DesignResult):
    """Power of E6 (two models' alphas) against the true difference.

    Args:
        result: the design.
    """
    return cf.e6_figure(result)


def ci_width(result: DesignResult):
    """The CI half-width of the mean core alpha as magnitudes, carriers and layers vary.

    Args:
        result: the design.
    """
    return cf.ci_width_figure(result)


# -- depth ---------------------------------------------------------------------------------------


def order(result: PhaseResult, control: PhaseResult | None = None, adjusted: PhaseResult | None = None):
    """The order parameter m(gamma) (mean Omega by depth) with gamma_c, against the random-weight control.

    Args:
        result: the trained model's diagnostics.
        control: its ``@random`` control's.
        adjusted: the same diagnostics without the massive dimensions
            (``magdash.depth(..., massive="drop")``), drawn dashed.
    """
    return df.order_figure(_series(result, control), None if adjusted is None else _series(adjusted))


def omega(result: PhaseResult, control: PhaseResult | None = None):
    """Omega by layer, as a heatmap of its distribution.

    Args:
        result: the trained model's diagnostics.
        control: its ``@random`` control's.
    """
    return df.omega_figure(_series(result, control))


def spectrum(result: PhaseResult, layer: int, control: PhaseResult | None = None):
    """One layer's covariance spectrum against the fitted Marchenko–Pastur law.

    Args:
        result: the trained model's diagnostics.
        layer: the layer.
        control: its ``@random`` control's.
    """
    return df.spectrum_figure(_series(result, control), layer)


def rank(result: PhaseResult, control: PhaseResult | None = None):
    """Effective rank and participation ratio by depth, against the isotropic baseline.

    Args:
        result: the trained model's diagnostics.
        control: its ``@random`` control's.
    """
    return df.rank_figure(_series(result, control))


# -- frequency -----------------------------------------------------------------------------------


def e5(table: pd.DataFrame):
    """E5 by layer: the partial Spearman rho of V with log(count + 1) given log n and the raw rho, with their intervals.

    Args:
        table: :func:`magdash.e5`'s table.
    """
    return ff.frequency_rho_figure(table)


def frequency(result: AnalysisResult, source: FrequencySource, table: pd.DataFrame, layer: int | None = None,
              measure: str = DEFAULT_MEASURE, missing: str = "error"):
    """V at one layer against the numbers' corpus counts (E5's points).

    Args:
        result: the analysis.
        source: the frequency source (:func:`magdash.frequency_source`).
        table: :func:`magdash.e5`'s table for the same model, source and measure.
        layer: the layer; default the middle of the core band.
        measure: the measure.
        missing: what a magnitude without a count is: ``error`` or ``zero``.
    """
    _check_measure(result, measure)
    layer = result.core_layers[len(result.core_layers) // 2] if layer is None else _check_layer(result, layer)
    frame = ff.frequency_scatter_frame(result, source, measure, layer, missing)
    return ff.frequency_scatter_figure(frame, table, layer, result.layer_labels[layer])


def frequency_counts(source: FrequencySource):
    """A source's counts of 1..N on log-log axes with the power-law and exponential fits.

    Args:
        source: the frequency source.
    """
    return ff.frequency_counts_figure(source)


# -- arguments -----------------------------------------------------------------------------------


def _check_measure(result: AnalysisResult, measure: str) -> None:
    if measure not in result.values or measure not in result.params.measures:
        raise AnalysisError(f"measure {measure!r} was not analysed; the analysis has {', '.join(result.params.measures)}")


def _check_layer(result: AnalysisResult, layer: int) -> int:
    if not isinstance(layer, (int, np.integer)) or not 0 <= layer < result.n_layers:
        raise AnalysisError(f"no layer {layer!r}: {result.model or 'the model'} has layers 0..{result.n_layers - 1}")
    return int(layer)


def _vectors(result: AnalysisResult, layer: int, data: Any) -> np.ndarray:
    """The layer's vectors from the data the result came from."""
    if isinstance(data, Store):
        return data.read_layer(result.model, result.stimuli, layer).vectors
    vectors = data.layer(layer) if isinstance(data, Activations) else np.asarray(data)
    if vectors.ndim != 3 or vectors.shape[0] != result.magnitudes.size:
        raise AnalysisError(
            f"the layer's vectors have shape {vectors.shape}: give the store, the activations or the layer's "
            f"({result.magnitudes.size}, n_carriers, d) array the result came from"
        )
    return vectors


def _named(results: tuple) -> dict[str, AnalysisResult]:
    if len(results) == 1 and isinstance(results[0], Mapping):
        return dict(results[0])
    named = {}
    for result in results:
        if not isinstance(result, AnalysisResult):
            raise AnalysisError(f"give analyses (AnalysisResult), got {type(result).__name__}")
        named[result.model or f"model {len(named) + 1}"] = result
    if not named:
        raise AnalysisError("give at least one analysis")
    return named


def _series(result: PhaseResult, control: PhaseResult | None = None) -> dict[str, PhaseResult]:
    """The series as the Depth page names them: the trained model, then its control."""
    from magdash.dashboard.keys import CONTROL_SERIES, TRAINED_SERIES

    return {TRAINED_SERIES: result, **({CONTROL_SERIES: control} if control is not None else {})}
