"""``magdash behave``: the model's own number comparisons, its psychometric functions and Weber fractions.

Forced-choice prompts ("Which is larger: A) 47 or B) 52? Answer with only A or B."), the larger
number as often in A as in B, run on the model where not stored yet (the next-token logits of the
two answer options; no sampling), or read from a published trial file (``--import``); then
fitted per reference (:mod:`magdash.behaviour`, docs/behaviour.md). Cached in the store.
"""

from __future__ import annotations

import argparse

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.cli.common import (
    ProgressBar,
    add_store_option,
    open_store,
    open_store_if_any,
    print_json,
    warn,
    write_report,
)
from magdash.cli.options import add_params_options, params_from_args
from magdash.errors import AnalysisError
from magdash.extract_params import ExtractParams
from magdash.formatting import format_number
from magdash.stimuli import NUMBER_FORMATS

EXTRACT_PREFIX = "extract_"
"""The destinations of the extraction's options (its ``seed``-free fields never clash, but keep them apart)."""


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "behave",
        help="the model's own number comparisons: psychometric functions, Weber fractions, Weber's law, position bias",
        description=(
            "Runs forced-choice comparisons ('Which is larger: A) 47 or B) 52?') on a model where they are not "
            "stored yet (references 10-1000, ratios 1.05-3, the larger number in A and in B; the chosen option is "
            "the one with the larger next-token logit, no sampling), or imports a published trial file, then fits "
            "a psychometric function of ln(ratio) per reference: the Weber fraction (the ratio at 75% correct, "
            "minus 1), the slope of ln WF on ln reference (0: Weber's law) and the position bias. The model's "
            "@random control, when it has trials on the same set, is set beside it (model minus control)."
        ),
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="a model spec (built-in, folder, GGUF, Hugging Face cache, @random)")
    source.add_argument("--import", dest="trials_file", metavar="FILE",
                        help="a published trial file (the fields of the paper's paradigm_b_raw.json); needs --name")
    parser.add_argument("--name", default=None,
                        help="the model's name in the store (default: the spec); with --import, required")
    parser.add_argument("--comparisons", metavar="NAME", default=None,
                        help="a stored comparison set (default: the model's only one, else the paper's design)")
    parser.add_argument("--templates", metavar="FILE", default=None,
                        help="prompt templates of your own (.txt one per line, or .csv), each with one {a} and one {b}")
    parser.add_argument("--number-formats", metavar="F,F", default=None,
                        help=f"how the numbers are written: {', '.join(NUMBER_FORMATS)} (default: digits)")
    parser.add_argument("--no-chat-template", action="store_true",
                        help="give the bare question to an instruct model (its chat template is applied by default)")
    add_store_option(parser)
    add_params_options(parser, BehaviourParams)
    add_params_options(parser, ExtractParams, prefix=EXTRACT_PREFIX,
                       skip=("position", "padding_side", "allow_number_first"))
    parser.add_argument("--versus", metavar="MODEL", default=None,
                        help="a second stored model with trials on the same set: its fits and the difference (this "
                             "model minus it)")
    parser.add_argument("--json", action="store_true",
                        help="machine-readable output: one record per model, task, reference, variant and conventions")
    parser.add_argument("--no-cache", action="store_true", help="refit even if cached (stored trials are kept)")
    parser.add_argument("--report", metavar="FILE", default=None,
                        help="also write the self-contained HTML report (figures, tables, manifest) to FILE")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from magdash.behaviour.behaviour_result import compare_behaviour
    from magdash.runs.behaviour_runs import behave, behaviour, behaviour_beside_representation, import_trials

    params = params_from_args(BehaviourParams, args)
    extract_params = params_from_args(ExtractParams, args, prefix=EXTRACT_PREFIX)
    if args.trials_file is not None and not args.name:
        raise AnalysisError("give the imported trials a model name: name=", parameters=("name",))
    comparisons = None if args.trials_file is not None else _comparisons(args)
    store = open_store_if_any(args)
    model = args.model
    if store is None:
        # A new store is created once what goes into it is known to be good: a trial file that is refused or
        # a model that fails to load leaves nothing at the path.
        if args.trials_file is not None:
            from magdash.behaviour.published import read_published_trials

            read_published_trials(args.trials_file)
        else:
            from magdash.trial_extraction import load_for_trials, resolve_for_trials

            model = load_for_trials(resolve_for_trials(args.model, extract_params), extract_params)
        store = open_store(args, create=True)
    progress = ProgressBar("trial", f"comparisons of {args.name or args.model}", quiet=args.quiet or args.json)
    try:
        if args.trials_file is not None:
            import_trials(store, args.trials_file, args.name, args.comparisons)
            result = behaviour(store, args.name, args.comparisons, params, use_cache=not args.no_cache)
        else:
            result = behave(store, model, comparisons, params, extract_params=extract_params,
                            name=args.name, use_cache=not args.no_cache, progress=progress)
    finally:
        progress.close()
    results = {result.model: result}
    versus = None
    if args.versus:
        results[args.versus] = behaviour(store, args.versus, result.comparisons, params)
        versus = compare_behaviour(result, results[args.versus])
    else:
        versus = _control(store, result, params, results)
    warn([*_design_warnings(store, result.comparisons), *(line for found in results.values() for line in found.warnings())])
    if args.report:
        from magdash.reports import behaviour_report

        write_report(args.report, behaviour_report(store, list(results.values())))
    if args.json:
        beside = {name: behaviour_beside_representation(store, found) for name, found in results.items()}
        print_json({"records": [record for found in results.values() for record in found.records()],
                    "models": {name: found.to_json() for name, found in results.items()},
                    "representation": {name: None if table is None else table.to_dict(orient="records")
                                       for name, table in beside.items()},
                    "differences": None if versus is None else versus.to_dict(orient="records")})
        return 0
    for found in results.values():
        _print(found)
        _print_representation(store, found)
    if versus is not None:
        names = list(results)
        print(f"\n{names[0]} minus {names[1]} (magdash conventions; paired bootstrap intervals):")
        print(versus.to_string(index=False, float_format=lambda value: format_number(value, ".3f")))
    return 0


def _comparisons(args: argparse.Namespace):
    """The comparison design the options describe: a stored set's name, user templates or other formats over
    the paper's references and ratios, or None (the default rule)."""
    from magdash.comparison_stimuli import ComparisonSet, paper_comparisons, parse_templates

    if args.templates is None and args.number_formats is None and not args.no_chat_template:
        return args.comparisons
    if args.comparisons is not None:
        raise AnalysisError("comparisons= names a stored design; give it, or templates and formats for a new one, "
                            "not both", parameters=("comparisons",))
    formats = tuple(part.strip() for part in (args.number_formats or "digits").split(",") if part.strip())
    if args.templates is None:
        return paper_comparisons(number_formats=formats, chat_template=not args.no_chat_template)
    from pathlib import Path

    path = Path(args.templates)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise AnalysisError(f"cannot read the templates file {path}: {error}", parameters=("templates",)) from error
    return ComparisonSet(templates=parse_templates(text, path.name), number_formats=formats,
                         chat_template=not args.no_chat_template)


def _control(store, result, params, results):
    """The model's ``@random`` control's fits beside it, when the control has trials on the same set."""
    from magdash.behaviour.behaviour_result import compare_behaviour
    from magdash.names import control_name
    from magdash.runs.behaviour_runs import behaviour, trial_sets_of

    control = control_name(result.model)
    if control == result.model or result.comparisons not in trial_sets_of(store, control):
        return None
    results[control] = behaviour(store, control, result.comparisons, params)
    return compare_behaviour(result, results[control])


def _print(result) -> None:
    print(f"\nmodel: {result.model}   comparisons: {result.comparisons}   {result.n_trials:,} trials, "
          f"{result.n_unanswered:,} not measured (the two options under "
          f"{format_number(result.params.min_option_mass, '.2f')} of the probability)")
    bias = result.position_bias
    for row in bias.itertuples(index=False):
        print(f"  {row.task} at {row.reference:g}: P(answer A) {format_number(row.p_choose_a, '.2f')}")
    columns = ["task", "reference", "variant", "conventions", "weber_fraction", "wf_low", "wf_high", "threshold",
               "lapse", "status"]
    print(result.fits.loc[:, columns].to_string(index=False, float_format=lambda value: format_number(value, ".3f")))
    law = result.weber_law
    print("Weber's law (slope of ln WF on ln reference; 0: the same fraction at every reference):")
    print(law.to_string(index=False, float_format=lambda value: format_number(value, ".3f")))


def _print_representation(store, result) -> None:
    from magdash.runs.behaviour_runs import behaviour_beside_representation

    table = behaviour_beside_representation(store, result)
    if table is None:
        print(f"representation: {result.model} has no vectors in this store (extract it to set CV(n) beside the "
              "Weber fractions)")
        return
    print("behaviour against representation (Weber fraction, choice, magdash conventions, across references; "
          "cv: CV(n) over the core layers; decoded_wf: the log probe's SD(n-hat)/n at its best layer, when cached):")
    print(table.to_string(index=False, float_format=lambda value: format_number(value, ".3f")))


def _design_warnings(store, comparisons: str) -> list[str]:
    """What the comparison design itself gives away (a template that states or hints at the answer:
    :func:`magdash.comparison_stimuli.template_caveats`); none for imported trials, which have no design."""
    from magdash.caveats import lines

    design = store.comparison_set(comparisons) if comparisons else None
    return [] if design is None else lines(design.caveats())
