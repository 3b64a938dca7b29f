"""``magdash freq``: number-frequency sources (count a corpus, import a CSV, list, fit) and E5."""

from __future__ import annotations

import argparse
from pathlib import Path

from magdash.cli.common import (
    add_store_option,
    flagged_layer_warnings,
    open_store,
    open_store_if_any,
    print_json,
    warn,
)
from magdash.cli.options import add_params_options, params_from_args
from magdash.formatting import format_number
from magdash.frequency.e5_params import E5Params

_REPLACE_HELP = "replace the source stored under this name (without it, a stored name is refused)"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "freq", help="number frequency: count a corpus, import counts, fits, E5",
        description="Frequency sources for the numbers 1..1000 and the E5 correlation with variability.",
    )
    commands = parser.add_subparsers(dest="freq_command", metavar="FREQ_COMMAND", required=True)

    count = commands.add_parser(
        "count", help="count numbers in text, gzip, JSONL or Parquet files and store them as a source",
        description="Count numbers with the paper's rule (?<![.\\d])(\\b\\d{1,4}\\b)(?![.\\d]) and store the counts.",
    )
    count.add_argument("files", nargs="+", metavar="FILE", help="files or glob patterns (quote globs to use ** )")
    count.add_argument("--format", dest="fmt", default="auto", choices=("auto", "text", "gzip", "jsonl", "parquet"))
    count.add_argument("--text-field", default="text", metavar="NAME", help="JSONL field / Parquet column with the text (default: text)")
    count.add_argument("--name", help="store the counts under this source name (default: from the file names)")
    count.add_argument("--range", dest="number_range", default="1-1000", metavar="LOW-HIGH", help="numbers to keep (default: 1-1000)")
    count.add_argument("--sentence-final", action="store_true", help="also count numbers followed by one '.' (\"in 2020.\")")
    count.add_argument("--words", action="store_true", help="also count numbers written as English words (\"twenty-one\")")
    count.add_argument("--paragraphs", action="store_true", help="plain text: a document is a block separated by blank lines (default: a line)")
    count.add_argument("--encoding-errors", choices=("strict", "replace"), default="strict", help="bytes that are not UTF-8: fail (default) or read as U+FFFD")
    count.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all cores)")
    count.add_argument("--json", action="store_true", help="print {counts, documents, numbers_seen} as JSON")
    count.add_argument("--replace", action="store_true", help=_REPLACE_HELP)
    add_store_option(count)
    count.set_defaults(func=run_count)

    imported = commands.add_parser("import-csv", help="store a CSV of number,count as a source")
    imported.add_argument("file", metavar="FILE.csv")
    imported.add_argument("--name", required=True, help="source name")
    imported.add_argument("--json", action="store_true")
    imported.add_argument("--replace", action="store_true", help=_REPLACE_HELP)
    add_store_option(imported)
    imported.set_defaults(func=run_import_csv)

    listing = commands.add_parser("list", help="list built-in and stored sources")
    listing.add_argument("--json", action="store_true")
    add_store_option(listing)
    listing.set_defaults(func=run_list)

    fits = commands.add_parser("fits", help="power-law, exponential and log-log fits of count against n")
    fits.add_argument("--source", required=True, help="source name (e.g. openwebtext-500k, wordfreq)")
    fits.add_argument("--json", action="store_true")
    add_store_option(fits)
    fits.set_defaults(func=run_fits)

    corr = commands.add_parser(
        "corr", help="E5: partial Spearman rho of V(n) (V_eucl by default) with log(count+1) given log n per layer, the raw "
                "rho beside it",
    )
    corr.add_argument("--model", required=True, help="stored model name")
    corr.add_argument("--source", required=True, help="frequency source name (e.g. wordfreq, openwebtext-500k)")
    corr.add_argument("--stimuli", default=None, help="stimulus set (default: the model's only or the paper's set)")
    add_params_options(corr, E5Params)
    corr.add_argument("--json", action="store_true")
    add_store_option(corr)
    corr.set_defaults(func=run_corr)


def parse_range(text: str) -> tuple[int, int]:
    from magdash.frequency import FrequencyError

    try:
        low, high = (int(part) for part in text.split("-", 1))
    except ValueError:
        raise FrequencyError(f"cannot read the range {text!r}; write LOW-HIGH, e.g. 1-1000") from None
    if not 0 <= low <= high:
        raise FrequencyError(f"the range {text!r} must satisfy 0 <= LOW <= HIGH")
    return low, high


def default_source_name(files: list[Path]) -> str:
    """The first file's name without its extensions, '+N' when there are more files."""
    stem = files[0].name
    for suffix in (".gz", ".txt", ".text", ".jsonl", ".json", ".ndjson", ".parquet", ".pq"):
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
    return stem + (f"+{len(files) - 1}" if len(files) > 1 else "")


def run_count(args: argparse.Namespace) -> int:
    from magdash.frequency import (
        CountOptions,
        check_source_name,
        corpus_source,
        count_corpus,
        expand_inputs,
    )
    from magdash.runs.frequency_runs import save_source

    options = CountOptions(
        number_range=parse_range(args.number_range), sentence_final=args.sentence_final, words=args.words,
        paragraphs=args.paragraphs, text_field=args.text_field, fmt=args.fmt, encoding_errors=args.encoding_errors,
    )
    files = expand_inputs(args.files)
    # The name is checked before the (possibly long) count.
    name = check_source_name(args.name or default_source_name(files))
    stored = open_store_if_any(args)
    if stored is not None and not args.replace:
        stored.check_new_frequency_source(name)
    counted = count_corpus(files, options, threads=args.threads)
    save_source(open_store(args, create=True), corpus_source(counted, name), replace=args.replace)
    if args.json:
        print_json({**counted.to_json(), "source": name})
        return 0
    megabytes = counted.bytes_read / 1e6
    print(f"source {name!r} stored: {counted.documents:,} documents ({counted.unit}s) in {len(counted.files)} file(s), "
          f"{megabytes:,.1f} MB in {counted.seconds:.1f} s ({megabytes / max(counted.seconds, 1e-9):,.0f} MB/s)")
    print(f"numbers found: {counted.numbers_seen:,}; in {options.number_range[0]}..{options.number_range[1]}: "
          f"{counted.numbers_in_range:,}")
    top = counted.counts[counted.counts["count"] > 0].nlargest(10, "count")
    print("most frequent: " + ", ".join(f"{n} ({c:,})" for n, c in zip(top["number"], top["count"], strict=True)))
    return 0


def run_import_csv(args: argparse.Namespace) -> int:
    from magdash.frequency import check_source_name, read_counts_csv
    from magdash.runs.frequency_runs import save_source

    source = read_counts_csv(args.file, name=check_source_name(args.name))
    save_source(open_store(args, create=True), source, replace=args.replace)
    if args.json:
        print_json({"source": source.name, "n_numbers": len(source.counts), "total": source.total})
    else:
        print(f"source {source.name!r} stored: {len(source.counts):,} numbers, total count {source.total:,}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from magdash.runs.frequency_runs import list_sources

    table = list_sources(open_store_if_any(args))
    if args.json:
        print_json(table.to_dict("records"))
        return 0
    for row in table.itertuples():
        print(f"{row.name:24s} {row.kind:8s} {row.n_numbers:6,d} numbers  total {row.total:>14,d}  {row.note}")
    return 0


def run_fits(args: argparse.Namespace) -> int:
    from magdash.frequency import fit_distributions
    from magdash.runs.frequency_runs import load_source

    source = load_source(args.source, open_store_if_any(args))
    table = fit_distributions(source)
    if args.json:
        print_json({"source": source.name, "fits": table.to_dict("records")})
        return 0
    print(f"fits of count vs n for {source.name!r} ({int(table['n_points'].iloc[0])} numbers with a positive count)")
    for row in table.itertuples():
        best = "  <- lower AIC" if row.best_aic else ""
        print(f"  {row.model:12s} {row.parameter_name:6s} = {row.parameter:.4g}  R^2 = {row.r2:.3f}  "
              f"AIC = {row.aic:.1f} ({row.space}){best}")
    return 0


def run_corr(args: argparse.Namespace) -> int:
    from magdash.frequency import E5_STATISTICS, e5_summary
    from magdash.runs.frequency_runs import e5_from_store, load_source
    from magdash.variability.measures import measure_title

    params = params_from_args(E5Params, args)
    store = open_store(args)
    source = load_source(args.source, store)
    table = e5_from_store(store, args.model, source, params, stimuli=args.stimuli)
    summary = e5_summary(table, conventions=params.conventions)
    warn(flagged_layer_warnings(store, [args.model], store.resolve_stimuli(args.model, args.stimuli)))
    if args.json:
        print_json({"model": args.model, "source": source.name, "layers": table.to_dict("records"), "summary": summary})
        return 0
    if source.name == "wordfreq":
        print("note: wordfreq estimates multi-digit numbers rather than counting them (ties within digit bins)")
    print(f"E5 for {args.model!r} with source {source.name!r}: {measure_title(params.measure)}(n) against log(count+1). "
          f"The {E5_STATISTICS['partial']} "
          "tests the frequency account; the raw rho (the paper's) is confounded with magnitude, since counts fall with n")
    print(f"{'layer':>5s}  {'partial':>7s} {'p':>9s}  {'95% CI':>17s}   {'raw rho':>7s} {'p':>9s}  {'95% CI':>17s}  n")
    for row in table.itertuples():
        print(f"{row.layer:5d}  {format_number(row.partial_rho, '7.3f')} {format_number(row.partial_p, '9.2g')}  "
              f"[{format_number(row.partial_ci_low, '6.3f')}, {format_number(row.partial_ci_high, '6.3f')}]   "
              f"{format_number(row.raw_rho, '7.3f')} {format_number(row.raw_p, '9.2g')}  "
              f"[{format_number(row.raw_ci_low, '6.3f')}, {format_number(row.raw_ci_high, '6.3f')}]  {row.n}")
    for prefix, name in E5_STATISTICS.items():
        part = summary[prefix]
        line = (f"{name}: mean {format_number(part['mean_rho'], '.3f')}, median {format_number(part['median_rho'], '.3f')} "
                f"over {part['layers_with_rho']} of {summary['layers']} layers; significant ({summary['significance']}): "
                f"{part['significant_layers']} of {part['layers_with_rho']}")
        if part["best_layer"] is not None:
            line += (f"; largest |rho| at layer {part['best_layer']} ({format_number(part['best_rho'], '.3f')}, "
                     f"p {format_number(part['best_p'], '.2g')})")
        print(line)
    if summary["unreachable"]:
        print(f"note: {summary['unreachable']}")
    return 0
