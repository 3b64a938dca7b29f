"""The extract / list / export / import commands, including every bad input the README names."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from magdash.cli import main
from magdash.store import Store
from tests.support import copy_store


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "magdash", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def extracted_store(tmp_path_factory, tiny_llama):
    path = tmp_path_factory.mktemp("extracted") / "cli.duckdb"
    assert main(["extract", "--model", str(tiny_llama), "--name", "tiny", "--store", str(path),
                 "--magnitudes", "1-6", "--stimuli", "six", "--quiet", "--device", "cpu"]) == 0
    return path


@pytest.fixture
def filled_store(extracted_store, tmp_path):
    """A copy of the module's extraction (the tiny Llama on magnitudes 1-6), for one test to change."""
    return copy_store(extracted_store, tmp_path, "cli.duckdb")


def test_extract_list_export_import(filled_store, tmp_path, capsys):
    assert main(["list", "--store", str(filled_store), "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["models"][0]["name"] == "tiny"
    assert listing["models"][0]["stimulus_sets"] == "six"
    out = tmp_path / "tiny.npz"
    assert main(["export", "--model", "tiny", "--out", str(out), "--store", str(filled_store)]) == 0
    with np.load(out) as data:
        assert data["per_carrier"].shape == (6, 5, 5, 32)
        assert data["per_carrier"].dtype == np.float32
        assert list(data["magnitudes"]) == [1, 2, 3, 4, 5, 6]
        assert data["layer_labels"][-1] == "final norm (post-norm)"
    capsys.readouterr()
    assert main(["import", str(out), "--name", "again", "--store", str(filled_store)]) == 0
    # the same sentences are one stimulus set: the import joins "six"
    assert "stimulus set 'six'" in capsys.readouterr().out
    store = Store(filled_store)
    assert store.stimulus_sets_for("tiny") == store.stimulus_sets_for("again") == ["six"]
    np.testing.assert_array_equal(store.read_layer("again", "six", 3).vectors,
                                  store.read_layer("tiny", "six", 3).vectors)
    assert store.model_record("again").n_blocks == store.model_record("tiny").n_blocks


def test_import_needs_only_per_carrier_and_magnitudes(tmp_path, capsys):
    path = tmp_path / "minimal.npz"
    np.savez(path, per_carrier=np.random.default_rng(0).normal(size=(5, 2, 3, 4)), magnitudes=np.arange(1, 6))
    assert main(["import", str(path), "--name", "ext", "--store", str(tmp_path / "s.duckdb")]) == 0
    record = Store(tmp_path / "s.duckdb").model_record("ext")
    assert record.layer_labels == ("embeddings", "layer 1", "layer 2")


def _store_bytes(path):
    store = Store(path)
    return store.list_models().drop(columns="created_at").to_json(), store.stimulus_set_names()


def _bad_files(folder):
    (folder / "noplaceholder.txt").write_text("There are items.\n")
    np.savez(folder / "no_per_carrier.npz", magnitudes=np.arange(3))
    np.savez(folder / "all_nan.npz", per_carrier=np.full((2, 1, 1, 3), np.nan), magnitudes=[1, 2])
    np.savez(folder / "negative.npz", per_carrier=np.ones((2, 1, 1, 3)), magnitudes=[-1, 2])
    (folder / "garbage.npz").write_bytes(b"PK\x03\x04 definitely not a zip")


def _assert_one_error_line(stderr, message):
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("magdash: error:"), lines
    assert message in lines[0]


BAD_INPUT_CASES = [
    (lambda d: ["extract", "--model", "no-such-model"], "no model 'no-such-model'"),
    (lambda d: ["extract", "--model", "minilm", "--carriers", str(d / "noplaceholder.txt")], "no {n} placeholder"),
    (lambda d: ["extract", "--model", "minilm", "--carriers", str(d / "absent.txt")], "cannot read carrier file"),
    (lambda d: ["extract", "--model", "minilm", "--magnitudes", "1-x"], "cannot read '1-x'"),
    (lambda d: ["extract", "--model", "minilm", "--magnitudes", "0,5"], "not positive"),
    (lambda d: ["extract", "--model", "minilm", "--stimuli", "unknown"], "no stored stimulus set"),
    (lambda d: ["extract", "--model", "minilm", "--stimuli", "paper", "--number-format", "words"],
     "are the set 'paper-words'"),
    (lambda d: ["extract", "--model", "minilm", "--stimuli", "six", "--number-format", "grouped"],
     "writes its numbers in digits, not grouped"),
    (lambda d: ["import", str(d / "no_per_carrier.npz"), "--name", "x"], "no 'per_carrier' array"),
    (lambda d: ["import", str(d / "all_nan.npz"), "--name", "x"], "no finite values"),
    (lambda d: ["import", str(d / "negative.npz"), "--name", "x"], "positive"),
    (lambda d: ["import", str(d / "garbage.npz"), "--name", "x"], "not a readable .npz"),
    (lambda d: ["export", "--model", "nobody", "--out", str(d / "x.npz")], "no model named 'nobody'"),
]


@pytest.mark.parametrize(("make_args", "message"), BAD_INPUT_CASES)
def test_bad_input_gives_one_line_and_exit_2(filled_store, tmp_path, make_args, message, capsys):
    """In-process (main); the same cases through the real program are the test below."""
    _bad_files(tmp_path)
    before = _store_bytes(filled_store)
    capsys.readouterr()
    assert main([*make_args(tmp_path), "--store", str(filled_store)]) == 2
    _assert_one_error_line(capsys.readouterr().err, message)
    assert _store_bytes(filled_store) == before


@pytest.mark.slow
def test_bad_input_through_the_real_program_gives_one_line_and_exit_2(filled_store, tmp_path):
    """``python -m magdash`` as a user runs it: nothing logged or warned beside the one line."""
    _bad_files(tmp_path)
    before = _store_bytes(filled_store)
    for make_args, message in (BAD_INPUT_CASES[0], BAD_INPUT_CASES[3], BAD_INPUT_CASES[9]):
        result = run_cli(*make_args(tmp_path), "--store", str(filled_store))
        assert result.returncode == 2, result.stderr
        _assert_one_error_line(result.stderr, message)
    assert _store_bytes(filled_store) == before


def test_stimuli_default_rules(filled_store, tiny_llama, capsys):
    assert main(["extract", "--model", str(tiny_llama), "--name", "tiny", "--store", str(filled_store),
                 "--magnitudes", "1-3", "--stimuli", "three", "--quiet", "--device", "cpu"]) == 0
    capsys.readouterr()
    assert main(["export", "--model", "tiny", "--out", "/dev/null", "--store", str(filled_store)]) == 2
    assert "choose one with --stimuli" in capsys.readouterr().err


def test_number_format_makes_a_set_of_its_own_and_list_says_how_digits_split(filled_store, tiny_llama, capsys):
    assert main(["extract", "--model", str(tiny_llama), "--name", "tiny", "--store", str(filled_store),
                 "--magnitudes", "1-6", "--number-format", "words", "--quiet", "--device", "cpu"]) == 0
    made = capsys.readouterr().out
    store = Store(filled_store)
    (words,) = [name for name in store.stimulus_sets_for("tiny") if name != "six"]
    assert words.startswith("custom-") and f"tiny / {words}: extracted 30 sentences" in made
    assert store.number_formats() == {"six": "digits", words: "words"}
    assert store.stimulus_set(words).items[0].sentence == "The number one is a quantity."
    assert main(["list", "--store", str(filled_store)]) == 0
    listed = capsys.readouterr().out
    assert f"{words} (words)" in listed and "tokenizer: splits some digits" in listed
    assert main(["list", "--store", str(filled_store), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["number_formats"][words] == "words" and document["models"][0]["splits_digits"] == "partly"


def test_repeated_extract_is_a_no_op(filled_store, tiny_llama, capsys):
    capsys.readouterr()
    assert main(["extract", "--model", str(tiny_llama), "--name", "tiny", "--store", str(filled_store),
                 "--magnitudes", "1-6", "--stimuli", "six", "--quiet"]) == 0
    assert "already stored" in capsys.readouterr().out


@pytest.mark.slow
def test_reading_while_a_cli_extraction_writes(tmp_path, tiny_llama):
    path = tmp_path / "busy.duckdb"
    writer = subprocess.Popen(
        [sys.executable, "-m", "magdash", "extract", "--model", str(tiny_llama), "--name", "tiny",
         "--magnitudes", "1-200", "--stimuli", "big", "--batch-size", "8", "--quiet", "--store", str(path),
         "--device", "cpu"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    reads = 0
    while writer.poll() is None:
        store = Store(path, lock_timeout_s=60)
        store.list_models()
        store.extraction_progress()
        reads += 1
    out, err = writer.communicate()
    assert writer.returncode == 0, err
    assert reads > 3
    assert Store(path).stimulus_sets_for("tiny") == ["big"]


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_terminal_that_is_not_utf8_gets_escapes_not_a_crash(encoding, tmp_path):
    """Output a terminal cannot encode (a model named with an em dash, the '—' of a missing
    number) degrades to backslash escapes; it once crashed after the command had done its work."""
    np.savez(tmp_path / "v.npz", per_carrier=np.random.default_rng(0).normal(size=(4, 2, 3, 4)),
             magnitudes=np.arange(1, 5))
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    store = str(tmp_path / "s.duckdb")
    for argv in (["import", str(tmp_path / "v.npz"), "--name", "m—x", "--store", store], ["list", "--store", store]):
        result = subprocess.run([sys.executable, "-m", "magdash", *argv], capture_output=True, timeout=300, env=env)
        assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr.decode(errors="replace")
        assert b"m\\u2014x" in result.stdout, result.stdout
