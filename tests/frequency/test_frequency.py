"""Number frequency: the counting rule, corpus formats, sources, fits and E5."""

from __future__ import annotations

import gzip
import json
import re
import sys
import unicodedata
from collections import Counter

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from magdash.errors import AnalysisError, MagdashError
from magdash.frequency import (
    OPENWEBTEXT,
    WORDFREQ,
    CountOptions,
    FrequencyError,
    FrequencySource,
    corpus_source,
    count_corpus,
    counts_for_magnitudes,
    counts_table,
    distribution_plot_data,
    e5_correlation,
    e5_summary,
    fit_distributions,
    number_word_values,
    read_counts_csv,
)
from magdash.frequency import corpus as frequency_corpus
from magdash.frequency.e5_params import E5Params
from magdash.frequency.rule import (
    BLANK_LINE,
    DIGIT_RUN,
    DIGIT_TOKEN,
    DIGIT_TOKEN_SENTENCE_FINAL,
    PAPER_PATTERN,
    WORD_CHARS,
)
from magdash.runs.frequency_runs import e5_from_analysis, e5_from_store, list_sources, load_source, save_source

PAPER = re.compile(PAPER_PATTERN)
# The paper's rule plus "digits followed by one '.' that ends the run of [\w.]".
PAPER_SENTENCE_FINAL = re.compile(r"(?<![.\d])(\b\d{1,4}\b)(?:(?![.\d])|\.(?![\w.]))")


@pytest.fixture(scope="module")
def connection():
    with duckdb.connect(":memory:") as con:
        yield con


def re2_tokens(con, texts: list[str], token: str = DIGIT_TOKEN) -> list[list[str]]:
    """The counter's extraction, run by DuckDB on each text."""
    table = pa.table({"i": list(range(len(texts))), "doc": texts})
    con.register("docs", table)
    rows = con.execute(
        f"SELECT list_filter(regexp_extract_all(doc, '{DIGIT_RUN}'), lambda t: regexp_full_match(t, '{token}')) "
        "FROM docs ORDER BY i"
    ).fetchall()
    con.unregister("docs")
    return [row[0] for row in rows]


# -- the rule: RE2 form equals the paper's Python regex ---------------------------------------

ASCII_TEXTS = st.lists(st.text(alphabet=st.sampled_from(list("0123456789" * 3 + ".,-_ \t\nabzAZ()%$'\"!?/")), max_size=40),
                       min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(ASCII_TEXTS)
@pytest.mark.slow
def test_re2_rule_equals_paper_regex_on_ascii(connection, texts):
    expected = [[m.group(1) for m in PAPER.finditer(text)] for text in texts]
    assert re2_tokens(connection, texts) == expected


@settings(max_examples=100, deadline=None)
@given(ASCII_TEXTS)
@pytest.mark.slow
def test_sentence_final_option_equals_its_python_regex(connection, texts):
    expected = [[m.group(1) for m in PAPER_SENTENCE_FINAL.finditer(text)] for text in texts]
    got = [[token.rstrip(".") for token in row] for row in re2_tokens(connection, texts, DIGIT_TOKEN_SENTENCE_FINAL)]
    assert got == expected


# Characters where Unicode and ASCII \w, \d and \s disagree, plus ordinary ones.
UNICODE_SPECIALS = list("0123456789.. a_é٣٤۵१３²½Ⅳ一\u0301\u00a0\u2014\u201c\u201d\u2028ß\u0660")
UNICODE_TEXTS = st.lists(
    st.text(alphabet=st.one_of(st.sampled_from(UNICODE_SPECIALS),
                               st.characters(exclude_categories=("Cs", "Cn", "Co"))), max_size=30),
    min_size=1, max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(UNICODE_TEXTS)
@pytest.mark.slow
def test_re2_rule_equals_paper_regex_on_assigned_unicode(connection, texts):
    expected = [[m.group(1) for m in PAPER.finditer(text)] for text in texts]
    assert re2_tokens(connection, texts) == expected


def test_re2_classes_equal_python_classes_on_every_assigned_code_point(connection):
    chars = [chr(c) for c in range(sys.maxunicode + 1)
             if unicodedata.category(chr(c)) not in ("Cs", "Cn", "Co")]
    con = connection
    con.register("chars", pa.table({"ch": chars}))
    word, digit, space = zip(*con.execute(
        f"SELECT regexp_full_match(ch, '[{WORD_CHARS}]'), regexp_full_match(ch, '\\p{{Nd}}'), "
        f"regexp_full_match(ch, '{BLANK_LINE}') FROM chars"
    ).fetchall(), strict=True)
    con.unregister("chars")
    assert list(word) == [bool(re.fullmatch(r"\w", ch)) for ch in chars]
    assert list(digit) == [bool(re.fullmatch(r"\d", ch)) for ch in chars]
    assert list(space) == [ch.isspace() for ch in chars]


# -- exact counts on known text ---------------------------------------------------------------


def count_text(tmp_path, text: str, **options) -> tuple[dict[int, int], int, int]:
    path = tmp_path / "corpus.txt"
    path.write_text(text, encoding="utf-8")
    number_range = options.pop("number_range", (0, 9999))
    result = count_corpus(path, CountOptions(number_range=number_range, **options))
    counts = {int(n): int(c) for n, c in zip(result.counts["number"], result.counts["count"], strict=True) if c}
    return counts, result.numbers_seen, result.documents


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("we have 5 cats", {5: 1}),
        ("pi is 3.5 or .5 or 5.", {}),  # decimals, a leading dot, a sentence-final number
        ("123456 and 12345 but 1234", {1234: 1}),  # long digit runs are no numbers at all
        ("1,000 people", {1: 1, 0: 1}),  # thousands separator: "1" and "000" (= 0), as the paper's regex
        ("the 1st, 2nd, 3rd and 4th", {}),  # ordinals are glued to letters
        ("in 1999 and 2020.", {1999: 1}),  # the paper's rule drops the sentence-final year
        ("version 1.2.3 and v2 and x86", {}),
        ("(12) -7 $5 5% 0042 #9", {12: 1, 7: 1, 5: 2, 42: 1, 9: 1}),
        ("a_1 1_a 1a", {}),
        ("caf\u00e9 é5 5é", {}),  # a Unicode letter glues like an ASCII one
        ("\u201c7\u201d 8\u20149 \u0663", {7: 1, 8: 1, 9: 1, 3: 1}),  # curly quotes, em dash, Arabic-Indic 3
        ("10000 9999 0", {9999: 1, 0: 1}),
    ],
)
def test_exact_counts_follow_the_paper_rule(tmp_path, text, expected):
    # A known number after each text: a corpus without numbers is refused (tested below).
    counts, seen, documents = count_text(tmp_path, text + " 777")
    assert counts == {**expected, 777: 1}
    assert seen == sum(expected.values()) + 1
    assert documents == 1


def test_default_range_keeps_1_to_1000_and_reports_all_numbers_seen(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("0 1 999 1000 1001 in 1999 and 2020.\n7 7\n", encoding="utf-8")
    result = count_corpus(path)
    assert list(result.counts["number"]) == list(range(1, 1001))
    nonzero = result.counts[result.counts["count"] > 0]
    assert dict(zip(nonzero["number"], nonzero["count"], strict=True)) == {1: 1, 7: 2, 999: 1, 1000: 1}
    assert result.numbers_seen == 8  # 0, 1, 999, 1000, 1001, 1999, 7, 7
    assert result.numbers_in_range == 5
    assert result.documents == 2
    payload = result.to_json()
    assert list(payload["counts"])[:2] == ["1", "2"] and len(payload["counts"]) == 1000
    assert payload["documents"] == 2 and payload["numbers_seen"] == 8


def test_sentence_final_option_adds_numbers_before_a_full_stop(tmp_path):
    text = "in 1999 and 2020. see 5.) and 3.5 and 7... and 1.a\n"
    assert count_text(tmp_path, text)[0] == {1999: 1}
    assert count_text(tmp_path, text, sentence_final=True)[0] == {1999: 1, 2020: 1, 5: 1}


def test_counting_matches_python_re_on_a_generated_corpus(tmp_path):
    rng = np.random.default_rng(7)
    alphabet = list("0123456789" * 4 + " .,-\n" * 3 + "abcxyz_é()\u2014")
    text = "".join(rng.choice(alphabet, size=200_000))
    counts, seen, _ = count_text(tmp_path, text, number_range=(1, 1000))
    expected = Counter(int(m.group(1)) for line in text.split("\n") for m in PAPER.finditer(line))
    assert counts == {n: c for n, c in expected.items() if 1 <= n <= 1000}
    assert seen == sum(expected.values())


# -- number words -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "values"),
    [
        ("one", [1]), ("Twenty-One", [21]), ("twenty one", [21]), ("ninety", [90]),
        ("one hundred", [100]), ("a hundred", [100]), ("one hundred and five", [105]),
        ("nine hundred ninety-nine", [999]), ("one thousand", [1000]), ("a thousand", [1000]),
        ("two thousand twenty", [2020]), ("nineteen hundred", [1900]), ("one million", [1_000_000]),
        ("one two three", [1, 2, 3]), ("one and two", [1, 2]), ("zero", [0]),
        ("thirty-one-year-old", [31]), ("someone", []), ("tenth", []), ("ones", []),
        ("twenty-first", []), ("one-third", []), ("hundred", []),
    ],
)
def test_number_word_parser(phrase, values):
    assert number_word_values(phrase) == values


def test_word_option_counts_number_words_in_a_corpus(tmp_path):
    text = ("Twenty-one cats and one hundred and five dogs; someone saw the twenty-first.\n"
            "A thousand and 7 birds, two thousand ants, ninety nine\n")
    assert count_text(tmp_path, text, number_range=(1, 1000))[0] == {7: 1}
    counts, seen, _ = count_text(tmp_path, text, number_range=(1, 1000), words=True)
    assert counts == {21: 1, 105: 1, 1000: 1, 7: 1, 99: 1}
    assert seen == 6  # 2000 is seen, outside the range


# -- documents, pieces, formats -------------------------------------------------------------


PARAGRAPH_TEXT = "first 1\nstill first 2\n\nsecond 3\n \t \nthird 4\nthird 5\n\n\n\nfourth 6"


def test_lines_and_paragraphs_as_documents(tmp_path):
    counts, _, lines = count_text(tmp_path, PARAGRAPH_TEXT)
    assert lines == 6
    counts_p, _, paragraphs = count_text(tmp_path, PARAGRAPH_TEXT, paragraphs=True)
    assert paragraphs == 4
    assert counts == counts_p == {n: 1 for n in range(1, 7)}


def test_a_line_longer_than_a_piece_stays_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(frequency_corpus, "PIECE_BYTES", 64)
    line = " ".join(str(n % 1000 + 1) for n in range(5000))
    counts, seen, documents = count_text(tmp_path, line + "\n7\n", number_range=(1, 1000))
    assert documents == 2 and seen == 5001
    assert counts[7] == 6 and counts[1000] == 5


@pytest.mark.parametrize("piece_bytes", [1, 3, 7, 16])
def test_small_pieces_change_nothing(tmp_path, monkeypatch, piece_bytes):
    monkeypatch.setattr(frequency_corpus, "PIECE_BYTES", piece_bytes)
    monkeypatch.setattr(frequency_corpus, "PIECES_PER_BATCH", 2)
    for paragraphs, documents in ((False, 6), (True, 4)):
        counts, _, found = count_text(tmp_path, PARAGRAPH_TEXT, paragraphs=paragraphs)
        assert found == documents
        assert counts == {n: 1 for n in range(1, 7)}


def _nonzero(result) -> dict[int, int]:
    return {int(n): int(c) for n, c in zip(result.counts["number"], result.counts["count"], strict=True) if c}


DOCS = ["In 1999 there were 12 cats.", "", "3.5 and 7 and 1,000", None, "twenty-one and 12"]


def test_gzip_text(tmp_path):
    path = tmp_path / "corpus.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(d or "" for d in DOCS))
    result = count_corpus(path)
    assert result.files[0].fmt == "gzip"
    assert _nonzero(result) == {12: 2, 7: 1, 1: 1}
    assert result.documents == 3


def test_jsonl_rows_are_documents(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"body": d, "id": i}) + "\n" for i, d in enumerate(DOCS))
                    + json.dumps({"id": 9}) + "\n", encoding="utf-8")
    result = count_corpus(path, CountOptions(text_field="body"))
    assert _nonzero(result) == {12: 2, 7: 1, 1: 1}
    assert result.documents == 4  # every record with a text value, "" included
    assert result.records_without_text == 2
    gz = tmp_path / "corpus.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert _nonzero(count_corpus(gz, CountOptions(text_field="body"))) == {12: 2, 7: 1, 1: 1}
    with pytest.raises(FrequencyError, match="no field 'text'.*body, id.*text_field="):
        count_corpus(path)


def test_parquet_column(tmp_path):
    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"body": DOCS, "n": list(range(len(DOCS)))}), path)
    result = count_corpus(path, CountOptions(text_field="body", words=True))
    assert _nonzero(result) == {12: 2, 7: 1, 1: 1, 21: 1}
    assert result.documents == 4
    with pytest.raises(FrequencyError, match="no column 'text'"):
        count_corpus(path)
    with pytest.raises(FrequencyError, match="not text"):
        count_corpus(path, CountOptions(text_field="n"))


def test_globs_and_mixed_formats_add_up(tmp_path):
    (tmp_path / "a.txt").write_text("5 5\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("6\n", encoding="utf-8")
    pq.write_table(pa.table({"text": ["5 and 7"]}), tmp_path / "c.parquet")
    calls = []
    result = count_corpus([str(tmp_path / "*.txt"), tmp_path / "c.parquet", tmp_path / "a.txt"],
                          progress=lambda done, total: calls.append((done, total)))
    assert len(calls) == 3 and calls[-1][0] == calls[-1][1] == result.bytes_read
    assert [f.fmt for f in result.files] == ["text", "text", "parquet"]
    assert _nonzero(result) == {5: 3, 6: 1, 7: 1}
    assert result.documents == 3
    assert result.unit == "mixed: line/row"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "no documents.*empty"),
        ("\n \n\t\n", "no documents"),
        ("no numbers here\nnor 0 here, nor 12345\n", r"no numbers 1..1000 in 2 documents \(lines\).*\(1 found outside it\)"),
    ],
)
def test_empty_corpus_and_no_numbers_say_so(tmp_path, content, message):
    path = tmp_path / "c.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FrequencyError, match=message) as caught:
        count_corpus(path)
    assert isinstance(caught.value, MagdashError)


def test_input_mistakes(tmp_path):
    with pytest.raises(FrequencyError, match="no file matches"):
        count_corpus(str(tmp_path / "*.txt"))
    with pytest.raises(FrequencyError, match="no such file"):
        count_corpus(tmp_path / "missing.txt")
    with pytest.raises(FrequencyError, match="is a folder"):
        count_corpus(tmp_path)
    gz = tmp_path / "a.txt.gz"
    gz.write_bytes(gzip.compress(b"5\n"))
    with pytest.raises(FrequencyError, match="gzip-compressed"):
        count_corpus(gz, CountOptions(fmt="text"))
    truncated = tmp_path / "cut.txt.gz"
    truncated.write_bytes(gzip.compress(b"5 6 7\n" * 1000)[:40])
    with pytest.raises(FrequencyError, match="cannot read.*cut.txt.gz"):
        count_corpus(truncated)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok 5\n\xff\xfe 6\n")
    with pytest.raises(FrequencyError, match="not UTF-8.*offset 5"):
        count_corpus(bad)
    assert _nonzero(count_corpus(bad, CountOptions(encoding_errors="replace"))) == {5: 1, 6: 1}
    with pytest.raises(FrequencyError, match="range"):
        CountOptions(number_range=(5, 1))


# -- sources --------------------------------------------------------------------------------------


def test_builtin_openwebtext_source_keeps_its_provenance():
    source = load_source(OPENWEBTEXT)
    assert len(source.counts) == 1000 and source.total == 6_046_515
    assert source.counts["count"].iloc[0] == 447_682
    assert source.provenance["kind"] == "builtin"
    assert any("OpenWebText" in line for line in source.provenance["comments"])


def test_builtin_wordfreq_source_is_an_estimate():
    source = load_source(WORDFREQ)
    counts = source.count_series()
    assert list(counts.index) == list(range(1, 1001))
    assert (counts > 0).all()
    assert counts[123] == counts[187]  # wordfreq bins 3-digit numbers by their first digit
    assert counts[1] > counts[10] > counts[100]
    assert "estimate" in source.provenance["note"]


def test_csv_import_accepts_comments_and_integral_floats():
    source = read_counts_csv(b"# from a test\nNumber , Count\n3,7\n1,10.0\n2,0\n", name="mine")
    assert list(source.counts["number"]) == [1, 2, 3]
    assert list(source.counts["count"]) == [10, 0, 7]
    assert source.provenance["comments"] == ["from a test"]
    assert source.provenance["kind"] == "csv"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"number,value\n1,2\n", "missing column.*count"),
        (b"1,2\n3,4\n", "missing column"),
        (b"", "not a readable CSV"),
        (b"number,count\n", "no rows"),
        (b"number,count\n1,5\n2,3.5\n", "count '3.5' on line 3 is not an integer"),
        (b"number,count\n1,5\nx,3\n", "number 'x' on line 3 is not an integer"),
        (b"number,count\n1,5\n2,\n", "count '' on line 3"),
        (b"number,count\n1,5\n2,-3\n", "negative count -3 on line 3"),
        (b"number,count\n-1,5\n", "negative number -1 on line 2"),
        (b"number,count\n1,5\n1,3\n", "number 1 appears twice"),
        (b"number,count\n1,0\n", "every count is 0"),
    ],
)
def test_csv_import_validation(content, message):
    with pytest.raises(FrequencyError, match=message):
        read_counts_csv(content, name="bad")


def test_sources_in_the_store(store, tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("5 5 6\n", encoding="utf-8")
    counted = count_corpus(path)
    save_source(store, corpus_source(counted, "tiny-corpus"))
    loaded = load_source("tiny-corpus", store)
    assert loaded.count_series()[5] == 2 and loaded.total == 3
    assert loaded.provenance["documents"] == 1 and loaded.provenance["kind"] == "corpus"
    listing = list_sources(store)
    assert list(listing["name"]) == [WORDFREQ, OPENWEBTEXT, "tiny-corpus"]
    assert listing.set_index("name").loc["tiny-corpus", "total"] == 3
    with pytest.raises(FrequencyError, match="built-in"):
        save_source(store, FrequencySource(WORDFREQ, loaded.counts, {}))
    with pytest.raises(FrequencyError, match="no frequency source named 'nope'.*tiny-corpus"):
        load_source("nope", store)


def test_counts_table():
    table = counts_table({1: 3, 2: 1, 3: 0})
    assert list(table["proportion"]) == [0.75, 0.25, 0.0]
    assert table["log_count"].iloc[0] == pytest.approx(np.log(4))


# -- distribution fits ------------------------------------------------------------------------


def test_fits_reproduce_the_paper_on_openwebtext():
    fits = fit_distributions(load_source(OPENWEBTEXT)).set_index("model")
    assert fits.loc["power_law", "parameter"] == pytest.approx(0.773, abs=5e-4)
    assert fits.loc["power_law", "r2"] == pytest.approx(0.860, abs=5e-4)
    assert fits.loc["exponential", "parameter"] == pytest.approx(0.0798, abs=5e-5)
    assert fits.loc["exponential", "r2"] == pytest.approx(0.881, abs=5e-4)
    assert fits.loc["loglog_ols", "parameter"] == pytest.approx(1.349, abs=5e-4)
    assert fits.loc["loglog_ols", "r2"] == pytest.approx(0.832, abs=5e-4)
    # The paper's AICs (appendix JSON): -12714.7 and -12881.5; the exponential wins.
    assert fits.loc["power_law", "aic"] == pytest.approx(-12714.69, abs=0.05)
    assert fits.loc["exponential", "aic"] == pytest.approx(-12881.49, abs=0.05)
    assert fits.loc["exponential", "best_aic"] and not fits.loc["power_law", "best_aic"]


def test_fits_recover_planted_curves():
    n = np.arange(1, 301)
    power = fit_distributions(pd.Series(np.round(1e9 * n**-1.2).astype(np.int64), index=n)).set_index("model")
    assert power.loc["power_law", "parameter"] == pytest.approx(1.2, abs=1e-4)
    assert power.loc["power_law", "r2"] == pytest.approx(1.0, abs=1e-8)
    assert power.loc["loglog_ols", "parameter"] == pytest.approx(1.2, abs=1e-4)
    exponential = fit_distributions(pd.Series(np.round(1e12 * np.exp(-0.05 * n)).astype(np.int64), index=n))
    assert exponential.set_index("model").loc["exponential", "parameter"] == pytest.approx(0.05, abs=1e-5)


def test_plot_data_and_too_few_points():
    frame = distribution_plot_data(load_source(OPENWEBTEXT))
    assert list(frame.columns) == ["number", "count", "proportion", "power_law", "exponential", "loglog_ols"]
    assert frame["proportion"].sum() == pytest.approx(1.0)
    assert frame.loc[0, "power_law"] == pytest.approx(0.0897, abs=1e-4)  # the paper's amplitude a
    assert np.isfinite(frame[["power_law", "exponential", "loglog_ols"]].to_numpy()).all()
    with pytest.raises(FrequencyError, match="at least 3"):
        fit_distributions({1: 5, 2: 0, 3: 1})


# -- E5 -----------------------------------------------------------------------------------------

MAGNITUDES = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500, 700, 1000])


def test_e5_monotone_in_count_gives_rho_one():
    counts = load_source(OPENWEBTEXT)
    log_count = np.log1p(counts_for_magnitudes(MAGNITUDES, counts))
    table = e5_correlation(MAGNITUDES, {16: 2 * log_count + 1, 17: np.exp(log_count)}, counts, n_boot=500)
    assert list(table["layer"]) == [16, 17]
    assert table["raw_rho"].tolist() == pytest.approx([1.0, 1.0])
    assert (table["raw_p"] < 1e-10).all()
    assert table["raw_ci_low"].tolist() == pytest.approx([1.0, 1.0])
    assert table["raw_ci_high"].tolist() == pytest.approx([1.0, 1.0])
    assert (table["n"] == 26).all()


def test_partial_correlation_removes_a_shared_magnitude_effect(rng):
    magnitudes = np.arange(1, 201)
    log_n = np.log(magnitudes)
    count_noise = rng.normal(size=magnitudes.size)
    counts = pd.Series(np.round(np.exp(12 - 1.5 * log_n + 0.3 * count_noise)).astype(np.int64), index=magnitudes)
    shared = -0.5 * log_n + 0.05 * rng.normal(size=magnitudes.size)  # V follows n only
    frequency = 0.2 * count_noise  # V follows the part of the count that n does not explain
    table = e5_correlation(magnitudes, np.vstack([shared, frequency]), counts, n_boot=1000, seed=3)
    only_n, only_count = table.iloc[0], table.iloc[1]
    assert only_n["raw_rho"] > 0.8 and only_n["raw_p"] < 1e-10  # raw E5 sees "frequency"
    assert abs(only_n["partial_rho"]) < 0.15 and only_n["partial_p"] > 0.01  # ... which was magnitude
    assert only_count["partial_rho"] > 0.8 and only_count["partial_p"] < 1e-10
    assert only_n["raw_ci_low"] < only_n["raw_rho"] < only_n["raw_ci_high"]
    assert only_n["partial_ci_low"] < 0 < only_n["partial_ci_high"]
    assert 0.7 < only_count["partial_ci_low"] < only_count["partial_rho"] < only_count["partial_ci_high"]


def test_a_magnitude_only_effect_is_a_large_raw_rho_and_a_partial_near_zero_and_the_headline_says_so():
    """Planted: V depends on log n alone and the count is a function of n (the paper's counts), as
    E5 must be read when frequency explains nothing. The raw rho is large and significant at every
    layer; the partial rho given log n, the headline, is near 0 with intervals that cover it."""
    from magdash.presentation.frequency_figures import e5_sentence

    counts = load_source(OPENWEBTEXT)
    rng = np.random.default_rng(11)
    layers = 20
    values = -0.3 * np.log(MAGNITUDES)[None, :] + 0.15 * rng.normal(size=(layers, MAGNITUDES.size))
    table = e5_correlation(MAGNITUDES, values, counts, n_boot=1000, seed=2)
    assert (table["raw_rho"] > 0.8).all() and (table["raw_p"] < 1e-6).all()
    assert abs(table["partial_rho"].mean()) < 0.1 and (table["partial_rho"].abs() < 0.6).all()
    covered = (table["partial_ci_low"] < 0) & (table["partial_ci_high"] > 0)
    assert covered.sum() >= 17  # a 95% interval of a planted 0: about 19 of 20
    summary = e5_summary(table)
    assert summary["raw"]["significant_layers"] == layers and summary["partial"]["significant_layers"] <= 3
    sentence = e5_sentence(table.assign(core=True), counts)
    partial = summary["partial"]
    assert sentence.startswith(f"Partial Spearman rho given log n, the test of the frequency account, over the core "
                               f"layers: mean {partial['mean_rho']:.3f}")
    assert f"{partial['significant_layers']} of {layers} layers significant (p < .05)" in sentence
    assert sentence.index("Raw Spearman rho") > sentence.index("Partial Spearman rho")


def test_e5_bootstrap_is_seeded_per_layer(rng):
    values = rng.normal(size=(3, MAGNITUDES.size))
    counts = load_source(OPENWEBTEXT)
    full = e5_correlation(MAGNITUDES, {0: values[0], 1: values[1], 2: values[2]}, counts, n_boot=300, seed=5)
    alone = e5_correlation(MAGNITUDES, {1: values[1]}, counts, n_boot=300, seed=5)
    pd.testing.assert_frame_equal(full.iloc[[1]].reset_index(drop=True), alone)
    assert not full.equals(e5_correlation(MAGNITUDES, values, counts, n_boot=300, seed=6))


def test_e5_missing_magnitudes_and_constant_layers():
    counts = {1: 10, 2: 5, 3: 4, 4: 1}
    magnitudes = [1, 2, 3, 4, 5]
    with pytest.raises(FrequencyError, match="no count for magnitude.*5.*missing='zero'"):
        e5_correlation(magnitudes, {0: np.arange(5.0)}, counts)
    table = e5_correlation(magnitudes, {0: np.zeros(5), 1: -np.arange(5.0)}, counts, missing="zero", n_boot=50)
    assert table.loc[0, ["raw_rho", "raw_p", "raw_ci_low", "partial_rho", "partial_ci_low"]].isna().all()  # V = 0
    assert table.loc[1, "raw_rho"] == pytest.approx(1.0)  # count 0 for 5 ranks last, as does -5
    summary = e5_summary(table)
    assert summary["raw"]["layers_with_rho"] == 1 and summary["raw"]["mean_rho"] == pytest.approx(1.0)
    # 5 magnitudes: an exact Spearman test can still reach .05 (2/5! = 0.017); 4 cannot (2/4! = 0.083).
    assert summary["unreachable"] == ""
    four = e5_summary(e5_correlation(magnitudes[:4], {1: -np.arange(4.0)}, counts, n_boot=0))
    assert "with 4 magnitudes the smallest p this test can give is 0.083" in four["unreachable"]


def _plant_frequency_model(store) -> None:
    """V_eucl(n) = log(count(n) + 1) at layers 0-2 and its reverse at 3-4 (5 layers: core 2, 3)."""
    counts = load_source(OPENWEBTEXT)
    radius = np.log1p(counts_for_magnitudes(MAGNITUDES, counts))
    directions = np.array([[1, 0, 0, 0], [-1, 0, 0, 0], [0, 1, 0, 0], [0, -1, 0, 0]], dtype=float)
    layers = 5
    per_carrier = np.zeros((MAGNITUDES.size, 4, layers, 4))
    for layer in range(layers):
        scale = radius if layer < 3 else radius[::-1]
        per_carrier[:, :, layer, :] = scale[:, None, None] * directions[None] + layer
    store.import_arrays("planted", per_carrier.astype(np.float32), MAGNITUDES.tolist())


def test_e5_from_store_uses_v_eucl_of_the_core_layers(store):
    _plant_frequency_model(store)
    table = e5_from_store(store, "planted", OPENWEBTEXT, n_boot=100)
    assert list(table["layer"]) == [2, 3]
    assert table["raw_rho"].iloc[0] == pytest.approx(1.0)
    assert table["raw_rho"].iloc[1] < 0
    assert "label" in table.columns
    with pytest.raises(FrequencyError, match="do not exist"):
        e5_from_store(store, "planted", OPENWEBTEXT, layers=[9])


def test_e5_params_and_their_fields_as_keywords_are_one_choice(store):
    _plant_frequency_model(store)
    by_params = e5_from_store(store, "planted", OPENWEBTEXT, E5Params(layers=(2,), measure="residual", n_boot=50,
                                                                      seed=3))
    by_keywords = e5_from_store(store, "planted", OPENWEBTEXT, layers=[2], measure="residual", n_boot=50, seed=3)
    pd.testing.assert_frame_equal(by_params, by_keywords)
    with pytest.raises(AnalysisError, match="unknown option.* n_bot: E5Params has layers"):
        e5_from_store(store, "planted", OPENWEBTEXT, n_bot=5)
    with pytest.raises(AnalysisError, match="missing='sometimes' must be one of error, zero"):
        E5Params(missing="sometimes")


def test_e5_from_an_analysis_covers_every_layer_and_is_kept_in_the_e5_table(store, monkeypatch):
    from magdash.runs import frequency_runs as e5_module
    from magdash.runs.analysis_runs import analyze
    from magdash.variability.analysis_params import AnalysisParams

    _plant_frequency_model(store)
    result = analyze(store, "planted", params=AnalysisParams(n_boot=200))
    counts = load_source(OPENWEBTEXT)
    table = e5_from_analysis(store, result, counts, "eucl")
    assert list(table["layer"]) == [0, 1, 2, 3, 4]
    assert table["raw_rho"].iloc[:3].to_numpy() == pytest.approx([1.0, 1.0, 1.0])
    assert (table["raw_rho"].iloc[3:] < 0).all()
    rows = store.metric_table("e5")
    assert sorted(rows["layer"]) == [0, 1, 2, 3, 4] and rows["result_key"].nunique() == 1
    assert set(rows["source"]) == {OPENWEBTEXT} and set(rows["model"]) == {"planted"}
    assert list(rows.sort_values("layer")["raw_rho"]) == pytest.approx(list(table["raw_rho"]))
    np.testing.assert_array_equal(rows.sort_values("layer")["partial_ci_high"], table["partial_ci_high"])
    # At the core layers it is the CLI's E5 with the analysis's resamples and seed, CI included.
    core = e5_from_store(store, "planted", OPENWEBTEXT, n_boot=200, seed=result.params.seed)
    pd.testing.assert_frame_equal(table.iloc[2:4].reset_index(drop=True), core)
    rows = store.metric_table("e5")

    def fail(*args, **kwargs):
        raise AssertionError("E5 recomputed although it is cached")

    monkeypatch.setattr(e5_module, "e5_correlation", fail)
    pd.testing.assert_frame_equal(e5_from_analysis(store, result, counts, "eucl"), table)
    monkeypatch.undo()
    e5_from_analysis(store, result, counts, "eucl", use_cache=False)
    assert len(store.metric_table("e5")) == len(rows)  # a recomputation replaces its rows

    few = FrequencySource(name="few", counts=counts.counts[counts.counts["number"] <= 10], provenance={})
    with pytest.raises(FrequencyError, match="missing"):
        e5_from_analysis(store, result, few, "eucl")
    assert len(store.metric_table("e5")) == len(rows)
