"""``magdash analyze`` and ``magdash compare``: scaling exponents, hypotheses and model pairs.

Both read the vectors from the store one layer at a time and cache their results there, so
asking again answers at once.
"""

from __future__ import annotations

import argparse
import math

from magdash.caveats import lines
from magdash.cli.common import (
    add_store_option,
    command_line_leave_out,
    flagged_layer_warnings,
    open_store,
    print_json,
    warn,
)
from magdash.cli.options import add_params_options, params_from_args
from magdash.errors import AnalysisError
from magdash.formatting import MISSING, format_number
from magdash.significance import layer_test_note, stimulus_estimate, unreachable_note
from magdash.variability.analysis_params import AnalysisParams


def _title(measure: str) -> str:
    from magdash.variability.measures import MEASURES

    return MEASURES[measure].title if measure in MEASURES else measure


def register(subparsers) -> None:
    analyze = subparsers.add_parser(
        "analyze",
        help="scaling exponents, H1-H4, E3/E4 for one stored model",
        description="Fit log V = log k + alpha log n per layer and test H1-H4 over the core layers.",
    )
    analyze.add_argument("--model", required=True, help="stored model name (see: magdash list)")
    add_analysis_options(analyze)
    analyze.add_argument(
        "--massive-control", action="store_true",
        help="also analyse the vectors without each layer's massive-activation dimensions and report "
             "both alphas side by side (JSON: 'massive_control')",
    )
    analyze.set_defaults(func=run_analyze)

    compare = subparsers.add_parser(
        "compare",
        help="layerwise alpha differences between two stored models",
        description=(
            "Alpha of model A minus model B per layer (models of different depth are aligned by "
            "depth fraction l/L), a percentile bootstrap CI that resamples magnitudes jointly (--ci-method "
            "sets the CIs of each model's own alphas, not of the differences); over model A's core layers, "
            "the mean difference with the interval and p of the stimulus bootstrap (carriers and magnitudes "
            "resampled once for every layer of both models), and the paper's Wilcoxon signed-rank test."
        ),
    )
    compare.add_argument(
        "--model", required=True, action="append", help="give twice: --model A --model B"
    )
    add_analysis_options(compare)
    compare.set_defaults(func=run_compare)


def add_analysis_options(parser: argparse.ArgumentParser) -> None:
    """The options every analysis command shares: the stimuli, the store, JSON output and every
    field of :class:`~magdash.variability.analysis_params.AnalysisParams`."""
    parser.add_argument("--stimuli", metavar="NAME", default=None, help="stimulus set name")
    add_store_option(parser)
    parser.add_argument("--json", action="store_true", help="machine-readable output (NaN as null)")
    add_params_options(parser, AnalysisParams)


def analysis_params(args: argparse.Namespace) -> AnalysisParams:
    return params_from_args(AnalysisParams, args)


def run_analyze(args: argparse.Namespace) -> int:
    from magdash.runs.analysis_runs import analyze

    params = analysis_params(args)
    store = open_store(args)
    result = analyze(store, args.model, args.stimuli, params)
    warn(lines(result.caveats(), command_line_leave_out))
    control = None
    if args.massive_control:
        from magdash.runs.analysis_runs import massive_control

        control = massive_control(store, args.model, result.stimuli, params)
    if args.json:
        document = result.to_json()
        if control is not None:
            document["massive_control"] = control.to_json()
        print_json(document)
        return 0
    _print_analysis(result)
    if control is not None:
        _print_massive_control(control)
    return 0


def _print_massive_control(control) -> None:
    from magdash.formatting import layer_span

    print()
    print(f"massive-dimension control: alpha with each layer's massive dimensions dropped (mean |h_j| > "
          f"{control.dropped.params.massive_ratio:g}x the median), core layers {layer_span(control.raw.core_layers)}")
    counts = control.layers().drop_duplicates("layer")
    dropped = "; ".join(f"{row.layer} [{row.massive_dims}]" for row in counts.itertuples() if row.n_massive)
    print(f"  dimensions dropped by layer: {dropped or 'none'}")
    for row in control.summary().itertuples(index=False):
        holds = {True: "sign holds", False: "sign flips", None: "no fit"}[row.sign_holds]
        print(f"  [{_title(row.measure)}] mean core alpha raw {_number(row.mean_alpha_raw)} -> dropped "
              f"{_number(row.mean_alpha_dropped)} (shift {_number(row.shift)}; {holds})")


def run_compare(args: argparse.Namespace) -> int:
    from magdash.runs.analysis_runs import compare

    if len(args.model) != 2:
        raise AnalysisError(f"compare needs exactly two models (--model A --model B), got {len(args.model)}")
    store = open_store(args)
    result = compare(store, args.model[0], args.model[1], args.stimuli, analysis_params(args))
    warn(flagged_layer_warnings(store, args.model, result.stimuli))
    if args.json:
        print_json(result.to_json())
        return 0
    _print_comparison(result)
    return 0


def _number(value: float, digits: int = 4) -> str:
    return format_number(value, f"+.{digits}f")


def _interval(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{low:+.3f}, {high:+.3f}]"


def _best_noise_models(result, measure: str) -> str:
    """How often each noise model is the best by AICc over the core layers."""
    rows = result.noise_models
    rows = rows[(rows["measure"] == measure) & rows["layer"].isin(result.core_layers) & (rows["delta_aicc"] == 0)]
    counts = rows["model"].value_counts()
    return ", ".join(f"{name} {count}" for name, count in counts.items()) or "none (too few points)"


def _print_analysis(result) -> None:
    from magdash.formatting import layer_span

    measures = result.params.measures
    print(f"model: {result.model}   stimuli: {result.stimuli}   "
          f"{len(result.magnitudes)} magnitudes, {result.n_layers} layers")
    if result.digit_splitting:
        print(f"tokenizer: {result.digit_splitting}")
    print(f"core layers: {layer_span(result.core_layers)}   conventions: {result.params.rules.description} "
          f"(bootstrap seed {result.params.seed})")
    print(f"alpha per layer (OLS of log V on log n; 95% bootstrap CI where computed; {MISSING} = no fit)")
    header = f"{'layer':>5} {'label':<18}" + "".join(f" {_title(m):>31}" for m in measures)
    print(header)
    for layer, label in enumerate(result.layer_labels):
        marker = "*" if layer in result.core_layers else " "
        cells = []
        for measure in measures:
            fit = result.fit(measure, layer)
            cells.append(f" {_number(fit.alpha):>9} {_interval(fit.ci_low, fit.ci_high):>21}")
        print(f"{layer:>4}{marker} {label[:18]:<18}" + "".join(cells))
    print("(* core layer)")
    print()
    low, high = result.params.window
    for measure in measures:
        h = result.hypotheses[measure]
        n = len(h.core_layers)
        verdict = {True: "supported", False: "not supported"}
        print(f"[{_title(measure)}] mean alpha over {h.n_valid}/{n} fitted core layers: "
              f"{stimulus_estimate(h.mean_alpha, h.mean_alpha_ci, h.mean_alpha_p, h.n_resamples, level=result.params.ci)}")
        print(f"  H1 alpha > 0:          {h.positive_layers}/{n} layers -> {verdict[h.h1]} "
              f"(t over the layers vs 0 = {_number(h.h1_t, 2)}, p = {format_number(h.h1_p, '.3g')})")
        print(f"  H2 alpha in [{low}, {high}]: {h.in_window_layers}/{n} layers -> {verdict[h.h2]} "
              f"(t over the layers vs 1 = {_number(h.h2_t, 2)}, p = {format_number(h.h2_p, '.3g')})")
        print(f"  H3 alpha < 1:          {h.below_one_layers}/{n} layers -> {verdict[h.h3]}")
        all_layers = result.params.rules.h4_all_layers
        scope = "all layers" if all_layers else "fitted core layers"
        undefined = " (undefined: a layer has no fit)" if all_layers and not math.isfinite(h.h4_rho) else ""
        unreachable = unreachable_note("spearman", len(h.h4_layers), unit="layers")
        print(f"  H4 alpha vs depth:     Spearman rho = {_number(h.h4_rho, 3)}, p = {format_number(h.h4_p, '.3g')} "
              f"over {scope} {layer_span(h.h4_layers)} -> {verdict[h.h4]}{undefined}"
              + (f" ({unreachable})" if unreachable else ""))
        e3 = result.e3[measure]
        dropped = ", ".join(f"{m:g}" for m in e3.dropped) or "none present"
        print(f"  E3 without {dropped}: mean alpha {_number(e3.mean_alpha_without)} "
              f"(shift {_number(e3.mean_shift)})")
        print(f"  noise models, best by AICc over the core layers: {_best_noise_models(result, measure)}")
        for line in tokenization_lines(result, measure):
            print(f"  {line}")
    e4 = result.e4
    print(f"E4 on-axis alpha {_number(e4.mean_alpha_on)} vs off-axis {_number(e4.mean_alpha_off)}: ratio "
          f"{format_number(e4.ratio, '.2f')}x {_interval(*e4.ratio_ci)}, difference "
          f"{stimulus_estimate(e4.mean_difference, e4.difference_ci, e4.difference_p, e4.n_resamples, level=result.params.ci)}")
    unreachable = unreachable_note("wilcoxon", e4.n_pairs, unit="layer pairs")
    print(f"  Wilcoxon p = {format_number(e4.wilcoxon_p, '.3g')} over {e4.n_pairs} core layers"
          + (f" ({unreachable})" if unreachable else ""))
    print(f"note: the t-tests, H4's Spearman and E4's Wilcoxon are the paper's; each is "
          f"{layer_test_note(len(result.core_layers))}. The intervals of the stimulus bootstrap resample carriers "
          "and magnitudes once for every core layer.")
    checks = result.checks
    print(f"checks: mean |OLS - Theil-Sen| {format_number(checks.ols_theil_sen, '.4f')} "
          f"(layers {layer_span(checks.ols_theil_sen_layers)}), raw-residual {format_number(checks.raw_residual, '.4f')}, "
          f"raw-proj {format_number(checks.raw_proj, '.4f')}")


def tokenization_lines(result, measure: str) -> list[str]:
    """The tokenization fits of ``measure`` over the core layers, in words: the adjusted alpha
    beside the raw one, and each token-count stratum's mean alpha (or why there are none)."""
    summary = result.tokenization_summary(measure)
    if not summary["recorded"]:
        return [f"tokenization: no adjusted alpha: {summary['note']}"]
    n = summary["n_core"]
    adjusted = (f"{_number(summary['mean_alpha_adjusted'])} over {summary['n_adjusted']}/{n} core layers"
                if summary["n_adjusted"] else f"{MISSING} (no fit: {summary['reason']})")
    identity = (f"{_number(summary['mean_alpha_identity'])} ({summary['n_identity']}/{n})"
                if summary["n_identity"] else f"no fit ({summary['identity_reason']})")
    strata = []
    for level in summary["strata"]:
        span = f"{level['smallest']:g}" if level["smallest"] == level["largest"] else \
            f"{level['smallest']:g}-{level['largest']:g}"
        token_word = "token" if level["n_tokens"] == 1 else "tokens"
        value = _number(level["mean_alpha"]) if level["n_fitted"] else f"{MISSING} ({level['reason']})"
        count = level["n_magnitudes"]
        strata.append(f"{level['n_tokens']} {token_word} ({count} magnitude{'s' if count != 1 else ''}, {span}) {value}")
    return [
        f"tokenization: alpha adjusted for the token count {adjusted} (raw {_number(summary['mean_alpha_raw'])}); "
        f"for the token count and the kept token: {identity}",
        f"  mean core alpha within token-count strata: {'; '.join(strata)}",
    ]


def _print_comparison(result) -> None:
    print(f"{result.model_a} minus {result.label_b}   stimuli: {result.stimuli}   conventions: {result.conventions}")
    for measure, item in result.measures.items():
        print(f"\n[{_title(measure)}] mean alpha over core layers: "
              f"{_number(item.mean_alpha_a)} vs {_number(item.mean_alpha_b)}; mean delta "
              f"{stimulus_estimate(item.mean_delta, item.mean_delta_ci, item.mean_delta_p, item.n_resamples, level=item.ci)}")
        unreachable = unreachable_note("wilcoxon", item.n_pairs)
        print(f"  the paper's Wilcoxon signed-rank test: Wilcoxon p = {format_number(item.wilcoxon_p, '.3g')}, "
              f"{item.n_pairs} pairs: {layer_test_note(item.n_pairs)}" + (f"; {unreachable}" if unreachable else ""))
        print(f"{'layer A':>8} {'layer B':>8} {'gamma':>6} {'alpha A':>9} {'alpha B':>9} {'delta':>9}  CI")
        for row in item.layers.itertuples(index=False):
            marker = "*" if row.core else " "
            print(f"{row.layer_a:>7}{marker} {row.layer_b:>8} {row.gamma_a:>6.3f} {_number(row.alpha_a):>9} "
                  f"{_number(row.alpha_b):>9} {_number(row.delta):>9}  {_interval(row.ci_low, row.ci_high)}")
    print("(* core layer of model A)")
