"""Hostile behaviour inputs, generated: published trial files and comparison templates either parse into
what the rest of magdash relies on or are refused with one of magdash's typed errors.

The two readers a user hands files to for the behaviour analysis (issue 41): the paper's published
trial files (``magdash behave --import``, :func:`~magdash.behaviour.published.read_published_trials`)
and comparison templates uploaded on the Stimuli page or given with ``--templates``
(:func:`~magdash.comparison_stimuli.parse_templates`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from magdash.behaviour.published import SHIPPED_TRIALS, read_published_trials, shipped_file
from magdash.behaviour.trial_frames import OPTIONS, TRIAL_COLUMNS
from magdash.comparison_stimuli import SLOT_A, SLOT_B, ComparisonSet, parse_templates, template_caveats
from magdash.errors import MagdashError
from tests.fuzz.budget import fuzz_settings


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz-behaviour-files")


# -- published trial files ------------------------------------------------------------------------

_SHIPPED = json.loads(shipped_file(SHIPPED_TRIALS).read_text(encoding="utf-8"))
GOOD_RECORDS = [record for record in _SHIPPED if record["task_type"] == "B1"][:12]

_JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10 ** 30), max_value=10 ** 30),
                         st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["A", "B", "", "C", "1e400"]),
                         st.text(max_size=8))
_JSON_VALUE = st.recursive(_JSON_SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                                  st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                           max_leaves=6)
_FIELDS = st.sampled_from(sorted({name for record in GOOD_RECORDS for name in record}) + ["extra"])


@st.composite
def _trial_file(draw) -> bytes:
    """The shipped records with some fields replaced, dropped or added, some records replaced, then
    written as JSON (NaN and Infinity as Python writes them) and maybe cut short or with a byte changed."""
    records: list = [dict(record) for record in draw(st.lists(st.sampled_from(GOOD_RECORDS), min_size=0, max_size=8))]
    for _ in range(draw(st.integers(0, 4))):
        if not records:
            break
        index = draw(st.integers(0, len(records) - 1))
        action = draw(st.sampled_from(["set", "drop", "replace"]))
        if action == "replace":
            records[index] = draw(_JSON_VALUE)
        elif isinstance(records[index], dict):
            field = draw(_FIELDS)
            if action == "drop":
                records[index].pop(field, None)
            else:
                records[index][field] = draw(_JSON_VALUE)
    document = draw(st.one_of(st.just(records), _JSON_VALUE)) if draw(st.integers(0, 9)) == 0 else records
    data = json.dumps(document, allow_nan=True).encode("utf-8")
    damage = draw(st.sampled_from(["none", "none", "cut", "byte"]))
    if damage == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "byte" and data:
        where = draw(st.integers(0, len(data) - 1))
        data = data[:where] + bytes([draw(st.integers(0, 255))]) + data[where + 1:]
    return data


@fuzz_settings(250)
@given(data=_trial_file())
def test_a_published_trial_file_reads_into_trials_or_is_refused(folder, data):
    path = folder / "trials.json"
    path.write_bytes(data)
    try:
        trials = read_published_trials(path)
    except MagdashError as error:
        event(f"refused: {type(error).__name__}")
        return
    event("read")
    # What the fits rely on: every column, a larger option of A or B, finite numbers, ratios of at least 1.
    assert list(trials.columns) == [*TRIAL_COLUMNS, "trial_id"] and len(trials) > 0
    assert set(trials["larger"]) <= set(OPTIONS)
    assert set(trials["chosen"]) <= {*OPTIONS, ""}
    for column in ("reference", "ratio", "logit_a", "logit_b", "prob_a", "prob_b"):
        assert all(math.isfinite(value) for value in trials[column]), column
    assert (trials["ratio"] >= 1).all()


def test_the_unchanged_records_read_back_as_they_were(folder):
    """The generator's starting point parses (so the property above tests refusals of changed files)."""
    path = folder / "good.json"
    path.write_text(json.dumps(GOOD_RECORDS), encoding="utf-8")
    trials = read_published_trials(path)
    assert len(trials) == len(GOOD_RECORDS)
    assert trials["ratio"].tolist() == [record["ratio"] for record in GOOD_RECORDS]


# -- comparison templates -------------------------------------------------------------------------

_HOSTILE_PIECES = [SLOT_A, SLOT_B, "{", "}", "{a.__class__}", "{0}", "{{a}}", "\0", "\r", "\n", "\r\n"]
_PLAIN_PIECES = ["A)", "B)", "=", "+", "@", ",", ";", '"', "'", "\t", " ", "Which is larger? ", "Answer: ", "template",
                 "name", "α", "—", "\u202e", "\ufeff"]
_NOISE = st.lists(st.sampled_from(_PLAIN_PIECES), max_size=5).map("".join)


@st.composite
def _template_text(draw) -> str:
    """Lines that hold one {a} and one {b} among plain pieces (quotes, commas, formula starts, bidi marks),
    a quarter of them with a hostile piece inserted (another slot, a brace, a format field, NUL, a line end),
    ended by LF, CRLF or CR; or every kind of piece at random."""
    if draw(st.integers(0, 4)) == 0:
        return "".join(draw(st.lists(st.sampled_from(_HOSTILE_PIECES + _PLAIN_PIECES), max_size=24)))
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        slots = (SLOT_A, SLOT_B) if draw(st.booleans()) else (SLOT_B, SLOT_A)
        line = draw(_NOISE) + slots[0] + draw(_NOISE) + slots[1] + draw(_NOISE)
        if draw(st.integers(0, 3)) == 0:
            where = draw(st.integers(0, len(line)))
            line = line[:where] + draw(st.sampled_from(_HOSTILE_PIECES)) + line[where:]
        lines.append(line)
    return draw(st.sampled_from(["\n", "\r\n", "\r"])).join(lines)


@fuzz_settings(400)
@given(text=_template_text(), filename=st.sampled_from(["templates.txt", "templates.csv", "TEMPLATES.CSV", "t"]))
def test_a_templates_file_parses_into_templates_with_both_slots_or_is_refused(text, filename):
    try:
        templates = parse_templates(text, filename)
    except MagdashError as error:
        event(f"refused: {type(error).__name__}")
        return
    event("parsed")
    assert templates
    for template in templates:
        assert template.text.count(SLOT_A) == 1 and template.text.count(SLOT_B) == 1
        written = template.write("47", "52")
        assert "47" in written and "52" in written and SLOT_A not in written and SLOT_B not in written
    template_caveats(templates)  # the leak checks run on whatever parsed
    trials = ComparisonSet(templates=templates, references=(10,), ratios=(1.5,)).trials()
    assert len(trials) == 2 * len(templates)  # the larger number in A and in B, once per template
