"""``magdash probe``: is magnitude linearly decodable from each layer, and how noisy is the decoded magnitude?

Ridge probes of log n (and n) per layer, scored on held-out carriers and held-out magnitudes,
against a control task and the model's ``@random`` control, with the spread of the decoded
magnitude across carriers (:mod:`magdash.probes`, docs/science.md "Probes"). Cached in the store.
"""

from __future__ import annotations

import argparse

from magdash.cli.common import ProgressBar, add_store_option, open_store, print_json, warn, write_report
from magdash.cli.options import add_params_options, params_from_args
from magdash.errors import AnalysisError
from magdash.formatting import format_number
from magdash.probes.probe_params import ProbeParams


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "probe",
        help="linear probes of magnitude per layer: held-out R², control task, @random, baseline, decoded noise against its null",
        description=(
            "Per layer: a ridge probe of log n (and n) scored on held-out carriers (a new context) and on "
            "held-out magnitudes (interpolation), the same probe on a control task (labels permuted across "
            "magnitudes) and on the model's @random control when it is stored, the probe's direction against "
            "the centroids' PC1, each R² beside the score of the numbers' digit count (and token count) alone on "
            "the same folds and within those strata, the band of layers that decode unseen magnitudes best, and "
            "how the decoded magnitude's spread across carriers scales with n (beta, judged against what a "
            "constant-error read-out gives). Needs at least 3 carriers and magnitude_folds + 2 magnitudes."
        ),
    )
    parser.add_argument("--model", required=True, help="stored model name (see: magdash list)")
    parser.add_argument("--stimuli", metavar="NAME", default=None, help="stimulus set name")
    add_store_option(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output (NaN as null)")
    add_params_options(parser, ProbeParams, prefix="probe_")
    parser.add_argument("--no-control", action="store_true",
                        help="leave out the model's @random control (probed by default when it is stored)")
    parser.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    parser.add_argument("--report", metavar="FILE", default=None,
                        help="also write the self-contained HTML report (figures, tables, manifest) to FILE")
    parser.add_argument("--layer", type=int, default=None, metavar="L",
                        help="with --report: the layer of the decoded-magnitude figures (default: where the "
                             "held-out-magnitude R² is largest)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from magdash.runs.probe_runs import ProbeRun, probe, stored_control

    params = params_from_args(ProbeParams, args, prefix="probe_")
    store = open_store(args)
    if args.layer is not None:
        _check_layer(args.layer, args.model, store.model_record(args.model).n_layers)

    def probed(name: str, stimuli: str | None):
        progress = ProgressBar("layer", f"probing {name}", quiet=args.quiet or args.json)
        try:
            return probe(store, name, stimuli, params, use_cache=not args.no_cache, progress=progress)
        finally:
            progress.close()

    found = probed(args.model, args.stimuli)
    control = None if args.no_control else stored_control(store, args.model, found.stimuli)
    result = ProbeRun(found, probed(control, found.stimuli) if control is not None else None)
    warn(line for item in result.series().values() for line in item.warnings())
    if args.report:
        from magdash.reports import probe_report

        write_report(args.report, probe_report(store, result.series(), args.layer, params.targets[0]))
    if args.json:
        print_json(result.to_json())
        return 0
    _print(result)
    return 0


def _check_layer(layer: int, model: str, n_layers: int) -> None:
    if not 0 <= layer < n_layers:
        raise AnalysisError(f"--layer {layer} is not a layer of {model}: choose 0-{n_layers - 1}")


def _n(value, spec: str = ".3f") -> str:
    return format_number(value, spec)


def _interval(low, high, spec: str = ".2f") -> str:
    return f"[{_n(low, spec)}, {_n(high, spec)}]"


def _print(run) -> None:
    from magdash.probes.findings import READOUTS, probe_findings

    result, control = run.result, run.control
    params = result.params
    print(f"model: {result.model}   stimuli: {result.stimuli}   {result.magnitudes.size} magnitudes x "
          f"{result.n_carriers} carriers   {params.n_boot:,} bootstrap resamples, {params.ci:.0%} intervals")
    print(f"baseline: the held-out R² of each number's {result.strata_by} alone, on the probe's folds")
    if control is None:
        print("@random control: not stored on these stimuli (extract it to compare), or left out (--no-control)")
    for target in params.targets:
        real = result.score_table("carrier", target, "real").set_index("layer")
        shuffled = result.score_table("carrier", target, "control").set_index("layer")
        held_out = result.score_table("magnitude", target, "real").set_index("layer")
        selectivity = result.selectivity[(result.selectivity["target"] == target)
                                         & (result.selectivity["scheme"] == "carrier")].set_index("layer")
        directions = result.directions[result.directions["target"] == target].set_index("layer")
        scaling = result.decoded_scaling[result.decoded_scaling["target"] == target].set_index("layer")
        band = set(result.best_and_band(target)[1])
        random = control.score_table("magnitude", target, "real").set_index("layer") if control is not None else None
        print(f"\n[{target}] probe of {READOUTS[target]}: held-out R² across carriers (with its interval); across "
              "magnitudes, with the baseline's and the R² within strata (* in the band of best layers); the control "
              "task's across carriers, the selectivity, cos(probe, PC1); the decoded n-hat's SD ∝ n^beta with "
              "what a constant-error read-out gives (null) and beta's permutation p against it")
        header = (f"{'layer':>5} {'label':<16} {'R² carriers':>22} {'R² magn.':>9} {'baseline':>8} {'within':>7} "
                  f"{'control':>8} {'select.':>8} {'cos PC1':>8} {'beta':>22} {'null':>6} {'p':>7}")
        if random is not None:
            header += f" {'@random R² magn.':>16}"
        print(header)
        for row in result.layers.itertuples(index=False):
            layer = int(row.layer)
            if layer not in real.index:
                print(f"{layer:>5} {row.label[:16]:<16} not probed: {int(row.nonfinite)} Inf/NaN vector(s)")
                continue
            score, fit, magnitudes = real.loc[layer], scaling.loc[layer], held_out.loc[layer]
            line = (f"{layer:>5} {row.label[:16]:<16} {_n(score['r2']):>6} {_interval(score['r2_low'], score['r2_high']):>15} "
                    f"{_n(magnitudes['r2']):>8}{'*' if layer in band else ' '} {_n(magnitudes['baseline_r2']):>8} "
                    f"{_n(magnitudes['r2_within_strata']):>7} {_n(shuffled.loc[layer, 'r2']):>8} "
                    f"{_n(selectivity.loc[layer, 'selectivity']):>8} {_n(directions.loc[layer, 'cosine_pc1']):>8} "
                    f"{_n(fit['beta'], '.2f'):>6} {_interval(fit['beta_low'], fit['beta_high']):>15} "
                    f"{_n(fit['beta_null'], '.2f'):>6} {_n(fit['beta_null_p'], '.2g'):>7}")
            if random is not None:
                line += f" {_n(random.loc[layer, 'r2']) if layer in random.index else '—':>16}"
            print(line)
        for sentence in probe_findings(result, control, target):
            print(sentence)
