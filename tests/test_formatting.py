"""One way to write a number that does not exist, in the CLI, tables, the report and the app."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from magdash.cli import main
from magdash.formatting import MISSING, fixed, format_number, format_p
from magdash.frequency import read_counts_csv
from magdash.presentation import variability_figures as vf
from magdash.presentation.report.html import format_cell
from magdash.runs.analysis_runs import analyze
from magdash.runs.frequency_runs import save_source
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from magdash.variability.analysis_params import AnalysisParams

OTHER_SPELLINGS = re.compile(r"\bn/a\b|\bundefined\b|\bnan\b|\binf\b", re.IGNORECASE)


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf, np.float32("nan"), np.float64("inf")])
def test_a_missing_number_is_written_one_way(value):
    assert format_number(value) == MISSING
    assert format_number(value, "+.4f") == MISSING
    assert format_number(value, "9.2g") == f"{MISSING:>9}"
    assert format_p(value) == MISSING
    assert format_cell(value) == (MISSING, "na")
    assert fixed(value) == MISSING


def test_numbers_keep_their_format():
    assert format_number(-0.03721, "+.4f") == "-0.0372"
    assert format_number(np.float32(2.5), "7.3f") == "  2.500"
    assert format_number(3) == "3"
    assert (format_p(0.0123), format_p(0.00012)) == ("0.012", "1.2e-04")
    assert format_cell(0.123456) == ("0.1235", "")


@pytest.fixture
def no_fit_store(tmp_path):
    """A model whose embedding layer has V = 0 (no fit, no correlation) and two layers that fit."""
    store = Store(tmp_path / "s.duckdb")
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 4, 8)).astype(np.float32)
    vectors[:, :, 0] = 1.0
    store.import_arrays("m", vectors, PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)
    counts = "number,count\n" + "\n".join(f"{n},{5000 // n}" for n in PAPER_MAGNITUDES)
    save_source(store, read_counts_csv(counts.encode(), name="counts"))
    return store


@pytest.mark.slow
def test_every_surface_writes_missing_numbers_the_same_way(no_fit_store, capsys):
    where = ["--store", str(no_fit_store.path)]
    outputs = {}
    for command in (["analyze", "--model", "m", "--n-boot", "0"], ["depth", "--model", "m", "--n-boot", "0"],
                    ["freq", "corr", "--model", "m", "--source", "counts", "--layers", "0-2", "--n-boot", "0"]):
        capsys.readouterr()
        assert main([*command, *where]) == 0
        outputs[command[0]] = capsys.readouterr().out
    result = analyze(no_fit_store, "m", params=AnalysisParams(n_boot=0))
    outputs["app"] = vf.fit_summary(result, "eucl") + vf.scaling_figure(result, "eucl", 0).to_json()
    for surface, text in outputs.items():
        assert not OTHER_SPELLINGS.search(text), (surface, OTHER_SPELLINGS.search(text).group(0))
    embeddings = next(line for line in outputs["analyze"].splitlines() if line.lstrip().startswith("0 "))
    assert embeddings.split()[2:5] == [MISSING] * 3  # no alpha for V_eucl, V_residual, V_proj
    assert re.search(rf"^\s+0\s+{MISSING}\s+{MISSING}\s", outputs["freq"], re.M)  # no rho, no p


def test_tables_show_readable_headers_and_p_values_in_scientific_notation():
    from magdash.formatting import P_FORMAT, column_label, is_p_column
    from magdash.presentation.report.html import table_html

    assert [column_label(c) for c in ("measure_label", "alpha_theil_sen", "ci_low", "r2", "n_points", "odd_name")] == [
        "measure", "alpha (Theil–Sen)", "CI low", "R²", "points fitted", "odd name"]
    assert [is_p_column(c) for c in ("p", "h1_p", "partial_p", "p_value", "rho", "alpha", "n_params")] == [
        True, True, True, True, False, False, False]
    assert P_FORMAT % 7e-11 == "7.00e-11"
    frame = pd.DataFrame({"ci_low": [0.5], "p": [7e-11], "r2": [0.25]})
    document = table_html(frame)
    assert "<th>CI low</th>" in document and "<th>R²</th>" in document and "ci_low" not in document
    assert "<td>7.0e-11</td>" in document and "0.00000000007" not in document
