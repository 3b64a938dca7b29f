"""Every result as rows of the store's metric tables: the one place they are built.

The tables and their columns are the store's (:mod:`magdash.store.metrics`, documented in
``docs/metrics.md``); a builder here that hands the store another set of columns is refused
there. :mod:`magdash.runs.cache` writes the rows with the result's payload, or, for results
cached before the tables existed, when they are next read or backfilled.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from magdash.jsonio import to_jsonable
from magdash.store.metrics import TABLES_BY_NAME
from magdash.variability.analysis import FIT_COLUMNS

if TYPE_CHECKING:
    from magdash.behaviour.behaviour_result import BehaviourResult
    from magdash.controls_statistics.controls import CarrierTables
    from magdash.controls_statistics.design import DesignResult
    from magdash.depth_statistics.diagnostics import DepthResult
    from magdash.probes.result import ProbeResult
    from magdash.steering.steer_result import SteerResult
    from magdash.variability.analysis import AnalysisResult
    from magdash.variability.compare import ComparisonResult

Rows = dict[str, pd.DataFrame]


def with_identity(frame: pd.DataFrame, identity: Mapping[str, object]) -> pd.DataFrame:
    """``frame`` with one column per ``identity`` item (model, stimuli, ...) in front, the same
    value on every row: how a per-layer frame becomes metric rows.

    Args:
        frame: a per-layer (or per-row) frame.
        identity: column name -> the value every row gets.
    """
    columns = {name: [value] * len(frame) for name, value in identity.items()}
    return pd.concat([pd.DataFrame(columns, index=frame.index), frame], axis=1)


def analysis_rows(result: AnalysisResult) -> Rows:
    """An analysis as rows of ``analyses``, ``fits``, ``hypotheses``, ``e3``, ``e4_layers``, ``e4``,
    and, when its token facts were recorded, ``tokenization_fits`` and ``token_strata``.

    Args:
        result: the analysis.
    """
    identity = {"model": result.model, "stimuli": result.stimuli, "conventions": result.params.conventions}
    params = result.params
    analyses = pd.DataFrame([{
        **identity, "massive": params.massive, "measures": list(params.measures), "n_boot": params.n_boot,
        "ci": params.ci, "ci_method": params.ci_method, "seed": params.seed,
        "core_layers": list(result.core_layers), "n_blocks": result.n_blocks, "n_magnitudes": len(result.magnitudes),
        "params": json.dumps(to_jsonable(dataclasses.asdict(params), keep_nan=True), sort_keys=True),
    }])
    fits = result.fits[["measure", "layer", "label", "core", *FIT_COLUMNS]].copy()
    hypotheses, e3_rows = [], []
    for measure, item in result.hypotheses.items():
        fields = dataclasses.asdict(item)
        low, high = fields.pop("window")
        ci_low, ci_high = fields.pop("mean_alpha_ci")
        hypotheses.append({**identity, "measure": measure, **fields, "window_low": low, "window_high": high,
                           "mean_alpha_ci_low": ci_low, "mean_alpha_ci_high": ci_high})
    for measure, item in result.e3.items():
        for layer, with_, without in zip(item.layers, item.alpha_with, item.alpha_without, strict=True):
            e3_rows.append({**identity, "measure": measure, "layer": layer, "alpha_with": with_,
                            "alpha_without": without, "boundary": list(item.boundary), "dropped": list(item.dropped)})
    e4 = result.e4
    e4_layers = pd.DataFrame({"layer": e4.layers, "alpha_on": e4.alpha_on, "alpha_off": e4.alpha_off})
    e4_test = {name: getattr(e4, name) for name in
               ("mean_alpha_on", "mean_alpha_off", "ratio", "mean_difference", "difference_p", "n_resamples",
                "wilcoxon_statistic", "wilcoxon_p", "n_pairs", "wilcoxon_reachable")}
    for name in ("ratio", "difference"):
        e4_test[f"{name}_ci_low"], e4_test[f"{name}_ci_high"] = getattr(e4, f"{name}_ci")
    return {
        "analyses": analyses,
        "fits": with_identity(fits, identity),
        "hypotheses": pd.DataFrame(hypotheses),
        "e3": pd.DataFrame(e3_rows),
        "e4_layers": with_identity(e4_layers, identity),
        "e4": pd.DataFrame([{**identity, **e4_test}]),
        "tokenization_fits": with_identity(result.tokenization.reset_index(drop=True), identity),
        "token_strata": with_identity(result.token_strata.reset_index(drop=True), identity),
    }


COMPARISON_LAYER_COLUMNS = ["layer_a", "layer_b", "gamma_a", "gamma_b", "core", "alpha_a", "alpha_b", "delta",
                            "ci_low", "ci_high"]


def comparison_rows(result: ComparisonResult) -> Rows:
    """A comparison as rows of ``comparisons`` and ``comparison_tests``.

    Args:
        result: the comparison of two models.
    """
    identity = {"model_a": result.model_a, "model_b": result.model_b, "stimuli": result.stimuli,
                "stimuli_b": result.stimuli_b or result.stimuli, "conventions": result.conventions}
    layers, tests = [], []
    for measure, item in result.measures.items():
        layers.append(with_identity(item.layers[COMPARISON_LAYER_COLUMNS].reset_index(drop=True),
                                    {**identity, "measure": measure}))
        tests.append({**identity, "measure": measure, **item.summary()})
    return {"comparisons": pd.concat(layers, ignore_index=True) if layers else pd.DataFrame(),
            "comparison_tests": pd.DataFrame(tests)}


def controls_rows(tables: CarrierTables) -> Rows | None:
    """The carrier and permutation tables as rows of ``controls_loo``, ``controls_icc`` and
    ``controls_permutation``; None when the payload did not name its model (cached before schema 4).

    Args:
        tables: the controls' carrier and permutation tables.
    """
    if tables.model is None:
        return None
    identity = {"model": tables.model, "stimuli": tables.stimuli, "conventions": tables.conventions}
    return {
        "controls_loo": with_identity(tables.loo, identity),
        "controls_icc": with_identity(tables.icc, identity),
        "controls_permutation": with_identity(tables.permutation, identity).assign(n_perm=tables.n_perm),
    }


def design_rows(result: DesignResult, model: str, stimuli: str, conventions: str) -> Rows:
    """A design simulation calibrated on ``model`` and ``stimuli`` as rows of ``designs``,
    ``design_h1``, ``design_e6`` and ``design_ci``.

    Args:
        result: the design simulation.
        model: the model its noise was calibrated on.
        stimuli: the stimulus set of the calibration.
        conventions: the conventions of the calibration's analysis.
    """
    identity = {"model": model, "stimuli": stimuli, "conventions": conventions}
    params = result.params
    design = {
        "magnitudes": params.magnitudes, "n_magnitudes": result.n_magnitudes, "n_carriers": params.n_carriers,
        "n_layers": result.n_layers, "n_studies": params.n_studies, "n_boot": params.n_boot, "level": params.level,
        "power_target": params.power_target, "seed": params.seed, "calibration_rho": result.calibration.rho,
        **result.summary(),
    }
    return {
        "designs": with_identity(pd.DataFrame([design]), identity),
        "design_h1": with_identity(result.h1, identity),
        "design_e6": with_identity(result.e6, identity),
        "design_ci": with_identity(result.ci_width, identity),
    }


def e5_rows(table: pd.DataFrame, identity: Mapping[str, str | int]) -> Rows:
    """An E5 table of ``identity`` (model, stimuli, source, measure, n_boot, seed) as rows of ``e5``.

    Args:
        table: the E5 table, one row per layer.
        identity: model, stimuli, source, measure, n_boot and seed of the table.
    """
    names = ("model", "stimuli", "source", "measure")
    return {"e5": with_identity(table, {name: identity[name] for name in names})
            .assign(n_boot=identity["n_boot"], seed=identity["seed"])}


def phase_rows(result: DepthResult, stimuli: str) -> Rows:
    """Depth diagnostics of ``result.model`` on ``stimuli`` as rows of ``phase_layers``,
    ``phase_transitions`` and ``phase_jumps``.

    Args:
        result: the depth diagnostics.
        stimuli: the stimulus set they were computed on.
    """
    from magdash.depth_statistics.diagnostics import layer_frame

    identity = {"model": result.model, "stimuli": stimuli, "massive": result.params.massive}
    layers = with_identity(layer_frame(result).drop(columns="model"), identity)
    layers["massive_dims"] = [list(item.massive) for item in result.layers]
    transitions = pd.DataFrame([
        {**identity, "curve": curve, **dataclasses.asdict(transition),
         "units": list(transition.units.names), "unit_counts": list(transition.units.counts)}
        for curve, transition in (("omega", result.order), ("spikes", result.spikes), ("effective_rank", result.rank))
    ])
    jumps = pd.DataFrame(
        [{**identity, "jump": rank, **dataclasses.asdict(jump)} for rank, jump in enumerate(result.jumps, start=1)]
    )
    return {"phase_layers": layers, "phase_transitions": transitions, "phase_jumps": jumps}


def probe_rows(result: ProbeResult) -> Rows:
    """Probes of ``result.model`` on ``result.stimuli`` as rows of ``probes``, ``probe_layers``,
    ``probe_scores``, ``probe_selectivity``, ``probe_directions``, ``probe_decoded``,
    ``probe_decoded_scaling`` and ``probe_best_layers`` (the result's tables with the model and
    stimuli in front).

    Args:
        result: the probes of one model on one stimulus set.
    """
    identity = {"model": result.model, "stimuli": result.stimuli}
    params = result.params
    run = pd.DataFrame([{
        **identity, "targets": list(params.targets), "n_magnitudes": int(result.magnitudes.size),
        "n_carriers": result.n_carriers, "n_layers": result.n_layers, "magnitude_folds": params.magnitude_folds,
        "carrier_folds": params.carrier_folds, "n_boot": params.n_boot, "ci": params.ci, "seed": params.seed,
        "control_seed": params.control_seed, "baseline_strata": result.strata_by,
        "params": json.dumps(to_jsonable(dataclasses.asdict(params), keep_nan=True), sort_keys=True),
    }])
    tables = {"probe_layers": result.layers, "probe_scores": result.scores, "probe_selectivity": result.selectivity,
              "probe_directions": result.directions, "probe_decoded": result.decoded,
              "probe_decoded_scaling": result.decoded_scaling, "probe_best_layers": result.best_layers}
    return {"probes": run, **{name: with_identity(frame, identity) for name, frame in tables.items()}}


def behaviour_rows(result: BehaviourResult) -> Rows:
    """The behaviour of ``result.model`` on ``result.comparisons`` as rows of ``behaviour_fits`` and
    ``behaviour_weber_law`` (the result's fits and Weber-law slopes with the model and set in front).

    Args:
        result: the behaviour of one model on one comparison set.
    """
    identity = {"model": result.model, "comparisons": result.comparisons}
    found = {}
    for table, frame in (("behaviour_fits", result.fits), ("behaviour_weber_law", result.weber_law)):
        columns = [name for name in TABLES_BY_NAME[table].column_names if name not in identity]
        found[table] = with_identity(frame.loc[:, columns], identity)
    return found


def steer_rows(result: SteerResult) -> Rows:
    """The steering of ``result.model`` as rows of ``steering_layers`` (the result's per-layer summary
    with the model, stimuli, comparison set, direction source and operand in front).

    Args:
        result: the steering of one model's trials along one stimulus set's directions.
    """
    identity = {"model": result.model, "stimuli": result.stimuli, "comparisons": result.comparisons,
                "direction": result.params.direction, "operand": result.params.operand}
    columns = [name for name in TABLES_BY_NAME["steering_layers"].column_names if name not in identity]
    return {"steering_layers": with_identity(result.layers.loc[:, columns], identity)}
