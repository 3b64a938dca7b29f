"""``magdash design``: what can a study of this design detect, with noise like a stored model's?

Power to detect alpha > 0 (H1) and a difference between two models (E6: Wilcoxon and the
layerwise joint bootstrap), the CI half-width of alpha as carriers and magnitudes grow, and the
minimal detectable alpha (:mod:`magdash.controls_statistics.design`).
"""

from __future__ import annotations

import argparse
import math

from magdash.cli.analyze_command import add_analysis_options, analysis_params
from magdash.cli.common import open_store, print_json, write_report
from magdash.cli.options import add_params_options, params_from_args
from magdash.controls_statistics.controls_params import DesignParams
from magdash.formatting import format_number


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "design",
        help="study-design simulator: power, CI half-width and minimal detectable alpha",
        description=(
            "Simulate studies with a planted alpha and noise calibrated from a stored model: power "
            "for H1 and E6, CI half-widths as carriers and magnitudes grow, minimal detectable alpha."
        ),
    )
    parser.add_argument("--model", required=True, help="stored model whose noise calibrates the simulation")
    add_params_options(parser, DesignParams, prefix="design_")
    parser.add_argument("--report", metavar="FILE", default=None,
                        help="also write the self-contained HTML report (figures, tables, manifest) to FILE")
    add_analysis_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from magdash.runs.design_runs import run_design

    params = params_from_args(DesignParams, args, prefix="design_")
    store = open_store(args)
    result = run_design(store, args.model, args.stimuli, params, analysis_params(args))
    if args.report:
        from magdash.reports import design_report
        from magdash.runs.analysis_runs import analyze

        analysis = analyze(store, args.model, args.stimuli, analysis_params(args))
        write_report(args.report, design_report(store, result, args.model, analysis))
    if args.json:
        print_json(result.to_json())
        return 0
    _print(result)
    return 0


def _p(value: float) -> str:
    return format_number(value, ".3f")


def _band(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "[—]"
    return f"[{low:.4f}, {high:.4f}]"


def _print(result) -> None:
    params, calibration = result.params, result.calibration
    summary = result.summary()
    minimal = result.minimal_alpha
    print(f"design: {result.n_magnitudes} magnitudes ({params.magnitudes}) x {params.n_carriers} carriers x "
          f"{result.n_layers} core layers; {params.n_studies:,} studies per point, seed {params.seed}")
    print(f"noise calibrated on {calibration.source}: tau {', '.join(f'{t:.3f}' for t in calibration.tau)}; "
          f"d_eff {', '.join(map(str, calibration.dimension))}; rho {calibration.rho:.2f}")
    print(f"H1 (t-test of the core alphas, t > 0 and p < {params.level}): power {_p(summary['h1_power'])} at "
          f"alpha = {params.alpha:g} (size-adjusted {_p(summary['h1_power_size_adjusted'])}); size at alpha = 0: "
          f"{_p(summary['h1_size'])} (nominal {params.level / 2:g})")
    print(f"minimal detectable alpha at {params.power_target:.0%} power: {format_number(minimal['nominal'], '.4f')} "
          f"{_band(minimal['nominal_low'], minimal['nominal_high'])}; size-adjusted "
          f"{format_number(minimal['size_adjusted'], '.4f')} {_band(minimal['size_adjusted_low'], minimal['size_adjusted_high'])}")
    print(f"E6 at delta = {params.delta:g}: Wilcoxon power {_p(summary['e6_wilcoxon_power'])} (size "
          f"{_p(summary['e6_wilcoxon_size'])}); joint bootstrap: share of core layers whose CI excludes 0 "
          f"{_p(summary['e6_bootstrap_layer_power'])}")
    print(f"95% CI half-width of alpha per layer at this design: {format_number(summary['ci_half_width'], '.4f')}")
    print("\nH1 power curve (Monte Carlo 95% band)")
    print(f"{'alpha':>8} {'power':>6} {'band':>16} {'size-adj.':>9} {'majority':>8}")
    for row in result.h1.itertuples(index=False):
        print(f"{row.alpha:>8.4f} {row.power:>6.3f} {_band(row.power_low, row.power_high):>16} "
              f"{row.power_size_adjusted:>9.3f} {row.majority:>8.3f}")
    print("\nE6 power curve")
    print(f"{'delta':>8} {'Wilcoxon':>8} {'size-adj.':>9} {'bootstrap layers':>16} {'majority':>8}")
    for row in result.e6.itertuples(index=False):
        print(f"{row.delta:>8.4f} {row.wilcoxon:>8.3f} {row.wilcoxon_size_adjusted:>9.3f} "
              f"{format_number(row.bootstrap_layers, '.3f'):>16} {format_number(row.bootstrap_majority, '.3f'):>8}")
    print("\nCI half-width of alpha as the design grows")
    for row in result.ci_width.itertuples(index=False):
        print(f"  {row.factor:<10} {row.n_carriers:>3} carriers x {row.n_magnitudes:>4} magnitudes: "
              f"{row.half_width:.4f} {_band(row.half_width_low, row.half_width_high)}")
