"""Weber's law across the range in behaviour, model-vs-model deltas, and behaviour against representation.

Weber's law (the scalar property) says the Weber fraction is the same at every reference: the slope b of
ln WF = a + b ln reference is 0 (Cacioli 2026, arXiv 2603.20642: the "Weber-range comparison", here
behaviourally). The slope is the least-squares slope over the references whose WF is defined and positive;
its interval comes from the bootstrap replicates of those WFs (each reference's trials are resampled apart,
so the replicates of different references are independent and are paired by index): the percentile
interval of the replicates' slopes, a replicate with a WF of 0 or +inf at one of the references left out
(it has no logarithm). The slope needs two defined WFs and says so, with the number it rests on, when
there are fewer.

A delta of two models (base vs instruct, model vs control) is A minus B of the WF per task, reference and
variant, and of the Weber-law slope, with the percentile interval of the replicates' differences (the two
models' trials are independent, so their replicates are paired by index, as
:func:`magdash.variability.compare.slope_difference` pairs resamples).

Behaviour against representation: the Spearman correlation across references of the behavioural WF with a
representational measure of the same numbers (CV(n) = V(n) / ||m(n)||, alpha, a probe's decoded WF), with
the number of references it rests on and, when that many points cannot reach significance,
:func:`magdash.significance.unreachable_note`'s sentence.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import pearsonr, spearmanr

from magdash.behaviour.behaviour_fits import replicate_key
from magdash.behaviour.psychometric import interval
from magdash.behaviour.trial_frames import as_float
from magdash.errors import AnalysisError
from magdash.significance import statistic_and_p, unreachable_note

WEBER_LAW_COLUMNS = ["task", "variant", "conventions", "slope", "low", "high", "n_references", "status"]
DELTA_COLUMNS = ["task", "reference", "variant", "quantity", "value_a", "value_b", "delta", "low", "high", "status"]
CORRELATION_COLUMNS = ["measure", "spearman", "p", "pearson", "n_points", "note"]
MIN_SLOPE_POINTS = 2


def log_slopes(log_reference: np.ndarray, log_weber: np.ndarray) -> np.ndarray:
    """Least-squares slopes of the rows of ``log_weber`` (replicates x references) on ``log_reference``.

    Args:
        log_reference: ln reference per column.
        log_weber: ln WF, one row per replicate (or one row).
    """
    centred = log_reference - log_reference.mean()
    return (log_weber - log_weber.mean(axis=-1, keepdims=True)) @ centred / float(centred @ centred)


def _positive(value: object) -> bool:
    return isinstance(value, (int, float, np.floating)) and math.isfinite(float(value)) and float(value) > 0


def _slope_status(n: int) -> str:
    if n >= MIN_SLOPE_POINTS:
        return "ok"
    return f"too few defined Weber fractions: {n} reference(s), the slope needs {MIN_SLOPE_POINTS}"


def weber_law_table(fits: pd.DataFrame, replicates: dict[str, np.ndarray], ci: float) -> pd.DataFrame:
    """The ``weber_law`` frame: per task, variant and conventions the slope of ln WF on ln reference over
    the references with a defined positive WF, its interval (magdash conventions: from the replicates) and
    the number of references it rests on.

    Args:
        fits: the ``fits`` frame.
        replicates: the magdash fits' WF replicates by :func:`~magdash.behaviour.behaviour_fits.replicate_key`.
        ci: the interval's level.
    """
    rows = []
    for (task, variant, conventions), group in fits.groupby(["task", "variant", "conventions"], sort=True):
        defined = group[np.isfinite(group["weber_fraction"]) & (group["weber_fraction"] > 0)]
        n = len(defined)
        slope = low = high = math.nan
        if n >= MIN_SLOPE_POINTS:
            log_reference = np.log(defined["reference"].to_numpy(dtype=float))
            slope = float(log_slopes(log_reference, np.log(defined["weber_fraction"].to_numpy(dtype=float))))
            keys = [replicate_key(str(task), float(reference), str(variant)) for reference in defined["reference"]]
            if conventions == "magdash" and all(key in replicates for key in keys):
                stacked = np.column_stack([replicates[key] for key in keys])
                usable = np.all(np.isfinite(stacked) & (stacked > 0), axis=1)
                if usable.any():
                    low, high = interval(log_slopes(log_reference, np.log(stacked[usable])), ci)
        rows.append({"task": task, "variant": variant, "conventions": conventions, "slope": slope, "low": low,
                     "high": high, "n_references": n, "status": _slope_status(n)})
    return pd.DataFrame(rows, columns=WEBER_LAW_COLUMNS)


def behaviour_deltas(fits_a: pd.DataFrame, replicates_a: dict[str, np.ndarray], fits_b: pd.DataFrame,
                     replicates_b: dict[str, np.ndarray], ci: float) -> pd.DataFrame:
    """Model A minus model B under magdash's conventions: per task, reference and variant the WF
    (``quantity`` ``weber_fraction``), and per task and variant the Weber-law slope (``quantity``
    ``slope``, reference NaN; over the references where both WFs are defined), each with the percentile interval of the paired replicates' differences.

    Args:
        fits_a: model A's ``fits`` frame.
        replicates_a: model A's WF replicates.
        fits_b: model B's ``fits`` frame.
        replicates_b: model B's WF replicates.
        ci: the interval's level.
    """
    keys = ["task", "reference", "variant"]
    a = fits_a[fits_a["conventions"] == "magdash"].set_index(keys)
    b = fits_b[fits_b["conventions"] == "magdash"].set_index(keys)
    rows = []
    for key in a.index.intersection(b.index):
        task, reference, variant = key
        wf_a, wf_b = as_float(a.at[key, "weber_fraction"]), as_float(b.at[key, "weber_fraction"])
        name = replicate_key(str(task), float(reference), str(variant))
        low = high = math.nan
        status = "ok" if math.isfinite(wf_a) and math.isfinite(wf_b) else "a Weber fraction is undefined"
        if status == "ok" and name in replicates_a and name in replicates_b:
            count = min(replicates_a[name].size, replicates_b[name].size)
            with np.errstate(invalid="ignore"):
                low, high = interval(replicates_a[name][:count] - replicates_b[name][:count], ci)
        rows.append({"task": task, "reference": float(reference), "variant": variant, "quantity": "weber_fraction",
                     "value_a": wf_a, "value_b": wf_b, "delta": wf_a - wf_b, "low": low, "high": high,
                     "status": status})
    for task, variant in sorted({(t, v) for t, _, v in a.index} & {(t, v) for t, _, v in b.index}):
        # both slopes over the references where both models have a defined positive WF
        references = [reference for t, reference, v in a.index.intersection(b.index)
                      if (t, v) == (task, variant) and _positive(a.loc[(t, reference, v), "weber_fraction"])
                      and _positive(b.loc[(t, reference, v), "weber_fraction"])]
        n = len(references)
        slopes, low, high = [math.nan, math.nan], math.nan, math.nan
        if n >= MIN_SLOPE_POINTS:
            log_reference = np.log(np.array(references, dtype=float))
            replicate_slopes = []
            for side, (fits, replicates) in enumerate(((a, replicates_a), (b, replicates_b))):
                weber = np.array([fits.loc[(task, reference, variant), "weber_fraction"] for reference in references])
                slopes[side] = float(log_slopes(log_reference, np.log(weber.astype(float))))
                names = [replicate_key(str(task), float(reference), str(variant)) for reference in references]
                if all(name in replicates for name in names):
                    replicate_slopes.append(np.column_stack([replicates[name] for name in names]))
            if len(replicate_slopes) == 2:
                count = min(len(replicate_slopes[0]), len(replicate_slopes[1]))
                stacked_a, stacked_b = replicate_slopes[0][:count], replicate_slopes[1][:count]
                usable = np.all(np.isfinite(stacked_a) & (stacked_a > 0) & np.isfinite(stacked_b) & (stacked_b > 0),
                                axis=1)
                if usable.any():
                    low, high = interval(log_slopes(log_reference, np.log(stacked_a[usable]))
                                         - log_slopes(log_reference, np.log(stacked_b[usable])), ci)
        rows.append({"task": task, "reference": math.nan, "variant": variant, "quantity": "slope",
                     "value_a": slopes[0], "value_b": slopes[1], "delta": slopes[0] - slopes[1], "low": low,
                     "high": high, "status": _slope_status(n)})
    return pd.DataFrame(rows, columns=DELTA_COLUMNS)


def behaviour_vs_representation(behaviour: pd.DataFrame, measures: pd.DataFrame) -> pd.DataFrame:
    """The correlation across references of the behavioural WF with each representational measure: one
    row per measure with Spearman's rho and its p, Pearson's r, the references it rests on and, when that
    many points cannot reach significance, the sentence that says so.

    Args:
        behaviour: one row per reference: ``reference`` and ``weber_fraction`` (NaN: undefined, left out).
        measures: one row per reference: ``reference`` and one column per measure (``cv``, ``alpha``,
            ``decoded_wf``, ...).
    """
    for name, frame, needed in (("behaviour", behaviour, ("reference", "weber_fraction")),
                                ("measures", measures, ("reference",))):
        missing = [column for column in needed if column not in frame.columns]
        if missing:
            raise AnalysisError(f"{name} lacks the column(s) {', '.join(missing)}", parameters=(name,))
    if behaviour["reference"].duplicated().any() or measures["reference"].duplicated().any():
        raise AnalysisError("behaviour and measures need one row per reference", parameters=("behaviour", "measures"))
    joined = behaviour.loc[:, ["reference", "weber_fraction"]].merge(measures, on="reference", how="inner")
    rows = []
    for measure in [column for column in measures.columns if column != "reference"]:
        values = pd.to_numeric(joined[measure], errors="coerce").to_numpy(dtype=float)
        weber = joined["weber_fraction"].to_numpy(dtype=float)
        usable = np.isfinite(values) & np.isfinite(weber)
        n = int(usable.sum())
        rho = p = r = math.nan
        if n >= 3 and np.ptp(values[usable]) > 0 and np.ptp(weber[usable]) > 0:
            rho, p = statistic_and_p(spearmanr(weber[usable], values[usable]))
            r, _ = statistic_and_p(pearsonr(weber[usable], values[usable]))
        note = unreachable_note("spearman", n, unit="references")
        if n < 3:
            note = f"{n} reference(s) with both numbers: too few for a correlation" + (f"; {note}" if note else "")
        rows.append({"measure": measure, "spearman": rho, "p": p, "pearson": r, "n_points": n, "note": note})
    return pd.DataFrame(rows, columns=CORRELATION_COLUMNS)
