"""``magdash extract``: fill the store with number-token vectors."""

from __future__ import annotations

import argparse

from magdash.cli.common import (
    ProgressBar,
    add_store_option,
    check_name,
    flagged_layer_warnings,
    open_store,
    open_store_if_any,
    outsized_vector_warnings,
    warn,
)
from magdash.cli.options import add_params_options, params_from_args
from magdash.errors import StimulusError
from magdash.extract_params import ExtractParams
from magdash.sources.resolve import model_hint
from magdash.stimuli import (
    DEFAULT_NUMBER_FORMAT,
    NUMBER_FORMAT_NAMES,
    NUMBER_FORMATS,
    PAPER_CARRIERS,
    PAPER_SET_NAME,
    StimulusSet,
    check_reserved_name,
    paper_set_name,
    paper_stimuli,
    parse_magnitudes,
    read_carrier_file,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "extract", help="extract hidden states at the number's token for every layer",
        description="Run a model over a stimulus set and store each layer's number-token vector.",
    )
    parser.add_argument("--model", required=True, help=f"the model: {model_hint()}")
    parser.add_argument("--stimuli", default=None, help="name of the stimulus set (default: paper, paper-<format> in "
                        "another --number-format, or custom-<hash> with --carriers/--magnitudes)")
    parser.add_argument("--carriers", metavar="FILE", help="text file of carrier sentences, one per line, each with {n}")
    parser.add_argument("--magnitudes", metavar="SPEC", help="e.g. paper, 1-1000, 1,2,5,10 (default: paper)")
    parser.add_argument(
        "--number-format", choices=NUMBER_FORMAT_NAMES, default=None,
        help="how the numbers are written in place of {n}: "
             + "; ".join(f"{name}: {number_format.description}" for name, number_format in NUMBER_FORMATS.items())
             + f" (default: {DEFAULT_NUMBER_FORMAT}, or a stored set's own). A format is part of the stimulus set: "
             "the same carriers and magnitudes in another format are another set",
    )
    parser.add_argument("--name", help="store the model under this name (default: the model spec)")
    add_params_options(parser, ExtractParams)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    add_store_option(parser)
    parser.set_defaults(func=run)


def custom_stimulus_set(args: argparse.Namespace) -> StimulusSet | None:
    """The set described by --carriers and/or --magnitudes (None when neither is given).

    It needs no store, so a bad carrier file or magnitude spec is refused before the store is
    opened or created.
    """
    if args.carriers is None and args.magnitudes is None:
        return None
    carriers = read_carrier_file(args.carriers) if args.carriers is not None else list(PAPER_CARRIERS)
    magnitudes = parse_magnitudes(args.magnitudes if args.magnitudes is not None else PAPER_SET_NAME)
    number_format = args.number_format or DEFAULT_NUMBER_FORMAT
    provisional = StimulusSet("custom", tuple(carriers), tuple(magnitudes), number_format)
    name = args.stimuli
    if name is None:
        paper = provisional.content_hash == paper_stimuli(number_format).content_hash
        name = paper_set_name(number_format) if paper else f"custom-{provisional.content_hash[:8]}"
    stimuli = StimulusSet(name, tuple(carriers), tuple(magnitudes), number_format)
    check_reserved_name(stimuli)
    return stimuli


def named_stimulus_set(args: argparse.Namespace, store) -> StimulusSet:
    """The paper's set in --number-format (digits: 'paper', another: 'paper-<format>'), or the
    stored set named by --stimuli, whose format --number-format must then agree with."""
    number_format = args.number_format or DEFAULT_NUMBER_FORMAT
    paper_name = paper_set_name(number_format)
    if args.stimuli == PAPER_SET_NAME and number_format != DEFAULT_NUMBER_FORMAT:
        raise StimulusError(
            f"the paper's stimuli in {number_format} are the set {paper_name!r} ({PAPER_SET_NAME!r} is the digits "
            f"set): leave --stimuli out or give --stimuli {paper_name}"
        )
    name = paper_name if args.stimuli is None else args.stimuli
    if name not in store.stimulus_set_names():
        if name != paper_name:
            raise StimulusError(
                f"no stored stimulus set {name!r}: give --carriers and/or --magnitudes to define it"
            )
        return paper_stimuli(number_format)
    stimuli = store.stimulus_set(name)
    if args.number_format is not None and stimuli.number_format != args.number_format:
        raise StimulusError(
            f"the stored stimulus set {name!r} writes its numbers in {stimuli.number_format}, not {args.number_format}: "
            f"leave --number-format out, or give --carriers/--magnitudes and another --stimuli name for a set in "
            f"{args.number_format}"
        )
    return stimuli


def run(args: argparse.Namespace) -> int:
    check_name(args.name, "--name", "llama3-8b")
    params = params_from_args(ExtractParams, args)
    custom = custom_stimulus_set(args)
    store = open_store_if_any(args)
    # Imported only now: torch takes seconds to import, and bad input needs no model.
    from magdash.extraction import extract, load_for_extraction

    model = args.model
    if store is None:
        # A new store is created once its first model has loaded: a model that fails to load leaves
        # nothing at the path.
        model = load_for_extraction(args.model, params)
        store = open_store(args, create=True)
    stimuli = custom or named_stimulus_set(args, store)
    if args.stimuli is None:
        # A name magdash chose gives way to the name these sentences are already stored under.
        stimuli = store.known_as(stimuli)

    progress = ProgressBar("sentence", args.model, quiet=args.quiet)
    try:
        result = extract(model, stimuli, store, params, name=args.name, progress=progress)
    finally:
        progress.close()
    if result.extracted == 0:
        meanwhile = " (by another extraction of this model, which this one waited for)" if result.waited else ""
        print(f"{result.name} / {result.stimuli}: all {result.total} sentences already stored{meanwhile}")
    else:
        print(
            f"{result.name} / {result.stimuli}: extracted {result.extracted} sentences "
            f"({result.already_stored} were stored{', some by another extraction this one waited for' if result.waited else ''}) "
            f"in {result.seconds:.1f} s, {result.store_seconds:.1f} s of it "
            f"waiting for the store -> {store.path}"
        )
    warn(flagged_layer_warnings(store, [result.name], result.stimuli))
    warn(outsized_vector_warnings(store, result.name, result.stimuli))
    return 0
