"""Comparison stimuli: the design's trials, its identity, template checks, uploads and leak caveats."""

import pytest

from magdash.caveats import Severity
from magdash.comparison_stimuli import (
    PAPER_RATIOS,
    PAPER_REFERENCES,
    PAPER_TEMPLATES,
    TRIAL_COLUMNS,
    ComparisonSet,
    ComparisonTemplate,
    paper_comparisons,
    parse_templates,
    template_caveats,
)
from magdash.errors import StimulusError
from tests.support import ROOT


def test_the_paper_design_has_every_cell_in_both_positions():
    trials = paper_comparisons().trials()
    assert list(trials.columns) == list(TRIAL_COLUMNS)
    assert len(trials) == 5 * 6 * 2 * len(PAPER_TEMPLATES) == paper_comparisons().n_trials
    cells = trials.groupby(["task", "reference", "ratio", "larger"]).size()
    assert (cells == 1).all() and len(cells) == len(trials)
    assert set(trials["reference"]) == set(map(float, PAPER_REFERENCES)) and set(trials["ratio"]) == set(PAPER_RATIOS)
    assert (trials["larger"] == "A").sum() == (trials["larger"] == "B").sum()
    assert trials["trial_id"].is_unique


def test_the_larger_number_is_where_larger_says_and_near_the_ratio():
    trials = ComparisonSet(pairs=3, jitter=0.15, seed=4).trials()
    big_a = trials["larger"] == "A"
    assert (trials.loc[big_a, "magnitude_a"] > trials.loc[big_a, "magnitude_b"]).all()
    assert (trials.loc[~big_a, "magnitude_b"] > trials.loc[~big_a, "magnitude_a"]).all()
    smaller = trials[["magnitude_a", "magnitude_b"]].min(axis=1)
    larger = trials[["magnitude_a", "magnitude_b"]].max(axis=1)
    # rounding moves the ratio by at most one unit of the smaller number
    assert ((larger - smaller * trials["ratio"]).abs() <= 1).all()
    big = trials["reference"] >= 100
    assert ((larger / smaller)[big] - trials["ratio"][big]).abs().max() < 0.02
    # jitter: pairs after the first move within 15% of the reference, the first stays on it
    first = trials["pair"] == 0
    assert (smaller[first] == trials["reference"][first]).all()
    assert ((smaller / trials["reference"] - 1).abs() <= 0.15 + 1 / 10).all()
    assert (smaller[~first] != trials["reference"][~first]).any()


def test_the_question_holds_the_written_values_in_their_slots():
    trials = ComparisonSet(templates=("{b} or {a}?",), number_formats=("words", "padded")).trials()
    row = trials[(trials["format"] == "words") & (trials["reference"] == 300) & (trials["ratio"] == 2.0)
                 & (trials["larger"] == "B")].iloc[0]
    assert row["value_a"] == "three hundred" and row["value_b"] == "Six hundred"  # {b} opens the sentence
    assert row["question"] == "Six hundred or three hundred?" == row["prompt"]
    padded = trials[trials["format"] == "padded"]
    assert padded["value_a"].str.len().nunique() == 1  # every number as wide as the largest (3000)


def test_identity_is_the_content_and_includes_the_chat_template():
    base = ComparisonSet(name="x")
    assert base == ComparisonSet(name="x") and hash(base) == hash(ComparisonSet(name="x"))
    assert base.content_hash == ComparisonSet(name="y").content_hash
    assert base.content_hash != ComparisonSet(name="x", chat_template=False).content_hash
    assert base.content_hash != ComparisonSet(name="x", options=("1", "2")).content_hash
    assert base.content_hash != ComparisonSet(name="x", pairs=2).content_hash
    assert ComparisonSet().name == f"comparisons-{base.content_hash[:8]}"
    assert paper_comparisons().name == "paper" and paper_comparisons(pairs=2).name != "paper"


@pytest.mark.parametrize("template, problem", [
    ("Which is larger: A) {a}?", "has no {b}"),
    ("A) {b} or B) {b}", "has no {a}"),
    ("{a} {a} {b}", "has 2 {a}"),
    ("", "is empty"),
])
def test_a_template_without_its_slots_is_refused_naming_the_parameter(template, problem):
    with pytest.raises(StimulusError, match="templates=") as refused:
        ComparisonSet(templates=(template,))
    assert problem in str(refused.value) and refused.value.parameters == ("templates",)


@pytest.mark.parametrize("options", [("A", "A"), ("A",), ("A", " ")])
def test_bad_options_are_refused(options):
    with pytest.raises(StimulusError, match="options="):
        ComparisonSet(options=options)


@pytest.mark.parametrize("field, value", [("references", (0,)), ("ratios", (1.0,)), ("ratios", (0.5,)),
                                          ("number_formats", ("roman",)), ("pairs", 0), ("jitter", 0.9)])
def test_bad_design_values_are_refused(field, value):
    with pytest.raises(StimulusError):
        ComparisonSet(**{field: value})


def test_templates_are_read_from_text_and_csv_uploads():
    assert [t.text for t in parse_templates("A {a} or B {b}\r\nB {b} or A {a}\n\n")] == ["A {a} or B {b}", "B {b} or A {a}"]
    parsed = parse_templates("name,template\nfirst,\"A) {a}, B) {b}\"\nsecond,{b} vs {a}\n", "mine.csv")
    assert parsed == (ComparisonTemplate("first", "A) {a}, B) {b}"), ComparisonTemplate("second", "{b} vs {a}"))
    with pytest.raises(StimulusError, match="row 3 has no {b}"):
        parse_templates("template\n{a} {b}\n{a} only\n", "bad.csv")
    with pytest.raises(StimulusError, match="line 2 repeats line 1"):
        parse_templates("{a} {b}\n{a} {b}\n")


def test_a_template_that_gives_the_answer_away_is_named():
    caveats = template_caveats((
        ComparisonTemplate("fair", "Which is larger: A) {a} or B) {b}? Answer with only A or B."),
        ComparisonTemplate("told", "A) {a} or B) {b}? The answer is B."),
        ComparisonTemplate("lopsided", "A) {a} or B) {b}? Say A."),
        ComparisonTemplate("numbered", "A) {a} or B) {b}, not 52? A or B."),
    ))
    by_template = {(c.text.split("'")[1], c.severity) for c in caveats}
    assert ("told", Severity.SERIOUS) in by_template
    assert ("lopsided", Severity.CAUTION) in by_template
    assert ("numbered", Severity.CAUTION) in by_template and any("52" in c.text for c in caveats)
    assert not any("'fair'" in c.text for c in caveats)
    assert paper_comparisons().caveats() == []


def test_the_answer_cue_example_is_the_paper_s_wordings_ending_answer():
    """docs/examples/answer_cue_templates.csv (the base-model worked examples in docs/behaviour.md and
    docs/steering.md): the paper's four wordings, each followed by " Answer:", and nothing else."""
    path = ROOT / "docs" / "examples" / "answer_cue_templates.csv"
    cued = parse_templates(path.read_text(encoding="utf-8"), path.name)
    assert [(template.name, template.text) for template in cued] == [
        (template.name, template.text + " Answer:") for template in PAPER_TEMPLATES]
    assert ComparisonSet(templates=cued).name == "comparisons-87ddec8f"  # the set the docs' commands name
