"""The probes (:mod:`magdash.probes`) as figures and tables: held-out R² by layer for the real
labels, the control task, the ``@random`` control and the digit-count baseline; the selectivity; the
slope beta of the decoded magnitude's spread by layer beside what a constant-error read-out gives;
the decoded n-hat against n at one layer with the carriers' spread; SD(n-hat)/n by magnitude.
The sentences come from :mod:`magdash.probes.findings`, as the CLI's do.

Each figure's frame, chart (:mod:`magdash.presentation.chart_style`) and figure function sit
together, as in :mod:`magdash.presentation.scaling_figures`. The figures take the results by series
(``{"trained": result, "random control": control}``, the control optional), as the Depth page's do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.presentation import chart_style as style
from magdash.probes.findings import READOUTS, layer_name, probe_findings
from magdash.probes.result import ProbeResult, compare_probes

# -- series, targets, sentences and tables ------------------------------------------------


SCHEME_LABELS = {"carrier": "held-out carriers", "magnitude": "held-out magnitudes"}
"""What each cross-validation asks: a new context, or interpolation to new magnitudes."""


TARGET_LABELS = READOUTS


REAL = "real labels"


CONTROL_TASK = "control task"


RANDOM = "@random control"


BASELINE = "digit-count baseline"


SCORE_COLORS = {REAL: style.MODEL_COLORS[0], CONTROL_TASK: style.MODEL_COLORS[4],
                RANDOM: style.SERIES_COLORS["random control"], BASELINE: style.MODEL_COLORS[2]}
"""Trained model's real labels (blue), its control task (orange), the @random control's real labels
(grey), the strata's baseline on the same folds (green)."""


NULL_SUFFIX = ": constant-error read-out"
"""The series of :func:`scaling_frame` holding what a constant-error read-out gives, after the model's name."""


def _trained(results: Mapping[str, ProbeResult]) -> ProbeResult:
    if not results:
        raise AnalysisError("no probe result to show")
    return next(iter(results.values()))


def _control(results: Mapping[str, ProbeResult]) -> ProbeResult | None:
    others = list(results.values())[1:]
    return others[0] if others else None


def _require_target(result: ProbeResult, target: str) -> None:
    if target not in result.params.targets:
        raise AnalysisError(f"the probes of {result.model} read {', '.join(result.params.targets)}, not {target!r}")


def _all_layers(result: ProbeResult, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a row (numbers missing) for every layer it lacks (one left out for Inf/NaN
    vectors), so a line breaks there instead of joining its neighbours."""
    layers = result.layers.loc[:, ["layer", "label"]]
    return layers.merge(frame.drop(columns=["label"], errors="ignore"), on="layer", how="left")


def _where(result: ProbeResult, layer: int) -> str:
    return f"{layer_name(result, layer)} of {result.model}"


def best_layer(result: ProbeResult, target: str = "log") -> int:
    """The layer with the largest held-out-magnitude R² of the real-label probe of ``target`` (a
    read-out that interpolates is a magnitude code, which a memorised token identity is not; the
    first layer when none was probed): where the decoded-noise figures are drawn by default. The
    sentences name the band of layers that cannot be told from it (:meth:`ProbeResult.best_and_band`)."""
    best = result.best_and_band(target)[0]
    return int(result.layers["layer"].iloc[0]) if best is None else best


def probe_sentence(results: Mapping[str, ProbeResult], target: str = "log") -> str:
    """The band of layers that decode unseen magnitudes best and, at the best of them, the probe
    against its digit-count baseline and the decoded-noise exponent against a constant-error
    read-out and the @random control (:func:`magdash.probes.findings.probe_findings`)."""
    trained = _trained(results)
    _require_target(trained, target)
    return " ".join(probe_findings(trained, _control(results), target))


def layer_table(results: Mapping[str, ProbeResult], target: str = "log") -> pd.DataFrame:
    """One row per layer of the trained model: the basis, held-out R² across carriers (with its
    interval) and magnitudes, the magnitudes' baseline, R² within strata and whether the layer is in
    the band of best layers, the control task's across carriers and the selectivity, the direction
    against PC1, beta with its interval beside its constant-error null and p, the mean SD(n-hat)/n,
    the calibration and why there is no beta; the @random control's R² in both schemes and its beta
    when given (every score: :func:`scores_table`)."""
    trained, control = _trained(results), _control(results)
    _require_target(trained, target)
    frame = trained.layers.loc[:, ["layer", "label", "exact", "n_features"]]
    for scheme, task, columns in (("carrier", "real", ("r2", "r2_low", "r2_high")),
                                  ("magnitude", "real", ("r2", "baseline_r2", "r2_within_strata")),
                                  ("carrier", "control", ("r2",))):
        scores = trained.score_table(scheme, target, task).loc[:, ["layer", *columns]]
        scores.columns = ["layer", *(f"{name}_{scheme}_{task}" for name in columns)]
        frame = frame.merge(scores, on="layer", how="left")
    best = trained.best_layers[trained.best_layers["target"] == target]
    frame = frame.merge(best.loc[:, ["layer", "in_band"]].rename(columns={"in_band": "in_best_band"}),
                        on="layer", how="left")
    selectivity = trained.selectivity[(trained.selectivity["target"] == target)
                                      & (trained.selectivity["scheme"] == "carrier")]
    frame = frame.merge(selectivity.loc[:, ["layer", "selectivity"]].rename(columns={"selectivity": "selectivity_carrier"}),
                        on="layer", how="left")
    directions = trained.directions[trained.directions["target"] == target]
    frame = frame.merge(directions.loc[:, ["layer", "cosine_pc1", "fold_cosine"]], on="layer", how="left")
    scaling = trained.decoded_scaling[trained.decoded_scaling["target"] == target]
    frame = frame.merge(scaling.loc[:, ["layer", "beta", "beta_low", "beta_high", "beta_null", "beta_null_p",
                                        "weber_mean", "calibration", "note"]], on="layer", how="left")
    if control is not None:
        for scheme in ("carrier", "magnitude"):
            random = control.score_table(scheme, target, "real").loc[:, ["layer", "r2"]]
            frame = frame.merge(random.rename(columns={"r2": f"r2_{scheme}_random"}), on="layer", how="left")
        random_scaling = control.decoded_scaling[control.decoded_scaling["target"] == target]
        frame = frame.merge(random_scaling.loc[:, ["layer", "beta"]].rename(columns={"beta": "beta_random"}),
                            on="layer", how="left")
    return frame


def scores_table(results: Mapping[str, ProbeResult], target: str = "log") -> pd.DataFrame:
    """Every held-out score of the trained model for ``target`` (both schemes, both tasks), as stored
    but for the ridge penalty, named ``ridge_alpha`` here (``alpha`` is the scaling exponent in every
    other table)."""
    trained = _trained(results)
    _require_target(trained, target)
    chosen = trained.scores[trained.scores["target"] == target].reset_index(drop=True)
    return chosen.rename(columns={"alpha": "ridge_alpha"})


def comparison_table(results: Mapping[str, ProbeResult], target: str = "log") -> pd.DataFrame:
    """The trained model's held-out scores beside the @random control's, real labels
    (:func:`~magdash.probes.result.compare_probes`); empty without a control."""
    trained, control = _trained(results), _control(results)
    if control is None:
        return pd.DataFrame(columns=["layer", "label", "scheme", "target", "task", "r2_model", "r2_control",
                                     "r2_difference"])
    compared = compare_probes(trained, control)
    chosen = compared[(compared["target"] == target) & (compared["task"] == "real")]
    return chosen.reset_index(drop=True)


# -- held-out R² by layer -----------------------------------------------------------------


R2_FLOOR = -1.0
"""The R² axis ends here: a held-out R² far below 0 (the control task on held-out magnitudes) is drawn
at the floor, its value in the tooltip, so the informative range [0, 1] keeps the plot's height."""


def score_frame(results: Mapping[str, ProbeResult], scheme: str = "carrier", target: str = "log") -> pd.DataFrame:
    """Held-out R² by layer, long: series (real labels, control task, @random control, and the
    digit-count baseline of the real labels on the same folds, without an interval), model, layer,
    label, r2, r2_low, r2_high, spearman, error_log."""
    trained, control = _trained(results), _control(results)
    _require_target(trained, target)
    columns = ["layer", "label", "r2", "r2_low", "r2_high", "spearman", "error_log"]
    parts = [(REAL, trained, "real"), (CONTROL_TASK, trained, "control")]
    if control is not None:
        parts.append((RANDOM, control, "real"))
    frames = []
    for series, result, task in parts:
        table = result.score_table(scheme, target, task).loc[:, columns]
        frames.append(_all_layers(result, table).assign(series=series, model=result.model))
    baseline = trained.score_table(scheme, target, "real").loc[:, ["layer", "baseline_r2"]]
    baseline = baseline.rename(columns={"baseline_r2": "r2"}).assign(r2_low=np.nan, r2_high=np.nan)
    frames.append(_all_layers(trained, baseline).assign(series=BASELINE, model=trained.model))
    return pd.concat(frames, ignore_index=True)


def r2_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Held-out R² by layer with its interval, one line per series (:func:`score_frame`: layer,
    series, r2, r2_low, r2_high); dashed at 0 (the mean's score) and 1."""
    style.require_columns(frame, ["layer", "series", "r2", "r2_low", "r2_high"], "r2_chart")
    data = frame.loc[:, ["layer", "label", "series", "model", "r2", "r2_low", "r2_high"]].copy()
    values = pd.to_numeric(pd.Series(data[["r2", "r2_low", "r2_high"]].to_numpy().ravel()), errors="coerce")
    low = min(0.0, math.floor(10 * max(R2_FLOOR, float(values.min()) if values.notna().any() else 0.0)) / 10)
    notes = style.subtitle_lines(subtitle)
    if values.notna().any() and float(values.min()) < R2_FLOOR:
        notes.append(f"R² below {R2_FLOOR:g} drawn at {R2_FLOOR:g} (the tooltip has the value)")
    axis = style.DepthAxis.of(data["layer"], "layer", style.LAYER_TITLE)
    series = list(dict.fromkeys(data["series"]))
    layers: list = [style.zero_rule(0.0), style.zero_rule(1.0, dash=(2, 2))]
    layers += style.profile_layers(
        data, x=axis.encoding(), y_field="r2", y_title="held-out R²",
        color=alt.Color("series:N", scale=style.color_scale(series, SCORE_COLORS), title=None),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("model:N"), alt.Tooltip("layer:Q"), alt.Tooltip("label:N"),
                 alt.Tooltip("r2:Q", title="R²", format=".3f"), alt.Tooltip("r2_low:Q", title="CI low", format=".3f"),
                 alt.Tooltip("r2_high:Q", title="CI high", format=".3f")],
        band=("r2_low", "r2_high"), detail="series", y_scale=alt.Scale(domain=[low, 1.0], clamp=True),
    )
    text = title or "Is magnitude decodable? Held-out R² by layer"
    return style.finish(style.layered(*layers), style.chart_title(text, notes), width, height)


def r2_figure(results: Mapping[str, ProbeResult], scheme: str = "carrier", target: str = "log") -> alt.LayerChart:
    """Held-out R² by layer: the real labels, the control task and the ``@random`` control, with intervals.

    Args:
        results: the probes by series (``trained`` and, when probed, the ``random control``).
        scheme: ``carrier`` (held-out carriers) or ``magnitude`` (held-out magnitudes).
        target: the read-out, ``log`` or ``linear``.
    """
    trained = _trained(results)
    subtitle = [f"{trained.model}, {SCHEME_LABELS[scheme]}, probe of {TARGET_LABELS[target]}; bands: "
                f"{trained.params.ci:.0%} bootstrap intervals over magnitudes ({trained.params.n_boot} resamples)",
                f"{BASELINE}: each number's {trained.strata_by} alone, on the same folds"]
    return r2_chart(score_frame(results, scheme, target), subtitle=subtitle, width="container")


# -- selectivity --------------------------------------------------------------------------


def selectivity_frame(result: ProbeResult, target: str = "log") -> pd.DataFrame:
    """Real minus control-task R² by layer, long: scheme (its label), layer, label, selectivity, low, high."""
    _require_target(result, target)
    table = result.selectivity[result.selectivity["target"] == target]
    frames = []
    for scheme, label in SCHEME_LABELS.items():
        part = table[table["scheme"] == scheme].loc[:, ["layer", "selectivity", "selectivity_low", "selectivity_high"]]
        frames.append(_all_layers(result, part).assign(scheme=label))
    frame = pd.concat(frames, ignore_index=True)
    return frame.rename(columns={"selectivity_low": "low", "selectivity_high": "high"})


def selectivity_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Selectivity (real minus control-task R², each floored at 0) by layer with its paired interval,
    one line per scheme (:func:`selectivity_frame`: layer, scheme, selectivity, low, high)."""
    style.require_columns(frame, ["layer", "scheme", "selectivity", "low", "high"], "selectivity_chart")
    axis = style.DepthAxis.of(frame["layer"], "layer", style.LAYER_TITLE)
    schemes = list(dict.fromkeys(frame["scheme"]))
    layers: list = [style.zero_rule(0.0)]
    layers += style.profile_layers(
        frame.loc[:, ["layer", "label", "scheme", "selectivity", "low", "high"]], x=axis.encoding(),
        y_field="selectivity", y_title="selectivity",
        color=alt.Color("scheme:N", scale=style.color_scale(schemes, style.MODEL_COLORS), title=None),
        tooltip=[alt.Tooltip("scheme:N"), alt.Tooltip("layer:Q"), alt.Tooltip("label:N"),
                 alt.Tooltip("selectivity:Q", format=".3f"), alt.Tooltip("low:Q", title="CI low", format=".3f"),
                 alt.Tooltip("high:Q", title="CI high", format=".3f")],
        band=("low", "high"), detail="scheme", y_scale=alt.Scale(domain=[-1.0, 1.0]),
    )
    text = title or "Selectivity: real-label R² minus the control task's (Hewitt & Liang 2019)"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def selectivity_figure(results: Mapping[str, ProbeResult], target: str = "log") -> alt.LayerChart:
    """Selectivity by layer: the real labels' held-out-carrier R² less the control task's.

    Args:
        results: the probes by series (the trained model's are drawn).
        target: the read-out, ``log`` or ``linear``.
    """
    trained = _trained(results)
    subtitle = (f"{trained.model}, probe of {TARGET_LABELS[target]}; across held-out carriers it separates a "
                "magnitude code from memorised token identity")
    return selectivity_chart(selectivity_frame(trained, target), subtitle=subtitle, width="container")


# -- the decoded noise's slope beta -------------------------------------------------------


def scaling_frame(results: Mapping[str, ProbeResult], target: str = "log") -> pd.DataFrame:
    """The decoded spread's slope beta by layer, long: series (the model's name, and the model's name
    with :data:`NULL_SUFFIX` for what a constant-error read-out gives, its band the permutations'
    interval), layer, label, beta, beta_low, beta_high, weber_mean, calibration."""
    probes, nulls = [], []
    columns = ["layer", "beta", "beta_low", "beta_high", "weber_mean", "calibration"]
    for result in results.values():
        _require_target(result, target)
        table = result.decoded_scaling[result.decoded_scaling["target"] == target]
        probes.append(_all_layers(result, table.loc[:, columns]).assign(series=result.model))
        null = table.loc[:, ["layer", "beta_null", "beta_null_low", "beta_null_high"]].set_axis(
            ["layer", "beta", "beta_low", "beta_high"], axis=1).assign(weber_mean=np.nan, calibration=np.nan)
        nulls.append(_all_layers(result, null).assign(series=result.model + NULL_SUFFIX))
    return pd.concat([*probes, *nulls], ignore_index=True)


def beta_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """The slope beta of ln SD(n-hat) on ln n by layer with its interval, one line per series
    (:func:`scaling_frame`: layer, series, beta, beta_low, beta_high); the series named with
    :data:`NULL_SUFFIX` (what a constant-error read-out gives, with the permutations' interval) dashed
    in a lighter colour; a rule at 0 (a constant absolute noise)."""
    style.require_columns(frame, ["layer", "series", "beta", "beta_low", "beta_high"], "beta_chart")
    data = frame.loc[:, ["layer", "label", "series", "beta", "beta_low", "beta_high", "weber_mean"]].copy()
    is_null = data["series"].str.endswith(NULL_SUFFIX)
    data["kind"] = np.where(is_null, "constant-error read-out", "probe")
    axis = style.DepthAxis.of(data["layer"], "layer", style.LAYER_TITLE)
    series = list(dict.fromkeys(data["series"]))
    probes = iter([style.MODEL_COLORS[0], style.SERIES_COLORS["random control"]])
    nulls = iter([style.MODEL_COLORS[5], style.NULL_CONTROL_COLOR])
    colours = [next(nulls, style.REFERENCE_COLOR) if name.endswith(NULL_SUFFIX) else next(probes, style.REFERENCE_COLOR)
               for name in series]
    layers: list = [style.zero_rule(0.0)]
    layers += style.profile_layers(
        data, x=axis.encoding(), y_field="beta", y_title="beta (log-log slope)",
        color=alt.Color("series:N", scale=style.color_scale(series, colours), title=None),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("layer:Q"), alt.Tooltip("label:N"),
                 alt.Tooltip("beta:Q", format=".3f"), alt.Tooltip("beta_low:Q", title="CI low", format=".3f"),
                 alt.Tooltip("beta_high:Q", title="CI high", format=".3f"),
                 alt.Tooltip("weber_mean:Q", title="mean SD(n-hat)/n", format=".3f")],
        band=("beta_low", "beta_high"), detail="series",
        stroke_dash=alt.StrokeDash("kind:N", scale=alt.Scale(domain=["probe", "constant-error read-out"],
                                                             range=[[1, 0], [4, 3]]), legend=None),
    )
    text = title or "How the decoded magnitude's noise scales, SD(n-hat) ∝ n^beta, beside a constant-error read-out"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def beta_figure(results: Mapping[str, ProbeResult], target: str = "log") -> alt.LayerChart:
    """By layer, the slope beta of log SD(n-hat) on log n, with its interval, per series.

    Args:
        results: the probes by series.
        target: the read-out, ``log`` or ``linear``.
    """
    trained = _trained(results)
    subtitle = (f"{trained.model}, probe of {TARGET_LABELS[target]}, held-out-carrier predictions; dashed: what a "
                "read-out of constant error gives for this design (band: its permutations' interval), "
                "about 1 for any calibrated log read-out")
    return beta_chart(scaling_frame(results, target), subtitle=subtitle, width="container")


# -- the decoded magnitude at one layer ---------------------------------------------------


def decoded_frame(result: ProbeResult, layer: int, target: str = "log") -> pd.DataFrame:
    """The decoded magnitude at ``layer`` per magnitude: magnitude, mean_decoded, sd_decoded, low and
    high (mean -/+ SD over carriers), weber_fraction."""
    _require_target(result, target)
    table = result.decoded[(result.decoded["layer"] == layer) & (result.decoded["target"] == target)]
    frame = table.loc[:, ["magnitude", "mean_decoded", "sd_decoded", "weber_fraction"]].reset_index(drop=True)
    frame["low"] = frame["mean_decoded"] - frame["sd_decoded"]
    frame["high"] = frame["mean_decoded"] + frame["sd_decoded"]
    return frame


def decoded_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Mean decoded n-hat against n on log axes, a bar over mean -/+ SD across carriers, and the
    line n-hat = n (:func:`decoded_frame`: magnitude, mean_decoded, sd_decoded, low, high). Points
    and bar ends without a logarithm (<= 0) are not drawn, and the subtitle says how many."""
    style.require_columns(frame, ["magnitude", "mean_decoded", "sd_decoded", "low", "high"], "decoded_chart")
    notes = style.subtitle_lines(subtitle)
    points = style.finite_rows(frame, "magnitude", "mean_decoded", positive=True)
    if len(points) < len(frame):
        notes.append(f"{len(frame) - len(points)} magnitude(s) with mean n-hat <= 0 or none not drawn (log axes)")
    bars = points.copy()
    bars.loc[~(bars["low"] > 0), "low"] = np.nan  # a bar reaching 0 or below ends at the axis floor
    values = pd.concat([points["magnitude"], points["mean_decoded"], bars["low"], bars["high"]])
    values = values[np.isfinite(values) & (values > 0)]
    domain = [float(values.min()) / 1.2, float(values.max()) * 1.2] if len(values) else [1.0, 10.0]
    bars["low"] = bars["low"].fillna(domain[0])
    scale = alt.Scale(type="log", domain=domain, nice=False)
    x = alt.X("magnitude:Q", title="n", scale=scale)
    tooltip = [alt.Tooltip("magnitude:Q", title="n"), alt.Tooltip("mean_decoded:Q", title="mean n-hat", format=".4g"),
               alt.Tooltip("sd_decoded:Q", title="SD over carriers", format=".4g"),
               alt.Tooltip("weber_fraction:Q", title="SD / n", format=".3f")]
    identity = pd.DataFrame({"magnitude": domain, "mean_decoded": domain})
    layers = [
        alt.Chart(style.inline_data(identity)).mark_line(color=style.REFERENCE_COLOR, strokeDash=[4, 4], clip=True)
        .encode(x=x, y=alt.Y("mean_decoded:Q", scale=scale)),
        alt.Chart(style.inline_data(bars, ["magnitude", "low", "high"]))
        .mark_rule(color=style.CARRIER_COLOR, clip=True)
        .encode(x=x, y=alt.Y("low:Q", scale=scale), y2="high:Q"),
        alt.Chart(style.inline_data(points, ["magnitude", "mean_decoded", "sd_decoded", "weber_fraction"]))
        .mark_point(filled=True, size=45, color=style.MODEL_COLORS[0], invalid=style.POINT_INVALID)
        .encode(x=x, y=alt.Y("mean_decoded:Q", title="decoded n-hat (log scale)", scale=scale), tooltip=tooltip),
    ]
    text = title or "Decoded magnitude against n (bars: mean -/+ SD over held-out carriers; dashed: n-hat = n)"
    return style.finish(style.layered(*layers), style.chart_title(text, notes), width, height)


def decoded_figure(results: Mapping[str, ProbeResult], layer: int, target: str = "log") -> alt.LayerChart:
    """The decoded magnitude n-hat against n at one layer: mean and SD over the held-out carriers.

    Args:
        results: the probes by series (the trained model's are drawn).
        layer: the layer shown.
        target: the read-out, ``log`` or ``linear``.
    """
    trained = _trained(results)
    return decoded_chart(decoded_frame(trained, layer, target), subtitle=f"{_where(trained, layer)}, probe of "
                         f"{TARGET_LABELS[target]}", width="container")


def decoded_table(results: Mapping[str, ProbeResult], layer: int, target: str = "log") -> pd.DataFrame:
    """The decoded magnitude per magnitude at ``layer``, every series (model column first)."""
    frames = [decoded_frame(result, layer, target).drop(columns=["low", "high"]).assign(model=result.model)
              for result in results.values()]
    frame = pd.concat(frames, ignore_index=True)
    return frame.loc[:, ["model", "magnitude", "mean_decoded", "sd_decoded", "weber_fraction"]]


# -- the decoded Weber fraction -----------------------------------------------------------


def weber_frame(results: Mapping[str, ProbeResult], layer: int, target: str = "log") -> pd.DataFrame:
    """The spread of the decoded magnitude SD(n-hat)/n (the probe's error across carriers) at ``layer`` per
    magnitude, long: series (the model's name), magnitude, weber_fraction, sd_decoded."""
    frames = [decoded_frame(result, layer, target).loc[:, ["magnitude", "weber_fraction", "sd_decoded"]]
              .assign(series=result.model) for result in results.values()]
    return pd.concat(frames, ignore_index=True)


def weber_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """The spread of the decoded magnitude SD(n-hat)/n (the probe's error across carriers) against n on log
    axes, one line per series
    (:func:`weber_frame`: series, magnitude, weber_fraction). Flat: an error of constant ratio,
    which any log read-out of constant error gives; falling with slope -1: a constant absolute
    noise. Values <= 0 (no spread beyond rounding) are not drawn."""
    style.require_columns(frame, ["series", "magnitude", "weber_fraction"], "weber_chart")
    notes = style.subtitle_lines(subtitle)
    data = style.finite_rows(frame, "magnitude", "weber_fraction", positive=True)
    if len(data) < len(frame):
        notes.append(f"{len(frame) - len(data)} point(s) with SD(n-hat) = 0 or none not drawn (log axes)")
    series = list(dict.fromkeys(frame["series"]))
    colours = list(style.MODEL_COLORS[:1]) + [style.SERIES_COLORS["random control"]]
    color = style.solid_legend(alt.Color("series:N", scale=style.color_scale(series, colours), title="model"))
    x = alt.X("magnitude:Q", title="n", scale=alt.Scale(type="log"))
    y = alt.Y("weber_fraction:Q", title="SD(n-hat) / n (log scale)", scale=alt.Scale(type="log"))
    chart_data = style.inline_data(data, ["series", "magnitude", "weber_fraction", "sd_decoded"])
    layers = [
        alt.Chart(chart_data).mark_line(invalid=style.PATH_INVALID).encode(x=x, y=y, color=color, detail="series:N"),
        alt.Chart(chart_data).mark_point(filled=True, size=40, invalid=style.POINT_INVALID).encode(
            x=x, y=y, color=color,
            tooltip=[alt.Tooltip("series:N", title="model"), alt.Tooltip("magnitude:Q", title="n"),
                     alt.Tooltip("weber_fraction:Q", title="SD / n", format=".4f"),
                     alt.Tooltip("sd_decoded:Q", title="SD(n-hat)", format=".4g")]),
    ]
    text = title or "Decoded spread SD(n-hat)/n by magnitude (flat: the read-out errs by the same ratio at every n)"
    return style.finish(style.layered(*layers), style.chart_title(text, notes), width, height)


def weber_figure(results: Mapping[str, ProbeResult], layer: int, target: str = "log") -> alt.LayerChart:
    """The spread of the decoded magnitude SD(n-hat)/n (the probe's error across carriers) by magnitude at one
    layer, per series.

    Args:
        results: the probes by series.
        layer: the layer shown.
        target: the read-out, ``log`` or ``linear``.
    """
    trained = _trained(results)
    return weber_chart(weber_frame(results, layer, target), subtitle=f"{_where(trained, layer)}, probe of "
                       f"{TARGET_LABELS[target]}", width="container")
