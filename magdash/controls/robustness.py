"""All robustness controls of one model's alphas, in one place.

The controls (run over a store and cached by :func:`magdash.runs.controls_runs.run_controls`) answer the obvious objections to "alpha is negative in this model":

- carriers: leave-one-carrier-out alpha per layer and measure, and the ICC(3,k) of the carrier
  RDMs per layer (:mod:`magdash.controls.carriers`);
- magnitude labels: the permutation p of alpha per layer beside the parametric p
  (:mod:`magdash.controls.permutation`);
- precision, quantization, token position and number format: each variant named in
  :attr:`ControlsParams.variants`, and the model on its stimuli in each format of
  :attr:`ControlsParams.formats`, against the model (:mod:`magdash.controls.variants`);
- architecture: the ``@random`` control, when it is stored on the same stimuli.

Each control gives a one-line :class:`Verdict` over the core band: ``problem`` True, False, or
None when it could not be judged (e.g. no variant stored). The rules:

- carriers: a problem when, without some carrier, the mean core alpha moves by more than the
  result's CI half-width, a change of sign counting only then (the analysis's own rule,
  :func:`magdash.variability.artifacts.carrier_influence`); not judged without CIs; ICC: mean core ICC below 0.5 (poor agreement, Koo & Li 2016);
- permutation: a problem when the permutation p is above ``significance`` at a majority of the
  core layers (alpha cannot be told from shuffled magnitudes); not judged when ``n_perm``
  permutations cannot give a p below ``significance`` at all (19 or fewer at 0.05);
- variants and ``@random``: :func:`magdash.controls.variants.variant_problem` and
  :func:`~magdash.controls.variants.random_problem`.

:func:`carrier_tables` computes the carrier and permutation tables from a model's vectors and its
analysis; they are cached under :data:`CONTROLS_VERSION`, and the comparisons with the variants
and ``@random`` as comparisons are (:func:`magdash.runs.analysis_runs.compare`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.controls.carriers import ICC_POOR, carrier_icc
from magdash.controls.controls_params import DEFAULT_N_PERM, ControlsParams
from magdash.controls.permutation import PermutationNull
from magdash.controls.variants import (
    VariantSummary,
    random_problem,
    variant_problem,
    variant_summary,
)
from magdash.formatting import format_number, layer_span
from magdash.overflow import count_nonfinite
from magdash.params import ProgressCallback
from magdash.result_codec import PayloadCodec, stored_as
from magdash.significance import can_reach, unreachable_note
from magdash.variability.analysis import AnalysisResult
from magdash.variability.artifacts import MIN_LOO_CARRIERS, leave_one_carrier_out
from magdash.variability.compare import ComparisonResult
from magdash.variability.html_summary import html_summary
from magdash.variability.measures import measure_title

VERDICT_WORDS = {True: "problem", False: "ok", None: "not judged"}
"""How a verdict's ``problem`` is written for a reader."""

CONTROLS_VERSION = "1"
"""Bump whenever a change to the controls code can change a cached table."""


@dataclass(frozen=True)
class Verdict:
    """One control's one-line verdict over the core band for one measure."""

    control: str
    measure: str
    problem: bool | None
    line: str


@dataclass
class CarrierTables(PayloadCodec):
    """The cached part: leave-one-carrier-out alphas, ICC and permutation p per layer.

    ``loo``: measure, layer, label, core, carrier (index), alpha_loo, alpha_full, sign_differs.
    ``icc``: layer, label, core, icc. ``permutation``: measure, layer, label, core, alpha,
    p_parametric, p_permutation.

    Attributes:
        carriers: the stimulus set's carrier sentences.
        loo: leave-one-carrier-out alphas (columns above).
        icc: ICC(3,k) of the carriers' RDMs per layer.
        permutation: the permutation and parametric p of alpha per layer.
        n_perm: permutations of the magnitude labels.
        model: whose tables these are (None in payloads cached before the metric tables).
        stimuli: the stimulus set (None likewise).
        conventions: the analysis's conventions (None likewise).
    """

    carriers: list[str]
    # Written without their dtypes (the form stores hold): None reads back as NaN in object columns.
    loo: pd.DataFrame = field(metadata=stored_as(frame="untyped"))
    icc: pd.DataFrame = field(metadata=stored_as(frame="untyped"))
    permutation: pd.DataFrame = field(metadata=stored_as(frame="untyped"))
    n_perm: int
    # Whose tables these are; None in payloads cached before the metric tables (schema 4).
    model: str | None = None
    stimuli: str | None = None
    conventions: str | None = None

    _payload_order = ("carriers", "n_perm", "model", "stimuli", "conventions")


def carrier_tables(
    layers,
    analysis: AnalysisResult,
    carriers: list[str],
    *,
    n_perm: int = DEFAULT_N_PERM,
    seed: int = 0,
    progress: ProgressCallback | None = None,
) -> CarrierTables:
    """The carrier and permutation controls from ``layers`` (vectors per layer, in order) and the
    model's analysis (its V, alphas and parametric p)."""
    params = analysis.params
    magnitudes = analysis.magnitudes
    core = set(analysis.core_layers)
    measures = list(params.measures)
    loo_rows, icc_rows = [], []
    with_loo = len(carriers) >= MIN_LOO_CARRIERS
    # Counted by hand: enumerate() would keep the previous layer alive while the next is read.
    layer = -1
    for vectors in layers:
        layer += 1
        label = analysis.layer_labels[layer]
        usable = not count_nonfinite(vectors)
        icc = carrier_icc(vectors) if usable else math.nan
        icc_rows.append({"layer": layer, "label": label, "core": layer in core, "icc": icc})
        if with_loo:
            alphas = (
                leave_one_carrier_out(vectors, magnitudes, measures, rules=params.fit_rules())
                if usable
                else np.full((len(measures), len(carriers)), math.nan)
            )
            for row, measure in enumerate(measures):
                full = analysis.fit(measure, layer).alpha
                for carrier in range(len(carriers)):
                    loo = float(alphas[row, carrier])
                    loo_rows.append(
                        {
                            "measure": measure, "layer": layer, "label": label, "core": layer in core,
                            "carrier": carrier, "alpha_loo": loo, "alpha_full": full,
                            "sign_differs": bool(math.isfinite(loo) and math.isfinite(full) and np.sign(loo) != np.sign(full)),
                        }
                    )
        del vectors
        if progress is not None:
            progress(layer + 1, analysis.n_layers)
    null = PermutationNull(n_perm, seed)
    perm_rows = []
    for measure in measures:
        for layer, label in enumerate(analysis.layer_labels):
            fit = analysis.fit(measure, layer)
            p_perm = (
                null.p_value(magnitudes, analysis.values[measure][layer], rules=params.fit_rules().for_measure(measure))
                if fit.has_fit
                else math.nan
            )
            perm_rows.append(
                {"measure": measure, "layer": layer, "label": label, "core": layer in core,
                 "alpha": fit.alpha, "p_parametric": fit.p, "p_permutation": p_perm}
            )
    loo_columns = ["measure", "layer", "label", "core", "carrier", "alpha_loo", "alpha_full", "sign_differs"]
    return CarrierTables(
        carriers=list(carriers),
        loo=pd.DataFrame(loo_rows, columns=loo_columns),
        icc=pd.DataFrame(icc_rows, columns=["layer", "label", "core", "icc"]),
        permutation=pd.DataFrame(perm_rows),
        n_perm=n_perm,
        model=analysis.model,
        stimuli=analysis.stimuli,
        conventions=params.conventions,
    )


@dataclass
class ControlsResult:
    """Every control of one model on one stimulus set (module docstring).

    Attributes:
        model: the model's name.
        stimuli: the stimulus set's name.
        core_layers: the core band the verdicts are over.
        params: every choice of the controls.
        analysis: the model's analysis.
        tables: the carrier and permutation tables.
        variants: variant name -> its comparison with the model.
        variant_kinds: variant name -> what differs (dtype, token position, weights file).
        random: the comparison with the ``@random`` control, or None when it is not stored or not asked for.
        random_name: the control's name.
        from_cache: whether the carrier tables were read from the store's cache.
    """

    model: str
    stimuli: str
    core_layers: list[int]
    params: ControlsParams
    analysis: AnalysisResult
    tables: CarrierTables
    variants: dict[str, ComparisonResult]
    variant_kinds: dict[str, str]
    random: ComparisonResult | None
    random_name: str
    from_cache: bool = False

    @property
    def measures(self) -> list[str]:
        return list(self.params.analysis.measures)

    def __repr__(self) -> str:
        compared = [*self.variants, *([self.random_name] if self.random else [])]
        return (f"ControlsResult(model={self.model!r}, stimuli={self.stimuli!r}, core_layers={self.core_layers}, "
                f"compared={compared})")

    def loo_summary(self, measure: str) -> pd.DataFrame:
        """Per dropped carrier: mean core alpha without it, the full one, layers whose sign flips.

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
        """
        rows = self.tables.loo[(self.tables.loo["measure"] == measure) & self.tables.loo["core"]]
        full = self.analysis.hypotheses[measure].mean_alpha
        out = []
        for carrier, group in rows.groupby("carrier", sort=True):
            values = group["alpha_loo"].to_numpy(dtype=np.float64)
            mean = float(np.nanmean(values)) if np.isfinite(values).any() else math.nan
            out.append(
                {
                    "carrier": int(carrier),
                    "sentence": self.tables.carriers[int(carrier)],
                    "mean_core_alpha_without": mean,
                    "mean_core_alpha_all": full,
                    "core_layers_sign_differs": int(group["sign_differs"].sum()),
                    "sign_differs": bool(math.isfinite(mean) and math.isfinite(full) and np.sign(mean) != np.sign(full)),
                }
            )
        return pd.DataFrame(
            out,
            columns=["carrier", "sentence", "mean_core_alpha_without", "mean_core_alpha_all",
                     "core_layers_sign_differs", "sign_differs"],
        )

    def variant_summaries(self, measure: str) -> list[VariantSummary]:
        """Each variant against the model for ``measure``, over the core band.

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
        """
        return [
            variant_summary(comparison, measure, self.variant_kinds[name])
            for name, comparison in self.variants.items()
        ]

    def random_summary(self, measure: str) -> VariantSummary | None:
        """The ``@random`` control against the model for ``measure``, or None without one.

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
        """
        if self.random is None:
            return None
        return variant_summary(self.random, measure, "random weights (@random)")

    def verdicts(self, measure: str) -> list[Verdict]:
        """One verdict per control for ``measure`` (module docstring gives the rules).

        Args:
            measure: a measure's name (``eucl``, ``residual``, ``proj``, ...:
                :data:`magdash.variability.measures.MEASURES`).
        """
        level = self.params.significance
        verdicts = []
        loo = self.loo_summary(measure)
        full = self.analysis.hypotheses[measure].mean_alpha
        if loo.empty:
            verdicts.append(Verdict("carriers", measure, None,
                                    f"leave-one-carrier-out needs at least {MIN_LOO_CARRIERS} carriers"))
        else:
            # The analysis's own rule (magdash.variability.artifacts): the mean core alpha without the
            # carrier moves by more than the result's CI half-width; a change of sign counts only then.
            influences = self.analysis.carrier_influence(measure, list(loo["mean_core_alpha_without"]))
            drivers = [item for item in influences if item.drives]
            low, high = loo["mean_core_alpha_without"].min(), loo["mean_core_alpha_without"].max()
            span = f"mean core alpha {_fmt(full)} with all {len(loo)} carriers, {_fmt(low)} to {_fmt(high)} without one"
            if drivers:
                which = ", ".join(f"{item.carrier} ({_fmt(item.mean_without)}: moves {item.how()})" for item in drivers)
                verdicts.append(Verdict("carriers", measure, True, f"the result rests on carrier {which}: {span}"))
            elif not any(item.judged for item in influences):
                verdicts.append(Verdict("carriers", measure, None,
                                        f"not judged without the core layers' CIs (n_boot = 0): {span}"))
            else:
                verdicts.append(Verdict("carriers", measure, False, f"no single carrier drives the result: {span}"))
        core_icc = self.tables.icc.loc[self.tables.icc["core"], "icc"].to_numpy(dtype=np.float64)
        if np.isfinite(core_icc).any():
            mean_icc = float(np.nanmean(core_icc))
            poor = mean_icc < ICC_POOR
            verdicts.append(Verdict(
                "icc", measure, poor,
                f"mean core ICC(3,k) of the carrier RDMs {mean_icc:.3f}"
                + (f" (< {ICC_POOR}: carriers disagree on the geometry)" if poor else f" (>= {ICC_POOR})"),
            ))
        else:
            verdicts.append(Verdict("icc", measure, None, "no ICC: fewer than 2 usable carriers"))
        perm = self.tables.permutation
        perm = perm[(perm["measure"] == measure) & perm["core"]]
        p = perm["p_permutation"].to_numpy(dtype=np.float64)
        if not can_reach("permutation", self.tables.n_perm, level):
            verdicts.append(Verdict("permutation", measure, None,
                                    f"not judged: {unreachable_note('permutation', self.tables.n_perm, level)}"))
        elif np.isfinite(p).any():
            above = int(np.count_nonzero(~(p <= level)))
            problem = above * 2 > len(perm)
            verdicts.append(Verdict(
                "permutation", measure, problem,
                f"permutation p > {level:g} at {above}/{len(perm)} core layers "
                f"({self.tables.n_perm:,} permutations; parametric p > {level:g} at "
                f"{int(np.count_nonzero(~(perm['p_parametric'].to_numpy(dtype=np.float64) <= level)))})",
            ))
        else:
            verdicts.append(Verdict("permutation", measure, None, "no fitted core layer"))
        summaries = self.variant_summaries(measure)
        if not summaries:
            verdicts.append(Verdict("variant", measure, None,
                                    "no variant compared (another dtype, weights file, token position or "
                                    "number format)"))
        for summary in summaries:
            problem = variant_problem(summary)
            verdicts.append(Verdict(
                "variant", measure, problem,
                f"{summary.variant} ({summary.kind}): mean core alpha {_fmt(summary.mean_alpha_variant)} vs "
                f"{_fmt(summary.mean_alpha_model)}, largest |delta| {_fmt(summary.max_abs_delta, '.4f')} at layer "
                f"{summary.layer_of_max} (CI [{_fmt(summary.ci_low_at_max)}, {_fmt(summary.ci_high_at_max)}])",
            ))
        random = self.random_summary(measure)
        if random is None:
            missing = (
                f"{self.model} is itself a random-weight control" if self.random_name == self.model
                else f"{self.random_name} is not stored on these stimuli"
            )
            verdicts.append(Verdict("random", measure, None, missing))
        else:
            verdicts.append(Verdict(
                "random", measure, random_problem(random),
                f"{self.random_name}: mean core alpha {_fmt(random.mean_alpha_variant)} vs "
                f"{_fmt(random.mean_alpha_model)}; mean delta {_fmt(random.mean_delta, '.4f')}, stimulus-bootstrap "
                f"CI [{_fmt(random.mean_delta_ci_low, '.4f')}, {_fmt(random.mean_delta_ci_high, '.4f')}] "
                f"(per-layer CIs exclude 0 at {random.layers_ci_excludes_zero}/{random.n_core} core layers, which "
                "share their stimuli)",
            ))
        return verdicts

    def verdict_table(self) -> pd.DataFrame:
        """Every verdict of every measure: control, measure, problem and its line."""
        rows = [dataclasses.asdict(v) for measure in self.measures for v in self.verdicts(measure)]
        return pd.DataFrame(rows, columns=["control", "measure", "problem", "line"])

    def _repr_html_(self) -> str:
        """The notebook's view: the model, the core band, one verdict per control and measure."""
        verdicts = self.verdict_table()
        verdicts["problem"] = [VERDICT_WORDS[problem] for problem in verdicts["problem"]]
        verdicts["measure"] = [measure_title(m) for m in verdicts["measure"]]
        facts = [("stimuli", self.stimuli), ("core band", layer_span(self.core_layers)),
                 ("carriers", str(len(self.tables.carriers))), ("permutations", f"{self.tables.n_perm:,}"),
                 ("compared with", ", ".join([*self.variants, *([self.random_name] if self.random else [])]) or "none")]
        notes = ["tables: .tables.loo, .tables.icc, .tables.permutation, .verdict_table(), .loo_summary(measure); "
                 "the analysis: .analysis; charts: magdash.charts"]
        return html_summary(f"Robustness controls of {self.model}", facts, [("Verdicts", verdicts)], notes)

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``controls --json`` shape (NaN stays NaN; the CLI writes null)."""
        return {
            "model": self.model,
            "stimuli": self.stimuli,
            "core_layers": self.core_layers,
            "carriers": self.tables.carriers,
            "n_perm": self.tables.n_perm,
            "verdicts": [dataclasses.asdict(v) for m in self.measures for v in self.verdicts(m)],
            "leave_one_carrier_out": self.tables.loo.to_dict(orient="records"),
            "icc": self.tables.icc.to_dict(orient="records"),
            "permutation": self.tables.permutation.to_dict(orient="records"),
            "variants": [dataclasses.asdict(s) for m in self.measures for s in self.variant_summaries(m)],
            "random": [
                dataclasses.asdict(s) for m in self.measures if (s := self.random_summary(m)) is not None
            ],
            "params": dataclasses.asdict(self.params),
        }


def _fmt(value: float, spec: str = "+.4f") -> str:
    return format_number(value, spec)
