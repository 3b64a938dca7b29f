"""A model's number comparisons (issue 41, the paper's Paradigm B) as figures: the psychometric
curves per reference, the Weber fraction against the reference with the Weber-law line, the
position bias per reference, and the behavioural Weber fraction beside a representational measure.

The figures read the result frames of :mod:`magdash.behaviour` (``cells``, ``fits``, ``curves``,
``weber_law``, ``position_bias``; the columns are listed in :class:`BehaviourFrames`), for one task
(the prompt template), one variant (``"choice"``: the chosen options; ``"graded"``: the logit
difference) and one set of conventions (``"magdash"`` or ``"paper"``). The data points are the
position-corrected accuracy of each reference x ratio cell (the mean of the A-correct and B-correct
accuracies) with a 95% Wilson score interval on the cell's measured trials (Wilson 1927; the
interval of a binomial rate that keeps its coverage near 0 and 1, where the Wald interval does not).

Each figure's frame, chart (:mod:`magdash.presentation.chart_style`) and figure function sit
together, as in :mod:`magdash.presentation.probe_figures`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import altair as alt
import numpy as np
import pandas as pd

from magdash.behaviour.psychometric import STATUS_CHANCE
from magdash.controls_statistics.design import wilson
from magdash.errors import AnalysisError
from magdash.presentation import chart_style as style
from magdash.variability.analysis import AnalysisResult

CHANCE = 0.5
"""The accuracy of a guess between two options, and P(choose A) without a position bias."""


VARIANT_LABELS = {"choice": "chosen option", "graded": "logit difference (graded)"}
"""What each variant of the psychometric fit is fitted to."""


CONVENTION_LABELS = {"magdash": "magdash conventions: 0.5 + (0.5 - λ) Φ",
                     "paper": "the paper's conventions: λ/2 + (1 - λ) Φ"}
"""The two psychometric functions (docs/behaviour.md has their starts, bounds and bootstraps)."""


INSIDE = "inside the tested ratios"


BELOW = "below the tested ratios"


ABOVE = "above the tested ratios"


UNDEFINED = "undefined"


PLACEMENT_SHAPES = {INSIDE: "circle", BELOW: "triangle-down", ABOVE: "triangle-up"}
"""How a Weber fraction is marked: a threshold beyond the tested ratios is drawn at the design's
edge as a triangle pointing where it lies, never as a number the design cannot give."""


class BehaviourFrames(Protocol):
    """What the figures read of a behaviour result (:mod:`magdash.behaviour`'s result): the
    model's name and its five frames.

    - ``cells``: task, reference, ratio, n_a, n_b, accuracy_a, accuracy_b, accuracy, bias, n_unanswered
    - ``fits``: task, reference, variant, conventions, mu, sigma, lapse, weber_fraction, wf_low,
      wf_high, in_range, status, n_trials
    - ``curves``: task, reference, variant, conventions, ratio, p
    - ``weber_law``: task, variant, conventions, slope, low, high, n_references, status
    - ``position_bias``: task, reference, p_choose_a, bias, low, high
    """

    @property
    def model(self) -> str: ...

    @property
    def cells(self) -> pd.DataFrame: ...

    @property
    def fits(self) -> pd.DataFrame: ...

    @property
    def curves(self) -> pd.DataFrame: ...

    @property
    def weber_law(self) -> pd.DataFrame: ...

    @property
    def position_bias(self) -> pd.DataFrame: ...


def _chosen(frame: pd.DataFrame, what: str, **where: str) -> pd.DataFrame:
    """The rows of ``frame`` matching every ``column=value`` of ``where``; a clear message when none does."""
    keep = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        keep &= (frame[column] == value).to_numpy()
    rows = frame[keep].reset_index(drop=True)
    if rows.empty:
        asked = ", ".join(f"{column}={value!r}" for column, value in where.items())
        raise AnalysisError(f"no {what} for {asked}")
    return rows


def reference_label(reference: float) -> str:
    """A reference as the legends and sentences name it ("reference 100")."""
    return f"reference {reference:g}"


def _reference_order(references: pd.Series) -> list[str]:
    return [reference_label(value) for value in sorted(set(references.astype(float)))]


def tested_ratios(cells: pd.DataFrame, task: str) -> tuple[float, float]:
    """The smallest and largest ratio of ``task``'s cells: a threshold outside them is not measured by the design."""
    ratios = _chosen(cells, "cells", task=task)["ratio"].astype(float)
    return float(ratios.min()), float(ratios.max())


# -- the sentences beside the figures -----------------------------------------------------------


def unmeasured_sentence(result: BehaviourFrames, task: str, min_option_mass: float) -> str | None:
    """"N of M trials not measured: the model put under X of its probability on the two options",
    or None when every trial of ``task`` was measured.

    Args:
        result: the behaviour result.
        task: the prompt template's name.
        min_option_mass: the least probability on the two options for a trial to count.
    """
    cells = result.cells[result.cells["task"] == task]
    unmeasured = int(cells["n_unanswered"].sum())
    if unmeasured == 0:
        return None
    total = unmeasured + int(cells["n_a"].sum() + cells["n_b"].sum())
    return (f"{unmeasured:,} of {total:,} trials of {result.model} ({task}) not measured: the model put under "
            f"{min_option_mass:.0%} of its probability on the two options, so they are left out of the fits.")


NOTHING_MEASURED = ("No trial of {model} ({task}) was measured, so there is nothing to fit or draw: the model put "
                    "under {mass:.0%} of its probability on the two answer options in every one. A model with random "
                    "weights does (the options are two tokens of its whole vocabulary). To measure such trials anyway, "
                    "fit them with min_option_mass=0 (`magdash behave --min-option-mass 0`, `md.behave(..., "
                    "min_option_mass=0)`): a random-weight control must then come out at chance.")
"""What the page and the report say where every trial of a task was left unmeasured (its fits and figures
would be empty)."""


def measured_trials(result: BehaviourFrames, task: str) -> int:
    """How many trials of ``task`` were measured (their option mass reached ``min_option_mass``)."""
    cells = result.cells[result.cells["task"] == task]
    return int(cells["n_a"].sum() + cells["n_b"].sum())


def nothing_measured_message(result: BehaviourFrames, task: str, min_option_mass: float) -> str:
    """What the page and the report say where no trial of ``task`` was measured (:data:`NOTHING_MEASURED`).

    Args:
        result: the behaviour result.
        task: the prompt template's name.
        min_option_mass: the least probability on the two options for a trial to count.
    """
    return NOTHING_MEASURED.format(model=result.model, task=task, mass=min_option_mass)


def position_bias_sentence(result: BehaviourFrames, task: str) -> str:
    """Where the model chooses one position more often than the other whatever the numbers (the
    interval of P(choose A) excludes 0.5), and that accuracy is corrected for it.

    Args:
        result: the behaviour result.
        task: the prompt template's name.
    """
    bias = bias_frame(result, task)
    biased = bias[(bias["low"] > 0.5) | (bias["high"] < 0.5)]
    if biased.empty:
        return (f"{result.model} ({task}) shows no position bias its intervals can tell from chance: P(choose A) "
                "is within reach of 0.5 at every reference.")
    parts = [f"{reference_label(float(reference))}: P(choose A) {float(p):.2f} [{float(low):.2f}, {float(high):.2f}]"
             for reference, p, low, high in zip(biased["reference"], biased["p_choose_a"], biased["low"],
                                                biased["high"], strict=True)]
    return (f"{result.model} ({task}) prefers one position whatever the numbers at {len(parts)} of {len(bias)} "
            f"references ({'; '.join(parts)}). Accuracy is corrected for it: the mean of the A-correct and "
            "B-correct accuracies.")


def outside_range_sentences(result: BehaviourFrames, task: str, variant: str = "choice",
                            conventions: str = "magdash") -> list[str]:
    """One sentence per reference whose Weber fraction is not inside the tested ratios: its threshold
    below or above them (shown at the design's edge, never as a negative fraction), or none at all.

    Args:
        result: the behaviour result.
        task: the prompt template's name.
        variant: ``choice`` or ``graded``.
        conventions: ``magdash`` or ``paper``.
    """
    fits = result.fits
    if not ((fits["task"] == task) & (fits["variant"] == variant) & (fits["conventions"] == conventions)).any():
        return []
    frame = weber_frame(result, task, variant, conventions)
    low, high = tested_ratios(result.cells, task)
    sentences = []
    for reference, value, placement, status in zip(frame["reference"], frame["weber_fraction"], frame["placement"],
                                                   frame["status"], strict=True):
        where = reference_label(float(reference)).capitalize()
        if placement == UNDEFINED:
            sentences.append(f"{where}: no Weber fraction ({status}).")
        elif placement != INSIDE:
            value = float(value)
            number = f"Weber fraction {value:.3f} from the fit" if math.isfinite(value) else "no Weber fraction"
            said = "" if status == placement else f"; {status}"
            sentences.append(f"{where}: the fitted threshold is {placement} {low:g}-{high:g} ({number}{said}), "
                             "which the design does not measure; it is shown at the edge, not as a number.")
    return sentences


# -- psychometric curves per reference --------------------------------------------------------


POINT_SPREAD = 1.01
"""The factor between the drawn ratios of neighbouring references' points at one ratio: the five
references' points and bars at ratio 1.05 sit side by side (about 1.03 to 1.07) rather than on one
another, and clear of the next ratio's. The tooltip and the CSV give the true ratio."""


def points_frame(result: BehaviourFrames, task: str) -> pd.DataFrame:
    """The data points of the psychometric curves: per reference x ratio cell the position-corrected
    accuracy with its 95% Wilson interval on the cell's measured trials (n_a + n_b). Columns:
    reference, series (its label), ratio, drawn_ratio (where the point is drawn: the ratio spread by
    :data:`POINT_SPREAD` per reference around it), accuracy, low, high, n, accuracy_a, accuracy_b, bias."""
    cells = _chosen(result.cells, "cells", task=task)
    n = (cells["n_a"] + cells["n_b"]).astype(int).to_numpy()
    accuracy = cells["accuracy"].astype(float).to_numpy()
    bounds = [wilson(rate * count, int(count)) if count > 0 else (np.nan, np.nan)
              for rate, count in zip(accuracy, n, strict=True)]
    frame = cells.loc[:, ["reference", "ratio", "accuracy", "accuracy_a", "accuracy_b", "bias"]].copy()
    frame["low"] = [float(low) for low, _ in bounds]
    frame["high"] = [float(high) for _, high in bounds]
    frame["n"] = n
    frame["series"] = frame["reference"].astype(float).map(reference_label)
    references = sorted(set(frame["reference"].astype(float)))
    rank = frame["reference"].astype(float).map({reference: i for i, reference in enumerate(references)})
    frame["drawn_ratio"] = frame["ratio"].astype(float) * POINT_SPREAD ** (rank.astype(float) - (len(references) - 1) / 2)
    return frame


def curve_frame(result: BehaviourFrames, task: str, variant: str = "choice", conventions: str = "magdash") -> pd.DataFrame:
    """The fitted psychometric functions on their grid of ratios: reference, series, ratio, p."""
    curves = _chosen(result.curves, "fitted curves", task=task, variant=variant, conventions=conventions)
    frame = curves.loc[:, ["reference", "ratio", "p"]].copy()
    frame["series"] = frame["reference"].astype(float).map(reference_label)
    return frame


def psychometric_chart(
    points: pd.DataFrame,
    curves: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """P(correct) against the ratio on a log axis, one colour per reference: the fitted function as
    a line (:func:`curve_frame`: series, ratio, p), the data points with their intervals
    (:func:`points_frame`: series, ratio, accuracy, low, high, n), a dashed line at chance (0.5)."""
    style.require_columns(points, ["series", "ratio", "accuracy", "low", "high", "n"], "psychometric_chart")
    style.require_columns(curves, ["series", "ratio", "p"], "psychometric_chart")
    order = list(dict.fromkeys([*curves.sort_values("reference")["series"], *points.sort_values("reference")["series"]]))
    color = style.solid_legend(alt.Color("series:N", scale=style.color_scale(order, style.MODEL_COLORS), title=None,
                                         sort=order))
    drawn_at = "drawn_ratio" if "drawn_ratio" in points else "ratio"  # points spread by reference, or at their ratio
    ratios = pd.concat([points[drawn_at], curves["ratio"]]).astype(float)
    scale = alt.Scale(type="log", domain=[float(ratios.min()), float(ratios.max())], nice=False)
    x = alt.X("ratio:Q", title="ratio (log scale)", scale=scale)
    x_points = alt.X(f"{drawn_at}:Q", title="ratio (log scale)", scale=scale)
    y_scale = alt.Scale(domain=[0.0, 1.0])
    layers = [
        style.zero_rule(CHANCE),
        alt.Chart(style.inline_data(curves, ["series", "ratio", "p"])).mark_line(invalid=style.PATH_INVALID).encode(
            x=x, y=alt.Y("p:Q", title="P(correct)", scale=y_scale), color=color, detail="series:N"),
        alt.Chart(style.inline_data(points, ["series", "ratio", drawn_at, "low", "high"])).mark_rule(opacity=0.6).encode(
            x=x_points, y=alt.Y("low:Q", scale=y_scale), y2="high:Q", color=color),
        alt.Chart(style.inline_data(points, list(dict.fromkeys(["series", "ratio", drawn_at, "accuracy", "low", "high",
                                                                "n", "bias"]))))
        .mark_point(filled=True, size=40, invalid=style.POINT_INVALID).encode(
            x=x_points, y=alt.Y("accuracy:Q", title="P(correct)", scale=y_scale), color=color,
            tooltip=[alt.Tooltip("series:N", title=""), alt.Tooltip("ratio:Q", format=".2f"),
                     alt.Tooltip("accuracy:Q", title="accuracy (position-corrected)", format=".3f"),
                     alt.Tooltip("low:Q", title="CI low", format=".3f"), alt.Tooltip("high:Q", title="CI high", format=".3f"),
                     alt.Tooltip("n:Q", title="trials"),
                     alt.Tooltip("bias:Q", title="A-correct minus B-correct accuracy", format=".3f")]),
    ]
    text = title or "Psychometric curves: P(correct) against the ratio, per reference (dashed: chance)"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def psychometric_figure(result: BehaviourFrames, task: str, variant: str = "choice",
                        conventions: str = "magdash") -> alt.LayerChart:
    """The psychometric curves of one task, per reference: the fitted function and the data points.

    Args:
        result: the behaviour result of one model (:class:`BehaviourFrames`).
        task: the prompt template's name.
        variant: ``choice`` or ``graded``.
        conventions: ``magdash`` or ``paper``.
    """
    subtitle = [f"{result.model}, task {task}, fitted to the {VARIANT_LABELS[variant]}; {CONVENTION_LABELS[conventions]}",
                "points: accuracy corrected for position bias (mean of the A-correct and B-correct accuracies)",
                "bars: 95% Wilson intervals on the cell's measured trials; a ratio's points spread slightly by reference"]
    return psychometric_chart(points_frame(result, task), curve_frame(result, task, variant, conventions),
                              subtitle=subtitle, width="container")


# -- the Weber fraction against the reference ---------------------------------------------------


def weber_frame(result: BehaviourFrames, task: str, variant: str = "choice", conventions: str = "magdash") -> pd.DataFrame:
    """The Weber fraction per reference and where it is drawn: reference, weber_fraction, wf_low,
    wf_high, status, placement (:data:`INSIDE`, :data:`BELOW`, :data:`ABOVE` or :data:`UNDEFINED`),
    drawn (the value on the log axis: the fraction itself inside the tested ratios, the design's edge
    beyond them, none when undefined) and the interval's ends where they can be drawn (an infinite end at
    the design's edge). Where the fits
    give no fraction but a threshold ratio r* (a ``threshold`` column: magdash's conventions leave the
    fraction of a threshold below ratio 1 or above the design undefined), r* says on which side it lies."""
    fits = _chosen(result.fits, "fits", task=task, variant=variant, conventions=conventions)
    low_ratio, high_ratio = tested_ratios(result.cells, task)
    floor, ceiling = low_ratio - 1.0, high_ratio - 1.0
    frame = fits.loc[:, ["reference", "weber_fraction", "wf_low", "wf_high", "status"]].copy()
    values = frame["weber_fraction"].astype(float).to_numpy()
    inside = fits["in_range"].astype(bool).to_numpy() & np.isfinite(values)
    side = values.copy()  # the fraction, or r* - 1 where only the threshold is known
    if "threshold" in fits:
        side = np.where(np.isfinite(side), side, fits["threshold"].astype(float).to_numpy() - 1.0)
    # A fit at chance has a threshold only as an optimiser's end point: no side to draw it on.
    side = np.where(fits["status"].astype(str).to_numpy() == STATUS_CHANCE, np.nan, side)
    with np.errstate(invalid="ignore"):
        placement = np.where(inside, INSIDE, np.where(~np.isfinite(side), UNDEFINED,
                                                      np.where(side < floor, BELOW, ABOVE)))
    frame["placement"] = placement
    frame["drawn"] = np.select([placement == INSIDE, placement == BELOW, placement == ABOVE],
                               [values, floor, ceiling], default=np.nan)
    for column in ("wf_low", "wf_high"):
        # An infinite end (resamples without a threshold in reach) is drawn to the design's edge, as a
        # fraction beyond it is; only a missing end leaves the interval undrawn.
        ends = frame[column].astype(float).to_numpy()
        frame[f"{column}_drawn"] = np.where(inside & ~np.isnan(ends), np.clip(ends, floor, ceiling), np.nan)
    return frame


def fits_table(result: BehaviourFrames, task: str, variant: str = "choice", conventions: str = "magdash") -> pd.DataFrame:
    """The psychometric fit per reference as the page and the report show it: reference, the Weber
    fraction with its interval (``behaviour_wf``: the fits' ``weber_fraction``, renamed, since a probe's
    ``weber_fraction`` is its decoded spread), where its threshold lies against the tested ratios, the
    status, then the fit's mu, sigma and lapse and the measured trials (the fraction first: a narrow
    window shows it without scrolling)."""
    fits = _chosen(result.fits, "fits", task=task, variant=variant, conventions=conventions)
    frame = fits.loc[:, ["reference", "weber_fraction", "wf_low", "wf_high", "status", "mu", "sigma", "lapse",
                         "n_trials"]].rename(columns={"weber_fraction": "behaviour_wf", "wf_low": "behaviour_wf_low",
                                                      "wf_high": "behaviour_wf_high"})
    frame.insert(4, "placement", weber_frame(result, task, variant, conventions)["placement"].to_numpy())
    return frame.reset_index(drop=True)


REFERENCE_MARGIN = 1.3
"""How far the reference axis reaches beyond the first and last reference (a factor on the log axis), so
their points and triangles are drawn whole rather than cut in half by the plot's edge."""


LOG_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)
"""The Weber-fraction axis' ticks, 1-2-5 per decade (Vega's own log ticks leave some decades unlabelled
and draw a grid line at every minor tick); those outside the drawn range are not shown."""


def reference_axis(references: pd.Series) -> alt.X:
    """The reference on a log x axis reaching :data:`REFERENCE_MARGIN` beyond the references shown."""
    values = references.astype(float)
    values = values[np.isfinite(values) & (values > 0)]
    scale = alt.Scale(type="log") if values.empty else alt.Scale(
        type="log", domain=[float(values.min()) / REFERENCE_MARGIN, float(values.max()) * REFERENCE_MARGIN], nice=False)
    return alt.X("reference:Q", title="reference (log scale)", scale=scale)


def weber_law_line(frame: pd.DataFrame) -> pd.DataFrame:
    """Weber's law through the fractions inside the tested ratios: a constant Weber fraction, their
    geometric mean, across the references (reference, drawn); empty when none is inside."""
    inside = frame[frame["placement"] == INSIDE]
    if inside.empty:
        return pd.DataFrame({"reference": pd.Series(dtype=float), "drawn": pd.Series(dtype=float)})
    level = float(np.exp(np.mean(np.log(inside["weber_fraction"].astype(float)))))
    references = frame["reference"].astype(float)
    return pd.DataFrame({"reference": [float(references.min()), float(references.max())], "drawn": [level, level]})


def weber_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """The Weber fraction against the reference on log-log axes (:func:`weber_frame`: reference,
    drawn, placement, wf_low_drawn, wf_high_drawn, weber_fraction, status): points with their
    intervals inside the tested ratios, triangles at the design's edge beyond them, the Weber-law
    line (a constant fraction, dashed); an undefined fraction is not drawn and the subtitle says so."""
    style.require_columns(frame, ["reference", "drawn", "placement", "wf_low_drawn", "wf_high_drawn",
                                  "weber_fraction", "status"], "weber_chart")
    notes = style.subtitle_lines(subtitle)
    undefined = frame[frame["placement"] == UNDEFINED]
    if len(undefined):
        notes.append("not drawn (no Weber fraction): " + ", ".join(
            f"{reference_label(reference)} ({status})"
            for reference, status in zip(undefined["reference"].astype(float), undefined["status"], strict=True)))
    drawn = frame[frame["placement"] != UNDEFINED]
    x = reference_axis(frame["reference"])
    y = alt.Y("drawn:Q", title="Weber fraction (log scale)", scale=alt.Scale(type="log"),
              axis=alt.Axis(values=list(LOG_TICKS), grid=True))
    placements = [name for name in PLACEMENT_SHAPES if name in set(drawn["placement"])]
    shape = alt.Shape("placement:N", title=None, scale=alt.Scale(domain=placements,
                                                                 range=[PLACEMENT_SHAPES[p] for p in placements]))
    line = weber_law_line(frame)
    layers: list = []
    if len(line):
        layers.append(alt.Chart(style.inline_data(line)).mark_line(color=style.REFERENCE_COLOR, strokeDash=[4, 4])
                      .encode(x=x, y=y, tooltip=alt.value(f"Weber's law: a constant Weber fraction "
                                                          f"({float(line['drawn'].iloc[0]):.3f})")))
    layers += [
        alt.Chart(style.inline_data(drawn, ["reference", "wf_low_drawn", "wf_high_drawn"]))
        .mark_rule(color=style.MODEL_COLORS[0]).encode(x=x, y=alt.Y("wf_low_drawn:Q", scale=alt.Scale(type="log")),
                                                       y2="wf_high_drawn:Q"),
        alt.Chart(style.inline_data(drawn, ["reference", "drawn", "placement", "weber_fraction", "wf_low", "wf_high",
                                            "status"]))
        .mark_point(filled=True, size=70, color=style.MODEL_COLORS[0], invalid=style.POINT_INVALID).encode(
            x=x, y=y, shape=shape,
            tooltip=[alt.Tooltip("reference:Q"), alt.Tooltip("weber_fraction:Q", title="Weber fraction", format=".3f"),
                     alt.Tooltip("wf_low:Q", title="CI low", format=".3f"),
                     alt.Tooltip("wf_high:Q", title="CI high", format=".3f"),
                     alt.Tooltip("placement:N", title="threshold"), alt.Tooltip("status:N")]),
    ]
    text = title or "Weber fraction against the reference (dashed: Weber's law, a constant fraction)"
    return style.finish(style.layered(*layers), style.chart_title(text, notes), width, height)


def slope_sentence(result: BehaviourFrames, task: str, variant: str = "choice", conventions: str = "magdash") -> str:
    """The slope of log Weber fraction on log reference with its interval and how many references it
    rests on (0: Weber's law), or why there is none."""
    row = _chosen(result.weber_law, "Weber-law slope", task=task, variant=variant, conventions=conventions).iloc[0]
    slope, low, high = float(row["slope"]), float(row["low"]), float(row["high"])
    count = int(row["n_references"])
    if not math.isfinite(slope):
        return f"no slope of log WF on log reference: {row['status']} ({count} reference(s) with a Weber fraction)"
    interval = f" [{low:.2f}, {high:.2f}]" if math.isfinite(low) and math.isfinite(high) else ""
    return (f"slope of log WF on log reference {slope:.2f}{interval} over {count} references "
            f"(0: Weber's law; {row['status']})")


def weber_figure(result: BehaviourFrames, task: str, variant: str = "choice", conventions: str = "magdash") -> alt.LayerChart:
    """The behavioural Weber fraction per reference with its interval, and the Weber-law line.

    Args:
        result: the behaviour result of one model (:class:`BehaviourFrames`).
        task: the prompt template's name.
        variant: ``choice`` or ``graded``.
        conventions: ``magdash`` or ``paper``.
    """
    low, high = tested_ratios(result.cells, task)
    subtitle = [f"{result.model}, task {task}, {VARIANT_LABELS[variant]}; "
                + slope_sentence(result, task, variant, conventions),
                f"triangles: a threshold beyond the tested ratios {low:g}-{high:g}, drawn at the design's edge"]
    return weber_chart(weber_frame(result, task, variant, conventions), subtitle=subtitle, width="container")


# -- position bias ------------------------------------------------------------------------------


def bias_frame(result: BehaviourFrames, task: str) -> pd.DataFrame:
    """P(choose A) per reference with its interval: reference, p_choose_a, bias, low, high.

    The fits' ``position_bias`` frame gives the interval of the bias (A-correct minus B-correct
    accuracy, 0 without a bias); with the larger number in A in half the trials, P(choose A) =
    (1 + bias) / 2, so ``low`` and ``high`` here are that interval on P(choose A)'s scale, where the
    chart draws it and 0.5 means no bias."""
    bias = _chosen(result.position_bias, "position bias", task=task)
    frame = bias.loc[:, ["reference", "p_choose_a", "bias", "low", "high"]].reset_index(drop=True)
    frame["low"] = (1.0 + frame["low"].astype(float)) / 2.0
    frame["high"] = (1.0 + frame["high"].astype(float)) / 2.0
    return frame


def bias_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """P(choose A) against the reference (log axis) with its interval (:func:`bias_frame`:
    reference, p_choose_a, low, high, bias); dashed at 0.5, where a model without a position bias lies."""
    style.require_columns(frame, ["reference", "p_choose_a", "low", "high"], "bias_chart")
    x = reference_axis(frame["reference"])
    y_scale = alt.Scale(domain=[0.0, 1.0])
    data = style.inline_data(frame, ["reference", "p_choose_a", "bias", "low", "high"])
    layers = [
        style.zero_rule(CHANCE),
        alt.Chart(data).mark_rule(color=style.MODEL_COLORS[1]).encode(
            x=x, y=alt.Y("low:Q", scale=y_scale), y2="high:Q"),
        alt.Chart(data).mark_point(filled=True, size=60, color=style.MODEL_COLORS[1], invalid=style.POINT_INVALID)
        .encode(x=x, y=alt.Y("p_choose_a:Q", title="P(choose A)", scale=y_scale),
                tooltip=[alt.Tooltip("reference:Q"), alt.Tooltip("p_choose_a:Q", title="P(choose A)", format=".3f"),
                         alt.Tooltip("low:Q", title="CI low", format=".3f"),
                         alt.Tooltip("high:Q", title="CI high", format=".3f"),
                         alt.Tooltip("bias:Q", title="A-correct minus B-correct accuracy", format=".3f")]),
    ]
    text = title or "Position bias: P(choose A) per reference (dashed: no bias)"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def bias_figure(result: BehaviourFrames, task: str) -> alt.LayerChart:
    """How often the model chooses option A, per reference, whatever the numbers.

    Args:
        result: the behaviour result of one model (:class:`BehaviourFrames`).
        task: the prompt template's name.
    """
    subtitle = (f"{result.model}, task {task}; the larger number is in A in half the trials, so a model "
                "without a position bias chooses A half the time")
    return bias_chart(bias_frame(result, task), subtitle=subtitle, width="container")


# -- behaviour against representation ------------------------------------------------------------


CORE_CV = "CV(n), mean over the core layers"
"""The representational measure set beside behaviour by default: the noise-to-signal ratio
CV(n) = V(n) / ||m(n)|| of the number's vectors, averaged over the analysis' core layers."""


def core_cv_frame(analysis: AnalysisResult, references: Sequence[float]) -> pd.DataFrame:
    """CV(n) at each reference among the analysis' magnitudes, the mean over its core layers
    (reference, value, measure); a reference that is not one of the magnitudes has no row.

    Args:
        analysis: the analysis of the model's vectors (:class:`~magdash.variability.analysis.AnalysisResult`).
        references: the behaviour's references.
    """
    magnitudes = np.asarray(analysis.magnitudes, dtype=np.float64)
    core = np.asarray(analysis.values["cv"], dtype=np.float64)[analysis.core_layers]
    rows = []
    for reference in sorted(set(float(value) for value in references)):
        where = np.flatnonzero(np.isclose(magnitudes, reference))
        if where.size:
            rows.append({"reference": reference, "value": float(np.nanmean(core[:, where[0]])), "measure": CORE_CV})
    return pd.DataFrame(rows, columns=["reference", "value", "measure"])


def representation_frame(result: BehaviourFrames, representation: pd.DataFrame, task: str, variant: str = "choice",
                         conventions: str = "magdash") -> pd.DataFrame:
    """The behavioural Weber fraction per reference beside a representational measure of the same
    reference, for the references with both (a fraction beyond the tested ratios or undefined has no
    point). ``representation``: reference, value, measure. Columns: reference, measure, value,
    weber_fraction, wf_low, wf_high."""
    style.require_columns(representation, ["reference", "value", "measure"], "representation_frame")
    fits = weber_frame(result, task, variant, conventions)
    inside = fits[fits["placement"] == INSIDE].loc[:, ["reference", "weber_fraction", "wf_low", "wf_high"]]
    values = representation.loc[:, ["reference", "value", "measure"]].astype({"reference": float})
    merged = inside.astype({"reference": float}).merge(values, on="reference", how="inner")
    merged = merged[np.isfinite(merged["value"].astype(float))]
    return merged.loc[:, ["reference", "measure", "value", "weber_fraction", "wf_low", "wf_high"]].reset_index(drop=True)


def representation_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """The behavioural Weber fraction (log axis, with its interval) against a representational
    measure, one point per reference labelled with it (:func:`representation_frame`: reference,
    measure, value, weber_fraction, wf_low, wf_high); the title says how many points there are."""
    style.require_columns(frame, ["reference", "measure", "value", "weber_fraction", "wf_low", "wf_high"],
                          "representation_chart")
    measure = str(frame["measure"].iloc[0]) if len(frame) else "representational measure"
    data = frame.copy()
    data["label"] = data["reference"].astype(float).map(lambda value: f"{value:g}")
    data.loc[~(data["wf_low"].astype(float) > 0), "wf_low"] = np.nan  # a bar end without a logarithm is not drawn
    x = alt.X("value:Q", title=measure[:style.MAX_AXIS_TITLE], scale=alt.Scale(zero=False))
    y_scale = alt.Scale(type="log")
    records = style.inline_data(data, ["reference", "label", "measure", "value", "weber_fraction", "wf_low", "wf_high"])
    layers = [
        alt.Chart(records).mark_rule(color=style.MODEL_COLORS[0]).encode(
            x=x, y=alt.Y("wf_low:Q", scale=y_scale), y2="wf_high:Q"),
        alt.Chart(records).mark_point(filled=True, size=60, color=style.MODEL_COLORS[0], invalid=style.POINT_INVALID)
        .encode(x=x, y=alt.Y("weber_fraction:Q", title="behavioural Weber fraction", scale=y_scale),
                tooltip=[alt.Tooltip("reference:Q"), alt.Tooltip("value:Q", title=measure, format=".4g"),
                         alt.Tooltip("weber_fraction:Q", title="Weber fraction", format=".3f"),
                         alt.Tooltip("wf_low:Q", title="CI low", format=".3f"),
                         alt.Tooltip("wf_high:Q", title="CI high", format=".3f")]),
        alt.Chart(records).mark_text(color=style.POINT_GREY, fontSize=10, align="left", dx=6, dy=-6)
        .encode(x=x, y=alt.Y("weber_fraction:Q", scale=y_scale), text="label:N"),
    ]
    text = title or (f"Behaviour against representation: n = {len(frame)} reference(s)"
                     + (" (too few for a correlation)" if len(frame) < 3 else ""))
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def representation_figure(result: BehaviourFrames, representation: pd.DataFrame, task: str, variant: str = "choice",
                          conventions: str = "magdash") -> alt.LayerChart:
    """The behavioural Weber fraction per reference against a representational measure of the same numbers.

    Args:
        result: the behaviour result of one model (:class:`BehaviourFrames`).
        representation: the measure per reference: reference, value, measure (its name).
        task: the prompt template's name.
        variant: ``choice`` or ``graded``.
        conventions: ``magdash`` or ``paper``.
    """
    subtitle = (f"{result.model}, task {task}, {VARIANT_LABELS[variant]}; one point per reference with a Weber "
                "fraction inside the tested ratios")
    return representation_chart(representation_frame(result, representation, task, variant, conventions),
                                subtitle=subtitle, width="container")
