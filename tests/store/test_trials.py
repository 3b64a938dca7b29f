"""The store's trials: content-addressed rows per (model, design, trial), resumable, imported frames."""

import numpy as np
import pandas as pd
import pytest

from magdash.comparison_stimuli import ComparisonSet, paper_comparisons
from magdash.errors import StoreError
from magdash.store import Store
from magdash.store.trials import TRIAL_COLUMNS


def outcomes(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    done = frame.assign(logit_a=rng.normal(size=len(frame)), logit_b=rng.normal(size=len(frame)))
    done["prob_a"], done["prob_b"] = np.exp(done["logit_a"]) / 10, np.exp(done["logit_b"]) / 10
    done["chosen"] = np.where(done["logit_a"] > done["logit_b"], "A", "B")
    done["correct"] = done["chosen"] == done["larger"]
    return done


def test_trials_are_stored_once_and_read_back_with_the_contract_columns(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    design = paper_comparisons()
    store.put_comparison_set(design)
    trials = outcomes(design.trials())
    assert store.put_trials("m", "paper", trials.iloc[:50]) == 50
    assert store.put_trials("m", "paper", trials.iloc[:80]) == 30  # the first 50 are kept as they were
    read = store.trials("m", "paper")
    assert list(read.columns) == [name for name, _ in TRIAL_COLUMNS] and len(read) == 80
    expected = trials.iloc[:80].set_index("trial_id")
    got = read.set_index("trial_id").loc[expected.index]
    np.testing.assert_allclose(got["logit_a"], expected["logit_a"], rtol=1e-12)
    assert (got["correct"] == expected["correct"]).all() and (got["larger"] == expected["larger"]).all()
    missing = store.missing_trials("m", design)
    assert len(missing) == len(trials) - 80 and set(missing).isdisjoint(expected.index)
    assert store.missing_trials("other", design) == list(trials["trial_id"])
    assert store.trials("other", "paper").empty


def test_a_name_holds_one_design_and_designs_come_back(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    design = ComparisonSet(name="mine", templates=(("t", "A {a} or B {b}?"),), number_formats=("words",))
    store.put_comparison_set(design)
    store.put_comparison_set(design)  # again: nothing changes
    assert store.comparison_set("mine") == design
    with pytest.raises(StoreError, match="another design"):
        store.put_comparison_set(ComparisonSet(name="mine", pairs=2))
    with pytest.raises(StoreError, match="no comparison set"):
        store.comparison_set("absent")


def test_published_trials_are_stored_without_a_design(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    published = outcomes(paper_comparisons().trials()).drop(columns=["trial_id", "question", "template", "pair"])
    assert store.put_trials("llama-3-8b-instruct", "published-B1", published) == len(published)
    assert store.put_trials("llama-3-8b-instruct", "published-B1", published) == 0
    assert store.comparison_set("published-B1") is None
    sets = store.comparison_sets()
    assert sets["imported"].tolist() == [True] and sets["n_trials"].tolist() == [len(published)]
    read = store.trials("llama-3-8b-instruct", "published-B1")
    assert (read["question"] == read["prompt"]).all() and read["trial_id"].is_unique
    with pytest.raises(StoreError, match="lack the columns chosen"):
        store.put_trials("x", "published-B1", published.drop(columns=["chosen"]))


def test_deleting_a_models_trials_leaves_the_others(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    design = paper_comparisons()
    store.put_comparison_set(design)
    trials = outcomes(design.trials())
    for model in ("a", "b"):
        store.put_trials(model, "paper", trials)
        store.put_trial_run(model, "paper", {"chat_template_applied": True})
    assert store.trial_run("a", "paper") == {"chat_template_applied": True}
    assert store.delete_trials("a") == len(trials)
    assert store.trials("a", "paper").empty and store.trial_run("a", "paper") is None
    assert len(store.trials("b", "paper")) == len(trials)
    assert store.trial_models().to_dict("records") == [{"model": "b", "set_name": "paper", "n_trials": len(trials)}]
