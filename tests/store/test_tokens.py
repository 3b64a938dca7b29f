"""The token facts in the store: per item how the number was tokenized, per model whether its
tokenizer splits digits, and the number format of a stimulus set (schema 8)."""

from __future__ import annotations

import dataclasses

import duckdb
import pytest

from magdash.stimuli import StimulusSet, paper_stimuli
from magdash.tokenization import DigitSplitting, NumberTokens

SMALL = StimulusSet("small", ("There are {n} items.", "{n} was the value."), (3, 40, 1000))
SPLITTING = DigitSplitting("yes", "per-digit", 1, {1: (1, 1), 4: (4, 4)}, 0.0, "1000 = 1|0|0|0",
                           "splits every digit into its own token (1000 = 1|0|0|0)")


def per_digit_facts(stimuli: StimulusSet, position: str = "last") -> list[NumberTokens]:
    """The facts a per-digit tokenizer gives (token id = 100 + the digit)."""
    facts = []
    for item in stimuli.items:
        digits = item.sentence[item.start:item.end]
        ids = tuple(100 + int(d) for d in digits)
        kept = {"last": ids[-1:], "first": ids[:1], "mean": ids}[position]
        facts.append(NumberTokens(item.magnitude, item.carrier_index, position, len(digits), kept,
                                  ids[0] if position == "first" else ids[-1],
                                  digits[0] if position == "first" else digits[-1], tuple(digits), len(digits),
                                  len(str(item.magnitude))))
    return facts


def test_token_facts_round_trip_in_the_sets_item_order(store, rng):
    store.import_arrays("m", rng.normal(size=(3, 2, 2, 4)), SMALL.magnitudes, carriers=SMALL.carriers, stimuli="small")
    model_id = store.model_record("m").model_id
    assert store.number_tokens("m", "small") is None and not store.has_number_tokens("m", "small")
    assert store.digit_splitting("m") is None
    assert store.missing_token_facts(model_id, "small") == ({item.key for item in SMALL.items}, True)
    facts = per_digit_facts(SMALL)
    shuffled = list(reversed(range(len(facts))))
    assert store.write_token_facts(model_id, [SMALL.items[i].key for i in shuffled], [facts[i] for i in shuffled],
                                   SPLITTING) == 6
    # in the set's order (magnitude, then carrier), the position the stored model's
    assert store.number_tokens("m", "small") == [dataclasses.replace(f, position="imported") for f in facts]
    assert store.has_number_tokens("m", "small")
    assert store.digit_splitting("m") == SPLITTING
    assert store.list_models()["splits_digits"].tolist() == ["yes"]
    # written again (a second extraction), nothing is duplicated and the first record stays
    other = DigitSplitting("no", "whole", 4, {}, 1.0, "", "")
    assert store.write_token_facts(model_id, [item.key for item in SMALL.items], facts, other) == 0
    assert store.digit_splitting("m") == SPLITTING
    with duckdb.connect(str(store.path), read_only=True) as connection:
        assert connection.execute("SELECT count(*) FROM number_tokens").fetchone()[0] == 6
        assert connection.execute("SELECT count(*) FROM digit_splitting").fetchone()[0] == 1


def test_the_mean_position_keeps_every_token_and_a_partial_record_reads_as_none(store, rng):
    store.import_arrays("m", rng.normal(size=(3, 2, 2, 4)), SMALL.magnitudes, carriers=SMALL.carriers, stimuli="small")
    model_id = store.model_record("m").model_id
    facts = per_digit_facts(SMALL, "mean")
    store.write_token_facts(model_id, [item.key for item in SMALL.items[:4]], facts[:4])
    assert store.number_tokens("m", "small") is None  # two items lack theirs: never a partial answer
    assert store.missing_token_facts(model_id, "small")[0] == {item.key for item in SMALL.items[4:]}
    store.write_token_facts(model_id, [item.key for item in SMALL.items[4:]], facts[4:])
    thousand = [fact for fact in store.number_tokens("m", "small") if fact.magnitude == 1000]
    assert {fact.kept_ids for fact in thousand} == {(101, 100, 100, 100)}
    # the facts are the model's: another model on the same items has none
    store.import_arrays("other", rng.normal(size=(3, 2, 2, 4)), SMALL.magnitudes, carriers=SMALL.carriers,
                        stimuli="small")
    assert store.number_tokens("other", "small") is None


def test_a_sets_number_format_is_stored_and_another_format_is_another_set(store):
    digits = StimulusSet("mine", SMALL.carriers, SMALL.magnitudes)
    words = StimulusSet("mine-words", SMALL.carriers, SMALL.magnitudes, "words")
    for stimuli in (digits, words):
        store.register_stimulus_set(stimuli)
    assert store.number_formats() == {"mine": "digits", "mine-words": "words"}
    assert store.stimulus_set("mine-words") == words
    assert [item.sentence for item in store.stimulus_set("mine-words").items][-1] == "One thousand was the value."
    assert store.in_number_format("mine", "words") == "mine-words"
    assert store.in_number_format("mine-words", "digits") == "mine"
    assert store.in_number_format("mine", "grouped") is None
    # a name magdash chooses joins the stored set of the same sentences, keeping their format
    assert store.known_as(StimulusSet("custom-1", SMALL.carriers, SMALL.magnitudes, "words")) == words
    with duckdb.connect(str(store.path), read_only=True) as connection:
        keys = dict(connection.execute(
            "SELECT set_name, list(item_key ORDER BY item_key) FROM stimulus_items GROUP BY set_name").fetchall())
    assert not set(keys["mine"]) & set(keys["mine-words"])


def test_grouped_digits_share_the_sentences_below_a_thousand(store):
    store.register_stimulus_set(paper_stimuli())
    store.register_stimulus_set(paper_stimuli("grouped"))
    digits, grouped = paper_stimuli(), store.stimulus_set("paper-grouped")
    assert grouped.number_format == "grouped" and grouped.content_hash != digits.content_hash
    shared = {item.key for item in digits.items} & {item.key for item in grouped.items}
    assert shared == {item.key for item in digits.items if item.magnitude < 1000}


@pytest.mark.parametrize("position", ["last", "first"])
def test_the_kept_token_follows_the_position(store, rng, position):
    store.import_arrays("m", rng.normal(size=(3, 2, 2, 4)), SMALL.magnitudes, carriers=SMALL.carriers, stimuli="small")
    store.write_token_facts(store.model_record("m").model_id, [item.key for item in SMALL.items],
                            per_digit_facts(SMALL, position))
    found = {fact.magnitude: fact.kept_text for fact in store.number_tokens("m", "small")}
    assert found == ({3: "3", 40: "0", 1000: "0"} if position == "last" else {3: "3", 40: "4", 1000: "1"})
