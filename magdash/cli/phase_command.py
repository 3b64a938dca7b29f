"""``magdash depth``: depth-wise Omega and covariance-spectrum diagnostics, and gamma_c.

``magdash phase``, its old name, still runs it and warns on stderr (:data:`DEPRECATED_NAME`).

Number-token mode (default, ``--stimuli``) reads a stored model's vectors; all-token mode
(``--prompts FILE``) loads the model and runs every token of the file, cut to the model's
context. ``--control`` adds the same diagnostics for the model's ``@random`` control.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from magdash.cli.common import add_store_option, open_store, print_json, warn
from magdash.cli.options import add_params_options, params_from_args
from magdash.errors import AnalysisError
from magdash.extract_params import TEXT_BATCH_SIZE
from magdash.formatting import format_number
from magdash.params import DEFAULT_DEVICE, DEFAULT_DTYPE, DEVICES, DTYPES
from magdash.phase.phase_params import PhaseParams

DEPRECATED_NAME = "phase"
"""The subcommand's old name: still accepted, with a warning to use ``depth`` (the CHANGELOG says since when)."""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "depth",
        aliases=[DEPRECATED_NAME],
        help="Omega, Marchenko-Pastur spikes, effective rank and gamma_c per layer",
        description=(
            "Per layer: mean object integrity Omega and its dip test, the covariance spectrum of "
            "the centred vectors against a robust Marchenko-Pastur fit (spikes above the bulk "
            "edge plus a 99% Tracy-Widom margin), effective rank and participation ratio; "
            "gamma_c is the depth fraction of the largest change of mean Omega."
        ),
    )
    parser.add_argument("--model", required=True,
                        help="stored model name (number tokens) or model spec (with --prompts)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--stimuli", metavar="NAME", default=None,
                        help="stored stimulus set whose number-token vectors to use")
    source.add_argument("--prompts", metavar="FILE", default=None,
                        help="text file: every token of it, cut to the model's context (loads the model)")
    add_store_option(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output (NaN as null)")
    parser.add_argument("--control", action="store_true",
                        help="also analyse the model's @random control (reported under 'control')")
    add_params_options(parser, PhaseParams)
    parser.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    parser.add_argument("--max-length", type=int, default=None, metavar="T",
                        help="with --prompts: tokens per chunk (default: the model's context)")
    parser.add_argument("--batch-size", type=int, default=TEXT_BATCH_SIZE, metavar="B",
                        help="with --prompts: chunks per forward pass")
    parser.add_argument("--dtype", choices=DTYPES, default=DEFAULT_DTYPE, help="with --prompts: the model's dtype")
    parser.add_argument("--keep-first-position", action="store_true",
                        help="with --prompts: keep a word at each chunk's first position (an attention "
                             "sink, left out by default; a BOS there is never kept)")
    parser.add_argument("--device", default=DEFAULT_DEVICE, help=f"with --prompts: {', '.join(DEVICES)}")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from magdash.overflow import nonfinite_warning
    from magdash.phase.diagnostics import phase_summary

    if args.command == DEPRECATED_NAME:
        warn([f"`magdash {DEPRECATED_NAME}` is deprecated and will be removed; use `magdash depth` (same options)"])
    options = {"params": params_from_args(PhaseParams, args), "use_cache": not args.no_cache}
    # With --prompts the model runs over the user's text, like an extraction: its cached samples
    # go into the store, created where --store asks.
    store = open_store(args, create=args.prompts is not None)
    if args.prompts is not None:
        text = _read_prompts(args.prompts)
        main, control = _texts_results(args, text, store, options)
    else:
        main, control = _stored_results(args, store, options)
    warn(nonfinite_warning(result.model, result.nonfinite_layers) for result in (main, control) if result)
    payload = phase_summary(main)
    if control is not None:
        payload["control"] = phase_summary(control)
    if args.json:
        print_json(payload)
        return 0
    _print_result(main, payload)
    if control is not None:
        print()
        _print_result(control, payload["control"])
    return 0


def _stored_results(args, store, options):
    from magdash.runs.depth_runs import phase_from_store, stored_control

    main = phase_from_store(store, args.model, args.stimuli, **options)
    control = stored_control(store, args.model, args.stimuli, **options) if args.control else None
    return main, control


def _texts_results(args, text: str, store, options):
    from magdash.names import RANDOM_SUFFIX
    from magdash.runs.depth_runs import phase_from_texts
    from magdash.sources.random_weights import split_random_suffix

    run_options = dict(store=store, dtype=args.dtype, device=args.device, batch_size=args.batch_size,
                       max_length=args.max_length, keep_first_position=args.keep_first_position, **options)
    main = phase_from_texts(args.model, text, **run_options)
    control = None
    if args.control:
        base = split_random_suffix(args.model)[0]
        control = phase_from_texts(base + RANDOM_SUFFIX, text, **run_options)
    return main, control


def _read_prompts(path: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise AnalysisError(f"cannot read the prompts file {path!r}: {error}") from None
    if not text.strip():
        raise AnalysisError(f"the prompts file {path!r} is empty")
    return text


def _print_result(result, payload: dict) -> None:

    order, params = result.order, result.params
    interval = ""
    if math.isfinite(order.low):
        interval = (f" ({params.confidence:.0%} bootstrap interval {order.low:.3f}-{order.high:.3f}, {order.n_boot} "
                    f"resamples of {order.units.describe()}, each with all of its vectors)")
    view = {"keep": "raw vectors", "drop": f"massive dimensions (mean |h_j| > {params.massive_ratio:g}x median) "
            "dropped", "standardise": "every dimension z-scored"}[params.massive]
    print(f"model: {result.model} ({view}"
          + ("; embeddings left out of the transitions)" if params.skip_embedding_step else ")"))
    print(f"gamma_c (largest change of mean Omega): {_number(order.gamma_c)}{interval}")
    if caveat := order.units.caveat():
        print(f"  {caveat}")
    if result.first_position_left_out:
        print(f"left out: the first position of {result.first_position_left_out} chunk(s), the attention sink "
              "(its BOS, or a first word: --keep-first-position keeps a word)")
    for rank, jump in enumerate(result.jumps, start=1):
        share = f", largest in {jump.p_largest:.0%} of resamples" if math.isfinite(jump.p_largest) else ""
        print(f"  jump {rank}: to gamma {_number(jump.gamma)}, change {_number(jump.change, 4)} "
              f"[{_number(jump.low, 4)}, {_number(jump.high, 4)}]{share}")
    print(f"gamma_c of the spike count: {_number(result.spikes.gamma_c)}; "
          f"of the effective rank: {_number(result.rank.gamma_c)}")
    header = f"{'layer':>5} {'gamma':>6} {'Omega':>7} {'dip p':>7} {'spikes':>6} {'MP edge':>10} " \
             f"{'sigma2':>10} {'eff.rank':>9} {'PR':>8} {'massive':>7} {'share':>6}"
    print(header)
    unfitted = False
    for row in payload["layers"]:
        spikes = "-*" if row["n_spikes"] is None else str(row["n_spikes"])
        unfitted |= row["n_spikes"] is None
        print(f"{row['layer']:>5} {_number(row['gamma'], 3):>6} {_number(row['omega_mean'], 4):>7} "
              f"{_number(row['dip_p'], 3):>7} {spikes:>6} {_number(row['mp_edge'], 4, 'g'):>10} "
              f"{_number(row['sigma2'], 4, 'g'):>10} {_number(row['effective_rank'], 1):>9} "
              f"{_number(row['participation_ratio'], 1):>8} {len(row['massive_dims']):>7} "
              f"{_number(row['massive_share'], 2):>6}")
    if unfitted:
        print("* not fitted, so no spike count, MP edge or sigma2: the Marchenko-Pastur fit did not converge (it "
              "called half of the eigenvalues spikes and stopped at that cap, ran out of iterations, or had too few "
              "eigenvalues; mp_note in --json says which)")
    dims = {item.dim for item in result.layers}
    if len(dims) == 1:
        from magdash.phase.omega import isotropic_omega_mean

        print(f"isotropic-Gaussian baseline: Omega = {isotropic_omega_mean(dims.pop()):.4f}, no spikes")


def _number(value: float, digits: int = 3, style: str = "f") -> str:
    return format_number(value, f".{digits}{style}")
