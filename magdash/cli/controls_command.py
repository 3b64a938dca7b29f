"""``magdash controls``: does a stored model's alpha survive the obvious objections?

Leave-one-carrier-out alpha, the carrier ICC, a permutation null, other extractions of the same
model (``--variant``: another dtype, weights file or token position), the same model on the
stimuli in another number format (``--format-variant``) and the ``@random`` control, each with a one-line verdict over the core band (:mod:`magdash.controls_statistics.controls`).
"""

from __future__ import annotations

import argparse

from magdash.cli.analyze_command import add_analysis_options, analysis_params
from magdash.cli.common import flagged_layer_warnings, open_store, print_json, warn, write_report
from magdash.cli.options import add_params_options, params_from_args
from magdash.controls_statistics.controls_params import ControlsParams
from magdash.formatting import format_number

MARKS = {True: "PROBLEM", False: "ok", None: "n/a"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "controls",
        help="robustness controls of a stored model's alphas (carriers, permutation, variants, @random)",
        description=(
            "Leave-one-carrier-out alpha and the carrier ICC(3,k) per layer, a permutation null of "
            "alpha, other extractions of the same model (--variant), the model on the stimuli in another number "
            "format (--format-variant) and the @random control, each "
            "with a verdict over the core band."
        ),
    )
    parser.add_argument("--model", required=True, help="stored model name (see: magdash list)")
    add_params_options(parser, ControlsParams, prefix="controls_", skip=("analysis",))
    parser.add_argument("--report", metavar="FILE", default=None,
                        help="also write the self-contained HTML report (figures, tables, manifest) to FILE")
    add_analysis_options(parser)
    parser.set_defaults(func=run)


def controls_params(args: argparse.Namespace) -> ControlsParams:
    return params_from_args(ControlsParams, args, prefix="controls_", analysis=analysis_params(args))


def run(args: argparse.Namespace) -> int:
    from magdash.runs.controls_runs import run_controls

    store = open_store(args)
    result = run_controls(store, args.model, args.stimuli, controls_params(args))
    variant_models = dict.fromkeys(comparison.model_b for comparison in result.variants.values())
    warn(flagged_layer_warnings(store, [args.model, *[name for name in variant_models if name != args.model]],
                                result.stimuli))
    if args.report:
        from magdash.reports import controls_report

        write_report(args.report, controls_report(store, result, result.measures))
    if args.json:
        print_json(result.to_json())
        return 0
    _print(result)
    return 0


def _n(value: float, spec: str = "+.4f") -> str:
    return format_number(value, spec)


def _print(result) -> None:
    from magdash.formatting import layer_span
    from magdash.significance import stimulus_estimate

    print(f"model: {result.model}   stimuli: {result.stimuli}   core layers: {layer_span(result.core_layers)}   "
          f"{len(result.tables.carriers)} carriers, {result.tables.n_perm:,} permutations")
    for measure in result.measures:
        print(f"\n[{measure}] verdicts over the core band")
        for verdict in result.verdicts(measure):
            print(f"  {MARKS[verdict.problem]:>7}  {verdict.control:<11} {verdict.line}")
    print("\nper layer (* core): ICC(3,k) of the carrier RDMs; alpha, parametric p, permutation p")
    perm = result.tables.permutation
    icc = result.tables.icc.set_index("layer")["icc"]
    header = f"{'layer':>5} {'ICC':>6}" + "".join(f" | {m:>8} {'p':>9} {'p perm':>8}" for m in result.measures)
    print(header)
    for layer, _label in enumerate(result.analysis.layer_labels):
        marker = "*" if layer in result.core_layers else " "
        cells = []
        for measure in result.measures:
            row = perm[(perm["measure"] == measure) & (perm["layer"] == layer)].iloc[0]
            cells.append(f" | {_n(row['alpha']):>8} {_n(row['p_parametric'], '.2e'):>9} {_n(row['p_permutation'], '.4f'):>8}")
        print(f"{layer:>4}{marker} {_n(icc[layer], '.3f'):>6}" + "".join(cells))
    for measure in result.measures:
        print(f"\n[{measure}] leave one carrier out: mean core alpha without each carrier")
        for row in result.loo_summary(measure).itertuples(index=False):
            print(f"  {row.carrier}  {_n(row.mean_core_alpha_without)}  ({row.core_layers_sign_differs} core layers "
                  f"change sign)  {row.sentence}")
    for name, comparison in [*result.variants.items(), *([(result.random_name, result.random)] if result.random else [])]:
        print(f"\n{result.model} minus {name}: mean delta alpha over the core layers (stimulus bootstrap), then per "
              "core layer [joint bootstrap CI]")
        for measure in result.measures:
            item = comparison.measures[measure]
            mean = stimulus_estimate(item.mean_delta, item.mean_delta_ci, item.mean_delta_p, item.n_resamples,
                                     level=result.params.analysis.ci)
            print(f"  [{measure}] mean {mean}")
            layers = item.layers
            cells = ", ".join(
                f"{int(row.layer_a)}: {_n(row.delta)} [{_n(row.ci_low, '+.3f')}, {_n(row.ci_high, '+.3f')}]"
                for row in layers[layers["core"]].itertuples(index=False)
            )
            print(f"  [{measure}] {cells}")
