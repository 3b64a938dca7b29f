"""Number formats of a stimulus set (magdash.stimuli): how each writes a magnitude, where the
number's span falls, and the set's identity (digits unchanged, every other format a set of its own)."""

import json

import duckdb
import pytest

from magdash.errors import StimulusError
from magdash.stimuli import (
    DEFAULT_NUMBER_FORMAT,
    MAX_MAGNITUDE,
    NUMBER_FORMAT_NAMES,
    NUMBER_FORMATS,
    PAPER_CARRIERS,
    PAPER_MAGNITUDES,
    PAPER_SET_NAME,
    PLACEHOLDER,
    StimulusSet,
    check_reserved_name,
    get_number_format,
    is_paper_content,
    make_item,
    opens_sentence,
    paper_set_name,
    paper_stimuli,
    write_number,
)
from tests.support import unpack_store

ONE_TO_1000 = tuple(range(1, 1001))

# The written forms, typed by hand from the formats' rules (docs/science.md): a change in
# num2words' English output or in a writer shows here before it renames stored sentences.
EXPECTED = {
    "digits": {7: "7", 23: "23", 150: "150", 1000: "1000", 1234: "1234", 1_000_000: "1000000"},
    "grouped": {7: "7", 23: "23", 150: "150", 1000: "1,000", 1234: "1,234", 1_000_000: "1,000,000"},
    "spaced": {7: "7", 23: "23", 150: "150", 1000: "1 000", 1234: "1 234", 1_000_000: "1 000 000"},
    "words": {
        7: "seven", 23: "twenty-three", 101: "one hundred and one", 150: "one hundred and fifty",
        999: "nine hundred and ninety-nine", 1000: "one thousand", 1001: "one thousand and one",
        1234: "one thousand two hundred and thirty-four", 1_000_000: "one million",
        2_000_023: "two million and twenty-three", MAX_MAGNITUDE: "one trillion",
    },
}


def test_the_registry_names_each_format_once_with_a_description():
    assert NUMBER_FORMAT_NAMES[0] == DEFAULT_NUMBER_FORMAT == "digits"
    assert set(NUMBER_FORMAT_NAMES) == {"digits", "grouped", "spaced", "padded", "words"}
    for name, number_format in NUMBER_FORMATS.items():
        assert number_format.name == name
        assert number_format.description and "\n" not in number_format.description


@pytest.mark.parametrize(("number_format", "magnitude"), [(f, m) for f, cases in EXPECTED.items() for m in cases])
def test_each_format_writes_the_expected_text(number_format, magnitude):
    assert write_number(magnitude, number_format) == EXPECTED[number_format][magnitude]


def test_padded_writes_every_number_to_the_width_of_the_largest():
    assert [write_number(m, "padded", largest=1000) for m in (7, 23, 150, 1000)] == ["0007", "0023", "0150", "1000"]
    assert write_number(7, "padded", largest=9) == "7"
    padded = StimulusSet("padded", PAPER_CARRIERS, PAPER_MAGNITUDES, "padded")
    assert {item.end - item.start for item in padded.items} == {4}
    with pytest.raises(StimulusError, match="give largest"):
        write_number(7, "padded")
    with pytest.raises(StimulusError, match="largest must be the set's largest"):
        write_number(70, "padded", largest=9)


def test_an_unknown_format_lists_the_choices():
    for call in (lambda: get_number_format("roman"), lambda: write_number(7, "roman"),
                 lambda: StimulusSet("x", ("A {n}.",), (1, 2), "roman"), lambda: paper_stimuli("roman")):
        with pytest.raises(StimulusError) as error:
            call()
        assert "'roman'" in str(error.value)
        assert all(name in str(error.value) for name in NUMBER_FORMAT_NAMES)


@pytest.mark.parametrize("number_format", NUMBER_FORMAT_NAMES)
@pytest.mark.parametrize("magnitude", [7.5, 0, -3, MAX_MAGNITUDE + 1, "7", True, None, float("nan")])
def test_a_magnitude_no_format_can_write_says_why(number_format, magnitude):
    with pytest.raises(StimulusError, match=f"the {number_format} format writes whole numbers from 1 to"):
        write_number(magnitude, number_format, largest=1000)


def test_whole_floats_are_written_as_integers():
    assert write_number(1000.0, "words") == "one thousand"
    assert write_number(1000.0, "grouped") == "1,000"


@pytest.mark.parametrize("number_format", NUMBER_FORMAT_NAMES)
@pytest.mark.parametrize("magnitudes", [ONE_TO_1000, PAPER_MAGNITUDES], ids=["1-1000", "paper"])
def test_the_span_covers_the_whole_written_number_in_every_carrier(number_format, magnitudes):
    stimuli = StimulusSet("s", PAPER_CARRIERS + ("I saw {} birds. {n}",), magnitudes, number_format)
    assert len(stimuli.items) == len(magnitudes) * (len(PAPER_CARRIERS) + 1)
    for item in stimuli.items:
        written = write_number(item.magnitude, number_format, largest=magnitudes[-1])
        carrier = stimuli.carriers[item.carrier_index]
        number = item.sentence[item.start:item.end]
        assert number.lower() == written.lower()
        assert item.sentence[:item.start] + PLACEHOLDER + item.sentence[item.end:] == carrier
        assert item == make_item(item.magnitude, item.carrier_index, carrier, number_format, largest=magnitudes[-1])


def test_number_words_open_a_sentence_with_a_capital():
    words = StimulusSet("w", ("{n} was the value.", "There are {n} items.", "I saw {} birds. {n}"), (7, 23), "words")
    assert [item.sentence for item in words.items] == [
        "Seven was the value.", "There are seven items.", "I saw {} birds. Seven",
        "Twenty-three was the value.", "There are twenty-three items.", "I saw {} birds. Twenty-three",
    ]
    assert make_item(1000, 0, "{n} was the value.", "grouped").sentence == "1,000 was the value."


@pytest.mark.parametrize(("prefix", "opens"), [
    ("", True), ("  ", True), ("Done. ", True), ("Really? ", True), ("Wow!\n", True),
    ("There are ", False), ("3.", False), ("e.g.", False), ("Total: ", False),
])
def test_opens_sentence(prefix, opens):
    assert opens_sentence(prefix) is opens


def test_digits_keep_the_identity_of_every_set_an_earlier_release_stored(tmp_path):
    """Stores written by earlier releases (tests/data/make_store_v*.py) hold each set's content
    hash and each item's key, sentence and span as that release computed them; rebuilding the
    set in digits, the default, gives the same, so no stored set changes identity."""
    checked = 0
    for version in (1, 2, 3, 4):
        path = unpack_store(version, tmp_path)
        with duckdb.connect(str(path), read_only=True) as connection:
            sets = connection.execute("SELECT name, content_hash, carriers, magnitudes FROM stimulus_sets").fetchall()
            for name, content_hash, carriers, magnitudes in sets:
                stimuli = StimulusSet(name, json.loads(carriers), json.loads(magnitudes))
                assert stimuli.number_format == "digits"
                assert stimuli.content_hash == content_hash
                stored = connection.execute(
                    "SELECT magnitude, carrier_index, item_key, sentence, span_start, span_end FROM stimulus_items "
                    "WHERE set_name = ? ORDER BY magnitude, carrier_index", [name]
                ).fetchall()
                rebuilt = [(i.magnitude, i.carrier_index, i.key, i.sentence, i.start, i.end) for i in stimuli.items]
                assert rebuilt == [tuple(row) for row in stored]
                checked += 1
    assert checked >= 5


def test_the_paper_set_keeps_the_hash_a_release_stored():
    """The v2 fixture store (tests/data/make_store_v2.py, written by the release of schema 2)
    holds the paper's sentences under the name 'mine' with the hash 27ae3b31ad44e22d; the
    paper's set in digits still hashes to it."""
    assert paper_stimuli().content_hash == paper_stimuli("digits").content_hash == "27ae3b31ad44e22d"


def test_every_format_is_a_stimulus_set_of_its_own():
    hashes = {name: paper_stimuli(name).content_hash for name in NUMBER_FORMAT_NAMES}
    assert len(set(hashes.values())) == len(NUMBER_FORMAT_NAMES)
    assert StimulusSet("x", PAPER_CARRIERS, PAPER_MAGNITUDES).content_hash == hashes["digits"]
    assert is_paper_content(paper_stimuli("digits"))
    assert not any(is_paper_content(paper_stimuli(name)) for name in NUMBER_FORMAT_NAMES if name != "digits")


def test_a_format_that_writes_the_same_sentences_is_still_another_set():
    # Below 1000 "grouped" writes exactly what digits write: the sentences (and so the vectors,
    # keyed by sentence) are shared, but the set is another one and never merges with digits.
    digits = StimulusSet("d", PAPER_CARRIERS, range(1, 1000))
    grouped = StimulusSet("g", PAPER_CARRIERS, range(1, 1000), "grouped")
    assert [item.key for item in digits.items] == [item.key for item in grouped.items]
    assert digits.content_hash != grouped.content_hash
    assert digits != grouped


def test_paper_sets_in_other_formats_are_named_for_their_format():
    assert paper_set_name() == PAPER_SET_NAME == paper_stimuli().name
    for name in NUMBER_FORMAT_NAMES[1:]:
        stimuli = paper_stimuli(name)
        assert stimuli.name == paper_set_name(name) == f"paper-{name}"
        assert stimuli.number_format == name
        check_reserved_name(stimuli)  # the name 'paper' stays the digits set's alone
    with pytest.raises(StimulusError, match="kept for the paper's stimuli"):
        check_reserved_name(StimulusSet(PAPER_SET_NAME, PAPER_CARRIERS, PAPER_MAGNITUDES, "words"))


def test_a_positional_set_is_in_digits():
    # The store rebuilds sets as StimulusSet(name, carriers, magnitudes).
    stimuli = StimulusSet("x", ("There are {n} items.",), (1000,))
    assert stimuli.number_format == "digits"
    assert stimuli.items[0].sentence == "There are 1000 items."
