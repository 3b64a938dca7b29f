"""The tokenization fits inside the analysis: read from the store's token facts, carried in the
result, its JSON, its payload, its metric rows and the CLI's text; absent, with a note, for
vectors without token facts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from magdash.cli import main
from magdash.runs.analysis_runs import analyze
from magdash.runs.rows import analysis_rows
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES, paper_stimuli
from magdash.tokenization import NumberTokens
from magdash.variability.analysis import AnalysisResult, run_analysis
from magdash.variability.analysis_params import AnalysisParams

PLANTED_ALPHA = -0.1
STEP = 0.4  # log V steps up by this at every digit-count boundary (10, 100, 1000)


def planted_vectors(n_layers: int = 3, d: int = 8) -> np.ndarray:
    """(26, 5, n_layers, d) vectors whose V_eucl(n) is exactly n^alpha * exp(STEP * (digits(n) - 1)).

    The carriers sit at +-e1, +-e2 and 0 around the magnitude's centroid, scaled so that their
    mean distance to it is the planted V (the centroid stays the magnitude's mean)."""
    magnitudes = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    digits = np.array([len(str(m)) for m in PAPER_MAGNITUDES])
    spread = magnitudes**PLANTED_ALPHA * np.exp(STEP * (digits - 1))
    offsets = np.zeros((5, d))
    offsets[0, 0], offsets[1, 0], offsets[2, 1], offsets[3, 1] = 1, -1, 1, -1
    offsets *= 5 / 4  # four carriers at distance 5/4, one at 0: mean distance 1
    centroids = np.log(magnitudes)[:, None] * np.linspace(1.0, 2.0, d)
    vectors = centroids[:, None, None, :] + spread[:, None, None, None] * offsets[None, :, None, :]
    return np.repeat(vectors, n_layers, axis=2)


def per_digit_facts(position: str = "last") -> list[NumberTokens]:
    return [
        NumberTokens(item.magnitude, item.carrier_index, position, len(str(item.magnitude)),
                     (100 + int(str(item.magnitude)[-1]),), 100 + int(str(item.magnitude)[-1]),
                     str(item.magnitude)[-1], tuple(str(item.magnitude)), len(str(item.magnitude)),
                     len(str(item.magnitude)))
        for item in paper_stimuli().items
    ]


@pytest.fixture
def planted_store(store):
    store.import_arrays("planted", planted_vectors(), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS, stimuli="paper")
    return store


def test_the_adjusted_alpha_recovers_the_planted_one_where_the_raw_alpha_is_biased(planted_store):
    params = AnalysisParams(n_boot=200, measures=("eucl",))
    store = planted_store
    before = analyze(store, "planted", "paper", params)
    assert not before.has_tokenization and "not recorded" in before.tokenization_note
    store.write_token_facts(store.model_record("planted").model_id, [item.key for item in paper_stimuli().items],
                            per_digit_facts())
    result = analyze(store, "planted", "paper", params)  # the facts are part of the key: not the cached one
    assert result.has_tokenization and result.tokenization_note == ""
    raw = result.alphas("eucl")
    rows = result.tokenization[result.tokenization["measure"] == "eucl"]
    assert np.all(raw > PLANTED_ALPHA + 0.1)  # the steps tilt the raw slope (positive, against -0.1)
    np.testing.assert_allclose(rows["alpha"], PLANTED_ALPHA, atol=1e-5)  # float32 vectors
    np.testing.assert_allclose(rows["alpha_raw"], raw)
    steps = json.loads(rows["steps"].iloc[1])
    assert steps == pytest.approx({"2": STEP, "3": 2 * STEP, "4": 3 * STEP}, abs=1e-5)
    # within every stratum of two or more points the planted slope is exact; 1000 alone has no fit
    strata = result.token_strata[(result.token_strata["measure"] == "eucl") & (result.token_strata["layer"] == 1)]
    assert strata["n_tokens"].tolist() == [1, 2, 3, 4]
    assert strata["n_magnitudes"].tolist() == [9, 10, 6, 1]
    np.testing.assert_allclose(strata["alpha"].iloc[:3], PLANTED_ALPHA, atol=1e-5)
    assert math.isnan(strata["alpha"].iloc[3]) and "a fit needs 5" in strata["reason"].iloc[3]
    summary = result.tokenization_summary("eucl")
    assert summary["mean_alpha_adjusted"] == pytest.approx(PLANTED_ALPHA, abs=1e-5)
    assert summary["mean_alpha_raw"] == pytest.approx(result.hypotheses["eucl"].mean_alpha)
    assert result.tokens["n_tokens"].tolist() == [len(str(m)) for m in PAPER_MAGNITUDES]


def test_the_tokenization_fits_survive_the_cache_the_json_and_the_metric_rows(planted_store, capsys):
    store = planted_store
    store.write_token_facts(store.model_record("planted").model_id, [item.key for item in paper_stimuli().items],
                            per_digit_facts())
    params = AnalysisParams(n_boot=100)
    result = analyze(store, "planted", "paper", params)
    again = AnalysisResult.from_payload(result.to_payload())
    assert again.tokenization.equals(result.tokenization) and again.token_strata.equals(result.token_strata)
    assert again.tokens.equals(result.tokens)
    document = result.to_json()["tokenization"]
    assert document["recorded"] and len(document["magnitudes"]) == 26
    assert document["summary"]["eucl"]["mean_alpha_adjusted"] == pytest.approx(PLANTED_ALPHA, abs=1e-5)
    assert [row["alpha_raw"] for row in document["layers"]["eucl"]] == pytest.approx(list(result.alphas("eucl")))
    rows = analysis_rows(result)
    assert len(rows["tokenization_fits"]) == 3 * 3 and len(rows["token_strata"]) == 3 * 3 * 4
    stored = store.metric_table("tokenization_fits")
    eucl = stored[(stored["measure"] == "eucl") & stored["core"]]
    np.testing.assert_allclose(eucl["alpha"], PLANTED_ALPHA, atol=1e-5)
    assert main(["analyze", "--model", "planted", "--store", str(store.path), "--n-boot", "100"]) == 0
    out = capsys.readouterr().out
    assert "tokenization: alpha adjusted for the token count -0.1000" in out
    assert "4 tokens (1 magnitude, 1000) —" in out
    assert main(["analyze", "--model", "planted", "--store", str(store.path), "--n-boot", "100", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)["tokenization"]
    assert printed["summary"]["eucl"]["mean_alpha_adjusted"] == pytest.approx(PLANTED_ALPHA, abs=1e-5)


def test_without_token_facts_there_is_no_adjusted_alpha_and_a_note_says_why(planted_store, capsys):
    result = analyze(planted_store, "planted", "paper", AnalysisParams(n_boot=0))
    assert result.tokenization.empty and result.token_strata.empty and result.tokens.empty
    assert result.tokenization_summary("eucl") == {"recorded": False, "note": result.tokenization_note}
    assert "run `magdash extract`" in result.tokenization_note
    assert analysis_rows(result)["tokenization_fits"].empty
    assert main(["analyze", "--model", "planted", "--store", str(planted_store.path), "--n-boot", "0"]) == 0
    assert "tokenization: no adjusted alpha: the token facts of these vectors are not recorded" in capsys.readouterr().out


def test_excluded_carriers_are_left_out_of_the_facts_and_wrong_facts_are_refused():
    vectors = planted_vectors()
    layers = [(f"layer {i}", vectors[:, :, i]) for i in range(3)]
    facts = per_digit_facts()
    # carrier 4 tokenizes every number as one token: left out, it must not decide the strata
    facts = [f if f.carrier_index != 4 else NumberTokens(f.magnitude, 4, "last", 1, (7,), 7, "x", ("x",), 1, 1)
             for f in facts]
    facts = [f if f.carrier_index != 3 else NumberTokens(f.magnitude, 3, "last", 1, (7,), 7, "x", ("x",), 1, 1)
             for f in facts]
    params = AnalysisParams(n_boot=0, measures=("eucl",), exclude_carriers=(3, 4))
    result = run_analysis(layers, np.asarray(PAPER_MAGNITUDES, float), n_blocks=2, params=params, number_tokens=facts)
    assert result.tokens["n_tokens"].tolist() == [len(str(m)) for m in PAPER_MAGNITUDES]
    with pytest.raises(Exception, match="token facts of 25 magnitudes"):
        run_analysis(layers, np.asarray(PAPER_MAGNITUDES, float), n_blocks=2, params=AnalysisParams(n_boot=0),
                     number_tokens=[f for f in facts if f.magnitude != 1000])
