"""What a model's probes show, in sentences, so that ``magdash probe``, the Probes page and the
report say the same and none of them reads a null as a finding:

- the band of layers that decode unseen magnitudes best, the choice accounted for
  (:mod:`magdash.probes.selection`): one layer is named the best only when the band holds it alone;
- the probe's R² beside what the numbers' digit count (and token count) alone gives on the same
  folds, and within those strata (:mod:`magdash.probes.baseline`), said in words where the probe
  is not shown to exceed it;
- the decoded-noise exponent beta against what a constant-error read-out gives for the design
  and against the ``@random`` control (:mod:`magdash.probes.decoded`), never against 1, and no
  exponent where the carriers' predictions do not differ beyond rounding.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from magdash.formatting import fixed, format_p
from magdash.params import ranges
from magdash.probes.result import ProbeResult
from magdash.significance import SIGNIFICANCE_LEVEL, unreachable_note

READOUTS = {"log": "log n", "linear": "n"}

_CONSTANT_ERROR = {"log": "a read-out whose error is the same ratio at every n",
                   "linear": "a read-out whose error is the same size at every n"}


def _with_interval(value: float, low: float, high: float, digits: int = 3) -> str:
    return f"{fixed(value, digits)} [{fixed(low, digits)}, {fixed(high, digits)}]"


def layer_name(result: ProbeResult, layer: int) -> str:
    """``layer 3 (block 3)``: a layer as the sentences name it.

    Args:
        result: the probes (their layer labels).
        layer: the layer's index.
    """
    labels = dict(zip(result.layers["layer"], result.layers["label"], strict=True))
    return f"layer {layer} ({labels.get(layer, '?')})"


def _row(table: pd.DataFrame, layer: int) -> pd.Series | None:
    rows = table[table["layer"] == layer]
    return rows.iloc[0] if len(rows) else None


def band_sentence(result: ProbeResult, target: str = "log") -> str:
    """Which layers decode unseen magnitudes best: the band, or the best alone when the band holds
    it alone, with the held-out-magnitude R² and the selection margin.

    Args:
        result: the probes of one model.
        target: the read-out, ``log`` or ``linear``.
    """
    best, band = result.best_and_band(target)
    scores = result.score_table("magnitude", target, "real")
    top = None if best is None else _row(scores, best)
    if best is None or top is None:
        return f"{result.model}: no layer could be probed (every layer holds Inf/NaN vectors)."
    top_text = f"{layer_name(result, best)} at {_with_interval(top['r2'], top['r2_low'], top['r2_high'])}"
    rows = result.best_layers[result.best_layers["target"] == target]
    probe_of = f"a linear probe of {READOUTS[target]}"
    bound = (f"{result.params.ci:.0%} bootstrap bounds of each layer's gap to it, adjusted for choosing the best "
             f"of {len(rows)}")
    if not np.isfinite(rows["gap_low"].to_numpy(dtype=np.float64)).any():
        return (f"{result.model}: the held-out-magnitude R² of {probe_of} is largest at {top_text}; without "
                "bootstrap resamples no band of layers that cannot be told from it is computed, so this is no "
                "choice of a best layer.")
    if len(band) == 1:
        return (f"{result.model}: {probe_of} decodes unseen magnitudes best at {top_text}, and every other layer's "
                f"R² is below it ({bound}).")
    in_band = rows[rows["in_band"].astype(bool)]["r2"]
    return (f"{result.model}: {probe_of} decodes unseen magnitudes about equally well at layers {ranges(band)} "
            f"({len(band)} of {len(rows)} probed; held-out-magnitude R² {fixed(in_band.min())} to "
            f"{fixed(in_band.max())}), which cannot be told from the largest, {top_text} ({bound}).")


def baseline_sentence(result: ProbeResult, layer: int, target: str = "log") -> str:
    """At ``layer``, the held-out-magnitude R² against what the strata alone give on the same
    folds, and within strata; how many layers do not exceed the baseline.

    Args:
        result: the probes of one model.
        layer: the layer described.
        target: the read-out, ``log`` or ``linear``.
    """
    scores = result.score_table("magnitude", target, "real")
    row = _row(scores, layer)
    if row is None:
        return ""
    what = f"each number's {result.strata_by}"
    over = _with_interval(row["r2_over_baseline"], row["r2_over_baseline_low"], row["r2_over_baseline_high"])
    where, baseline = layer_name(result, layer), fixed(row["baseline_r2"])
    if not np.isfinite(row["r2_over_baseline_low"]):
        text = (f"Knowing only {what} gives a held-out-magnitude R² of {baseline} on the same folds; at {where} the "
                f"probe's is {fixed(row['r2'])}, without an interval (no bootstrap resamples), so whether it "
                "exceeds the baseline is not tested")
    elif row["r2_over_baseline_low"] > 0:
        text = (f"Knowing only {what} gives a held-out-magnitude R² of {baseline} on the same folds; at {where} the "
                f"probe adds {over} to it")
    else:
        text = (f"At {where} the probe is not shown to exceed what knowing only {what} gives on the same folds "
                f"(R² {baseline}; the probe minus it: {over})")
    text += (f"; within strata of equal {result.strata_by} its R² is "
             f"{_with_interval(row['r2_within_strata'], row['r2_within_strata_low'], row['r2_within_strata_high'])}"
             f" (pooled over {int(row['n_strata_within'])} strata holding two or more tested magnitudes).")
    bounds = scores["r2_over_baseline_low"]
    not_above = scores.loc[np.isfinite(bounds) & (bounds <= 0), "layer"].tolist()
    if not_above:
        text += (f" At layer(s) {ranges(not_above)} ({len(not_above)} of {len(scores)}) the probe's R² is not shown "
                 "to exceed this baseline.")
    return text


def _null_note(scaling: pd.Series, n_perm: int) -> str:
    notes = [unreachable_note("permutation", n_perm),
             unreachable_note("spearman", int(scaling["n_points"]), unit="magnitudes")]
    return next((f"; {note}" for note in notes if note), "")


def exponent_sentence(result: ProbeResult, control: ProbeResult | None, layer: int, target: str = "log") -> str:
    """At ``layer``, the decoded-noise exponent beta against the constant-error null of the design
    and against the ``@random`` control's, or why there is none.

    Args:
        result: the probes of one model.
        control: its ``@random`` control's probes (None when not probed).
        layer: the layer described.
        target: the read-out, ``log`` or ``linear``.
    """
    scaling = result.decoded_scaling[result.decoded_scaling["target"] == target]
    row = _row(scaling, layer)
    if row is None:
        return ""
    where = layer_name(result, layer)
    if row["note"]:
        return f"At {where} the decoded magnitude has no spread to fit: {row['note']}."
    text = (f"At {where} the decoded magnitude's SD across held-out carriers grows as n^beta with beta "
            f"{_with_interval(row['beta'], row['beta_low'], row['beta_high'], 2)}; {_CONSTANT_ERROR[target]} gives ")
    p = row["beta_null_p"]
    if not np.isfinite(p):
        text += (f"{fixed(row['beta_null'], 2)} for this design on average, but without resamples there are no "
                 "permutations, and beta is not tested against it")
    else:
        text += (f"{_with_interval(row['beta_null'], row['beta_null_low'], row['beta_null_high'], 2)} for this design "
                 f"(permutation p = {format_p(p)}{_null_note(row, result.params.n_boot)})")
        text += (": the decoded error's size changes with n beyond what a constant-error read-out gives"
                 if p < SIGNIFICANCE_LEVEL else
                 ": the exponent is within what a constant-error read-out gives and says nothing about the model's noise")
    if control is not None:
        other = control.decoded_scaling[control.decoded_scaling["target"] == target]
        random = _row(other, layer)
        if random is not None and not random["note"]:
            text += (f"; {control.model}: beta {_with_interval(random['beta'], random['beta_low'], random['beta_high'], 2)}"
                     f" (its null {fixed(random['beta_null'], 2)})")
    return text + (f". The mean SD(n-hat)/n, {fixed(row['weber_mean'])}, is the probe's error across carriers on the "
                   "ratio scale, not a Weber fraction of the model.")


def probe_findings(result: ProbeResult, control: ProbeResult | None = None, target: str = "log",
                   layer: int | None = None) -> list[str]:
    """The band of best layers, and at ``layer`` (default: the largest held-out-magnitude R²) the
    baseline and the decoded-noise exponent, as sentences.

    Args:
        result: the probes of one model.
        control: its ``@random`` control's probes (None when not probed).
        target: the read-out, ``log`` or ``linear``.
        layer: the layer whose baseline and exponent are described.
    """
    lines = [band_sentence(result, target)]
    layer = result.best_and_band(target)[0] if layer is None else layer
    if layer is None:
        return lines
    lines += [baseline_sentence(result, layer, target), exponent_sentence(result, control, layer, target)]
    return [line for line in lines if line]
