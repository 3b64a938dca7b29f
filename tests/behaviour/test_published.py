"""The paper's published trial files are read into the trials frame; malformed files get clear errors."""

from __future__ import annotations

import json

import pytest

from magdash.behaviour.published import SHIPPED_TRIALS, published_trials, read_published_trials, shipped_file
from magdash.behaviour.trial_frames import TRIAL_COLUMNS
from magdash.errors import AnalysisError


def record(**changes):
    base = {"task_type": "B1", "domain": "numerical", "baseline": 10.0, "ratio": 1.5, "value_a": "10",
            "value_b": "15", "correct_answer": "B", "prompt": "Which is larger: A) 10 or B) 15?", "pair_id": "X-1",
            "predicted": "B", "a_logit": 1.0, "b_logit": 3.0, "a_prob": 0.1, "b_prob": 0.8, "correct": True}
    base.update(changes)
    return base


def test_the_shipped_file_reads_into_the_trials_frame():
    trials = read_published_trials(shipped_file(SHIPPED_TRIALS))
    assert list(trials.columns) == [*TRIAL_COLUMNS, "trial_id"]
    assert len(trials) == 4500 and sorted(trials["task"].unique()) == ["B1", "B2", "B3"]
    assert trials.attrs["skipped_tasks"] == ["symbolic_control"]
    assert set(trials["larger"]) == {"A", "B"} and set(trials["chosen"]) == {"A", "B"}
    assert (trials["correct"] == (trials["chosen"] == trials["larger"])).all()
    assert sorted(trials["reference"].unique()) == [10.0, 30.0, 100.0, 300.0, 1000.0]


def test_a_record_maps_onto_the_frame():
    frame = published_trials([record(), record(predicted="7", correct=False)])
    assert frame.loc[0, "reference"] == 10.0 and frame.loc[0, "larger"] == "B"
    assert frame.loc[0, "logit_b"] == 3.0 and frame.loc[0, "prob_a"] == 0.1 and frame.loc[0, "trial_id"] == "B1:X-1"
    assert frame.loc[1, "chosen"] == ""  # an answer that is neither option


def test_the_same_pair_in_two_tasks_is_two_trials():
    # the paper numbers a pair once and asks it in every task: both must be kept apart
    frame = published_trials([record(), record(task_type="B2")])
    assert list(frame["trial_id"]) == ["B1:X-1", "B2:X-1"]


@pytest.mark.parametrize(("records", "words"), [
    ({"not": "a list"}, "non-empty JSON list"),
    ([], "non-empty JSON list"),
    (["text"], "record 0 is a str"),
    ([record(), {k: v for k, v in record().items() if k != "ratio"}], "record 1 lacks ratio"),
    ([record(ratio="1.5")], "ratio is '1.5', not a finite number"),
    ([record(a_logit=True)], "a_logit is True"),
    ([record(correct="yes")], "correct is 'yes'"),
    ([record(ratio=0.5)], "below 1"),
    ([record(), record(correct_answer="C")], "record 1's correct_answer is 'C'"),
    ([record(correct_answer="15")], "no forced-choice trial"),
])
def test_malformed_records_are_refused_with_a_clear_message(records, words):
    with pytest.raises(AnalysisError) as caught:
        published_trials(records)
    assert words in str(caught.value)


def test_files_that_are_missing_or_not_json_are_refused(tmp_path):
    with pytest.raises(AnalysisError, match="no published trial file"):
        read_published_trials(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(AnalysisError, match="is not JSON"):
        read_published_trials(broken)
    good = tmp_path / "good.json"
    good.write_text(json.dumps([record()]))
    assert len(read_published_trials(good)) == 1


def test_a_trial_file_nested_too_deeply_is_refused_with_a_typed_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000, encoding="utf-8")
    with pytest.raises(AnalysisError, match="nests its JSON too deeply"):
        read_published_trials(path)
