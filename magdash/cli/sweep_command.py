"""``magdash sweep PLAN``: every task of a plan file, in-process or on a Ray cluster.

A progress bar over tasks on stderr, the summary table on stdout, and one line on stderr per
failed task. The exit status is 0 when every task is done or was already stored, 1 when some
failed (the others ran), 2 for a plan that cannot be run.
"""

from __future__ import annotations

import argparse
import sys

from magdash.cli.common import ProgressBar, add_store_option, open_store, print_json
from magdash.cli.options import add_params_options, params_from_args
from magdash.sweep.sweep_params import SweepParams

DETAIL_CHARS = 48


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a plan of models x stimulus sets x dtypes x positions (in-process or on Ray)",
        description=(
            "Run every task (extract, analyze, depth, controls, probe) of a TOML plan on every cell (model, stimulus "
            "set, dtype, token position). Tasks already in the store are skipped, so running the plan "
            "again resumes it; a failed task is reported and the others go on."
        ),
    )
    parser.add_argument("plan", metavar="PLAN", help="the plan file (TOML; see docs/sweeps.md)")
    add_params_options(parser, SweepParams)
    parser.add_argument("--json", action="store_true", help="the summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_store_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from magdash.sweep.runner import load_plan, run_sweep

    params = params_from_args(SweepParams, args)
    plan = load_plan(args.plan)
    store = open_store(args, create=True)
    progress = ProgressBar("task", "sweep", quiet=args.quiet)
    try:
        summary = run_sweep(plan, store, params, progress=progress)
    finally:
        progress.close()
    if args.json:
        print_json({"counts": summary.counts(), "tasks": summary.frame().to_dict(orient="records")})
    else:
        frame = summary.frame()
        # Failures are written out in full on stderr below; the table keeps one short line a task.
        frame["detail"] = [text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."
                           for text in frame["detail"]]
        print(frame.to_string(index=False))
        counts = summary.counts()
        print(f"{len(summary.outcomes)} tasks: " + ", ".join(f"{n} {status}" for status, n in counts.items())
              + f" -> {store.path}")
    for outcome in summary.failed:
        print(f"magdash: error: {outcome.line}", file=sys.stderr)
    return 1 if summary.failed else 0
