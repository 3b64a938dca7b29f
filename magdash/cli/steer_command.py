"""``magdash steer``: is the magnitude code used? Steering along the magnitude direction, layer by layer.

At each layer, dose x the magnitude direction (the log-n probe's unit weight vector, or PC1 of the
centroids) is added to the residual stream at one operand's number in the model's stored comparison
prompts, against the same push along random directions (Cacioli 2026, arXiv 2603.20642, Paradigm D;
:mod:`magdash.steering`). Cached in the store.
"""

from __future__ import annotations

import argparse

from magdash.cli.common import ProgressBar, add_store_option, open_store, print_json, warn
from magdash.cli.options import add_params_options, params_from_args
from magdash.errors import AnalysisError
from magdash.extract_params import ExtractParams
from magdash.formatting import format_number
from magdash.steering.steer_params import SteerParams

EXTRACT_PREFIX = "extract_"
"""The destinations of the forward passes' options, apart from the steering's."""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "steer",
        help="is the magnitude code used? push the numbers along the magnitude direction, layer by layer, "
             "against random directions",
        description=(
            "Per layer: adds dose x the magnitude direction (the log-n probe's unit weight vector, or PC1 of the "
            "centroids; one dose = the span of the magnitudes along it) to the residual stream at one operand's "
            "number in the model's stored comparison prompts (run them first: magdash behave --model MODEL), and "
            "the same push along random directions (and directions orthogonal to it). Reports the mean "
            "|delta p(correct)| of each, specificity (their ratio), the share of prompts moved more than the "
            "random directions' 97.5th percentile (functional relevance at >= 75%, Cacioli 2026's H7) and the "
            "signed shift toward the pushed operand, with bootstrap intervals over prompts. The model's @random "
            "control, when it has vectors and trials on the same sets, is steered too, as a check (no specificity "
            "expected)."
        ),
    )
    parser.add_argument("--model", required=True, help="stored model name, with vectors and comparison trials")
    parser.add_argument("--stimuli", metavar="NAME", default=None,
                        help="the stimulus set whose vectors give the directions (default: the model's only one)")
    parser.add_argument("--comparisons", metavar="NAME", default=None,
                        help="the comparison set whose trials are steered (default: the model's only one)")
    add_store_option(parser)
    add_params_options(parser, SteerParams)
    add_params_options(parser, ExtractParams, prefix=EXTRACT_PREFIX,
                       skip=("dtype", "position", "padding_side", "allow_number_first"))
    parser.add_argument("--json", action="store_true", help="machine-readable output: one record per layer")
    parser.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from magdash.names import control_name
    from magdash.runs.behaviour_runs import trial_sets_of
    from magdash.runs.steer_runs import steer_with_control

    params = params_from_args(SteerParams, args)
    extract_params = params_from_args(ExtractParams, args, prefix=EXTRACT_PREFIX)
    store = open_store(args)
    if not trial_sets_of(store, args.model):
        raise AnalysisError(f"{args.model!r} has no comparison trials in this store: steering pushes the prompts of "
                            f"its trials, so run them first: magdash behave --model {args.model}")
    quiet = args.quiet or args.json
    progress = ProgressBar("pass", f"steering {args.model}", quiet=quiet)
    control_progress = ProgressBar("pass", f"steering {control_name(args.model)}", quiet=quiet)
    try:
        result, control, beside = steer_with_control(
            store, args.model, args.stimuli, args.comparisons, params, extract_params=extract_params,
            use_cache=not args.no_cache, progress=progress, control_progress=control_progress)
    finally:
        progress.close()
        control_progress.close()
    warn(result.warnings())
    if args.json:
        print_json({**result.to_json(), "control": None if control is None else control.to_json(),
                    "beside_control": None if beside is None else beside.to_dict(orient="records")})
        return 0
    _print(result)
    if control is not None and beside is not None:
        print("\nthe @random control, steered along its own directions (a check: no specificity expected)")
        _print(control)
        print(f"\n{result.model} beside {control.model} per layer:")
        print(beside.to_string(index=False, float_format=lambda value: format_number(value, ".2f")))
    return 0


def _n(value, spec: str = ".3f") -> str:
    return format_number(value, spec)


def _print(result) -> None:
    params = result.params
    print(f"model: {result.model}   directions: {params.direction} on {result.stimuli}   trials: {result.n_trials} of "
          f"{result.comparisons}, operand {params.operand} pushed   dose {params.full_dose:g}   "
          f"{params.n_random} random directions, {params.n_boot:,} bootstrap resamples, {params.ci:.0%} intervals")
    print(f"unpatched: position-corrected accuracy {_n(result.unpatched.accuracy, '.2f')} (one-sided binomial p "
          f"{_n(result.unpatched.p_value, '.2g')}), 'A' chosen on {result.unpatched.choose_a:.0%} of the prompts, the two "
          f"options holding a median {_n(result.unpatched.option_mass, '.2f')} of the probability")
    print("per layer: mean |delta p(correct)| along the magnitude direction and the random ones, specificity "
          f"(their ratio) with its interval, the share of prompts above the random {params.null_percentile:g}th "
          "percentile (* relevant), the orthogonal null's specificity, the shift toward the pushed operand")
    print(f"{'layer':>5} {'magnitude':>9} {'random':>8} {'specificity':>24} {'share':>7} {'orth.':>7} {'shift':>8}")
    for row in result.layers.itertuples(index=False):
        interval = f"[{_n(row.specificity_low, '.2f')}, {_n(row.specificity_high, '.2f')}]"
        print(f"{int(row.layer):>5} {_n(row.magnitude_effect):>9} {_n(row.random_effect):>8} "
              f"{_n(row.specificity, '.2f'):>8} {interval:>15} {_n(row.share_above_random, '.2f'):>6}"
              f"{'*' if row.relevant else ' '} {_n(row.specificity_orthogonal, '.2f'):>7} {_n(row.shift, '+.3f'):>8}")
    relevant = result.relevant_layers()
    print(f"functionally relevant (>= {params.relevance_share:.0%} of prompts above the null): "
          f"{', '.join(map(str, relevant)) if relevant else 'no layer'}")
