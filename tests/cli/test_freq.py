"""``magdash freq``: count, import-csv, list, fits and corr, with the mistakes users make."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import numpy as np
import pytest

from magdash.cli import main
from magdash.frequency import OPENWEBTEXT, counts_for_magnitudes
from magdash.runs.frequency_runs import load_source
from magdash.store import Store


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / "freq.duckdb")


def run_json(capsys, *args) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_count_prints_counts_and_stores_the_source(tmp_path, store_path, capsys):
    (tmp_path / "a.txt").write_text("In 1999 and 2020. we saw 5 cats, 3.5 dogs and 1,000 birds\n\n5 more\n", encoding="utf-8")
    with gzip.open(tmp_path / "b.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("1000 and 7\n")
    payload = run_json(capsys, "freq", "count", str(tmp_path / "a.txt"), str(tmp_path / "b.txt.gz"),
                       "--store", store_path)
    assert list(payload["counts"]) == [str(n) for n in range(1, 1001)]
    assert {k: v for k, v in payload["counts"].items() if v} == {"1": 1, "5": 2, "7": 1, "1000": 1}
    assert payload["documents"] == 3
    assert payload["numbers_seen"] == 7  # 1999, 5, 1, 000, 5, 1000, 7
    assert payload["source"] == "a+1"
    listing = run_json(capsys, "freq", "list", "--store", store_path)
    stored = {row["name"]: row for row in listing}
    assert set(stored) == {"wordfreq", "openwebtext-500k", "a+1"}
    assert stored["a+1"]["total"] == 5
    assert stored["a+1"]["provenance"]["documents"] == 3


def test_count_options_range_words_and_name(tmp_path, store_path, capsys):
    path = tmp_path / "corpus.jsonl"
    path.write_text(json.dumps({"body": "twenty-one and 3 and 2020."}) + "\n", encoding="utf-8")
    payload = run_json(capsys, "freq", "count", str(path), "--text-field", "body", "--range", "1-2100",
                       "--words", "--sentence-final", "--name", "mine", "--store", str(store_path))
    assert len(payload["counts"]) == 2100
    assert {k: v for k, v in payload["counts"].items() if v} == {"3": 1, "21": 1, "2020": 1}
    source = load_source("mine", Store(store_path))
    assert source.provenance["words"] and source.provenance["sentence_final"]
    assert source.provenance["number_range"] == [1, 2100]


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("", [], "no documents"),
        ("no numbers at all\n", [], "no numbers 1..1000"),
        ("5\n", ["--range", "9-x"], "cannot read the range"),
        ("5\n", ["--name", "wordfreq"], "built-in source"),
    ],
)
def test_count_mistakes_exit_2(tmp_path, store_path, capsys, content, extra, message):
    path = tmp_path / "c.txt"
    path.write_text(content, encoding="utf-8")
    assert main(["freq", "count", str(path), "--store", store_path, *extra]) == 2
    assert message in capsys.readouterr().err


def test_import_csv_and_its_validation(tmp_path, store_path, capsys):
    good = tmp_path / "good.csv"
    good.write_text("# my counts\nnumber,count\n1,10\n2,5\n3,1\n", encoding="utf-8")
    assert run_json(capsys, "freq", "import-csv", str(good), "--name", "mine", "--store", store_path) == {
        "source": "mine", "n_numbers": 3, "total": 16,
    }
    assert load_source("mine", Store(store_path)).provenance["comments"] == ["my counts"]
    bad = tmp_path / "bad.csv"
    bad.write_text("number,count\n1,-4\n", encoding="utf-8")
    assert main(["freq", "import-csv", str(bad), "--name", "bad", "--store", store_path]) == 2
    assert "negative count -4 on line 2" in capsys.readouterr().err
    assert main(["freq", "import-csv", str(tmp_path / "none.csv"), "--name", "x", "--store", store_path]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_fits_reproduce_the_paper(store_path, capsys):
    payload = run_json(capsys, "freq", "fits", "--source", OPENWEBTEXT, "--store", store_path)
    fits = {row["model"]: row for row in payload["fits"]}
    # The paper's printed digits, compared to half their last place (a value on a rounding boundary
    # would round either way on another machine).
    assert fits["power_law"]["parameter"] == pytest.approx(0.773, abs=5e-4)
    assert fits["exponential"]["parameter"] == pytest.approx(0.0798, abs=5e-5)
    assert fits["loglog_ols"]["parameter"] == pytest.approx(1.349, abs=5e-4)
    assert main(["freq", "fits", "--source", OPENWEBTEXT, "--store", store_path]) == 0
    assert "lower AIC" in capsys.readouterr().out


def _planted_model(store_path: str) -> None:
    """A stored model whose V_eucl equals log(count + 1) of openwebtext-500k at every layer."""
    magnitudes = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 50, 100, 200, 500, 1000])
    radius = np.log1p(counts_for_magnitudes(magnitudes, load_source(OPENWEBTEXT)))
    directions = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]], dtype=float)
    per_carrier = np.repeat((radius[:, None, None] * directions[None])[:, :, None, :], 7, axis=2)
    Store(store_path).import_arrays("planted", per_carrier.astype(np.float32), magnitudes.tolist())


def test_corr_reports_e5_per_core_layer(store_path, capsys):
    _planted_model(store_path)
    payload = run_json(capsys, "freq", "corr", "--model", "planted", "--source", OPENWEBTEXT,
                       "--n-boot", "200", "--store", store_path)
    assert [row["layer"] for row in payload["layers"]] == [3, 4, 5]  # 6 blocks: floor(6/2) .. 5
    assert all(row["raw_rho"] == pytest.approx(1.0) for row in payload["layers"])
    assert payload["summary"]["raw"]["mean_rho"] == pytest.approx(1.0)
    assert main(["freq", "corr", "--model", "planted", "--source", "wordfreq", "--layers", "1-2",
                 "--n-boot", "50", "--store", store_path]) == 0
    out = capsys.readouterr().out
    assert "estimates multi-digit numbers" in out
    assert 0 < out.index("partial Spearman rho given log n: mean") < out.index("raw Spearman rho: mean")


def test_corr_correlates_the_measure_asked_for(store_path, capsys):
    _planted_model(store_path)
    assert main(["freq", "corr", "--model", "planted", "--source", OPENWEBTEXT, "--measure", "trace",
                 "--n-boot", "0", "--layers", "3", "--store", store_path]) == 0
    assert "V_trace(n) against log(count+1)" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exited:  # argparse refuses a measure that is not one
        main(["freq", "corr", "--model", "planted", "--source", OPENWEBTEXT, "--measure", "volume",
              "--store", store_path])
    assert exited.value.code == 2
    assert "invalid choice: 'volume'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--source", "nope"], "no frequency source named 'nope'"),
        (["--source", OPENWEBTEXT, "--layers", "40"], "do not exist"),
        (["--source", OPENWEBTEXT, "--layers", "a-b"], "cannot read layers"),
    ],
)
def test_corr_mistakes_exit_2(store_path, capsys, extra, message):
    _planted_model(store_path)
    assert main(["freq", "corr", "--model", "planted", *extra, "--store", store_path]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_module_entry_point_prints_clean_errors(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "magdash", "freq", "count", str(empty),
                             "--store", str(tmp_path / "s.duckdb")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.startswith("magdash: error: no documents")
    assert "Traceback" not in result.stderr
