"""The Controls and Design pages' logic: choices, keys, extracting a variant, figures, reports."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from magdash import dashboard, reports
from magdash.controls_statistics.controls_params import ControlsParams, DesignParams
from magdash.dashboard import controls_page as dc
from magdash.errors import AnalysisError, MagdashError
from magdash.presentation import controls_figures as cf
from magdash.presentation import export, report
from magdash.runs.analysis_runs import analyze
from magdash.runs.controls_runs import run_controls
from magdash.runs.design_runs import run_design
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import ModelRecord, Store
from magdash.variability.analysis_params import AnalysisParams

MAGNITUDES = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)


def _import(store, name, exponent, seed):
    rng = np.random.default_rng(seed)
    shape = (MAGNITUDES.size, len(PAPER_CARRIERS), 5, 12)
    vectors = rng.normal(size=shape) * MAGNITUDES[:, None, None, None] ** exponent
    store.import_arrays(name, vectors.astype(np.float32), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("controls") / "store.duckdb")
    _import(store, "m", -0.1, 1)
    _import(store, "m:first", -0.08, 2)
    _import(store, "m@random", 0.0, 3)
    return store


def _view(store, **changes):
    inventory = dashboard.read_inventory(store)
    view, _ = dashboard.reconcile_view(dashboard.ViewState(store=str(store.path), model="m", n_boot=200), inventory)
    return dataclasses.replace(view, **changes), inventory


def test_variant_choices_and_keys(stored):
    view, inventory = _view(stored)
    assert dc.variant_choices(view, inventory) == ["m:first"]  # the @random control is not a variant
    key = dc.controls_key(view, inventory, ("m:first",))
    assert key.params.variants == ("m:first",) and len(key.tokens) == 3 and all(key.tokens)
    assert hash(key) == hash(dc.controls_key(view, inventory, ("m:first",)))
    assert dc.controls_key(view, inventory).tokens[1] != ""  # m@random is stored: its token is there
    design = dc.design_key(view, inventory, dc.default_design(inventory.record("m"), view))
    assert design.params.n_layers == 2  # the default band of a 4-block model: layers 2..3
    with pytest.raises(MagdashError, match="no model is selected"):
        dc.controls_key(dashboard.ViewState(store=str(stored.path)), inventory)


def _record(source, **changes):
    base = ModelRecord(name="minilm", model_id="x", source=source, fingerprint="f", dtype="float32",
                       transformers_version="", architecture="BertModel", n_blocks=6, hidden_size=384,
                       layer_labels=tuple(str(i) for i in range(7)))
    return dataclasses.replace(base, **changes)


def test_a_variant_is_extracted_only_when_the_weights_are_at_hand(stored, tmp_path):
    for absent in (_record(f"folder:{tmp_path / 'gone'}"), _record("import"), _record("builtin:minilm", is_random=True)):
        with pytest.raises(MagdashError, match="are not at hand here"):
            dc.variant_request(stored, absent, "paper", dtype="bfloat16", position="last")
    request = dc.variant_request(stored, _record("builtin:minilm"), "paper", dtype="bfloat16", position="first")
    assert (request.spec, request.name, request.dtype, request.position) == ("minilm", "minilm:bfloat16:first",
                                                                            "bfloat16", "first")
    with pytest.raises(MagdashError, match="already stored with dtype float32"):
        dc.variant_request(stored, _record("builtin:minilm"), "paper", dtype="float32", position="last")
    with pytest.raises(MagdashError, match="not at hand"):
        dc.variant_request(stored, _record("import", name="m"), "paper", dtype="float16", position="last")


@pytest.mark.slow
def test_every_token_position_and_other_number_formats_in_one_click(tmp_path):
    store = Store(tmp_path / "store.duckdb")
    _import(store, "m", -0.1, 1)
    view, inventory = _view(store)
    record = _record("builtin:minilm", name="m", dtype="float32", position="last")
    # m:first is not stored here: the click extracts the first and mean positions of m's weights
    requests = dc.position_requests(store, record, "paper", inventory)
    assert [(r.name, r.position, r.dtype, r.spec) for r in requests] == [
        ("m:first", "first", "float32", "minilm"), ("m:mean", "mean", "float32", "minilm")]
    _import(store, "m:first", -0.08, 2)
    view, inventory = _view(store)
    assert [r.name for r in dc.position_requests(store, record, "paper", inventory)] == ["m:mean"]
    # the stimuli in other formats: the paper's set becomes paper-<format>, the model keeps its name
    formats = dc.format_requests(store, record, "paper", ["words", "digits", "grouped"])
    assert [(r.stimuli.name, r.stimuli.number_format, r.name, r.position) for r in formats] == [
        ("paper-words", "words", "m", "last"), ("paper-grouped", "grouped", "m", "last")]
    job = dc.extractions_job(store, formats, "number formats of m")
    assert job.label == "number formats of m" and job.snapshot().n_steps == 2
    with pytest.raises(MagdashError, match="nothing to extract"):
        dc.extractions_job(store, [], "x")
    with pytest.raises(MagdashError, match="not at hand"):
        dc.format_requests(store, _record("import", name="m"), "paper", ["words"])
    # once stored on the words set, it is a format variant the controls compare
    assert dc.format_variant_sets(store, view, inventory) == {}
    rng = np.random.default_rng(4)
    words = formats[0].stimuli
    store.register_stimulus_set(words)
    vectors = rng.normal(size=(len(words.items), 5, 12)) * np.repeat(MAGNITUDES, 5)[:, None, None] ** 0.1
    store.write_vectors(store.model_record("m").model_id, [item.key for item in words.items], vectors.astype(np.float32))
    view, inventory = _view(store)
    assert dc.format_variant_sets(store, view, inventory) == {"words": "paper-words"}
    key = dc.controls_key(view, inventory, (), {"words": "paper-words"})
    assert key.params.formats == ("words",) and key.tokens[-1] == inventory.data_token("m", "paper-words")
    result = run_controls(store, "m", "paper", dataclasses.replace(key.params, n_perm=100))
    assert cf.compared(result) == ["m on paper-words"]
    table = cf.variant_table(result, "eucl")
    assert table["variant"].tolist() == ["m on paper-words"] and np.isfinite(table["ci_low_at_max"]).all()


@pytest.mark.slow  # renders every figure to an image; the fast loop draws the same figures through the pages
def test_controls_figures_tables_and_report(stored):
    params = ControlsParams(analysis=AnalysisParams(n_boot=200), n_perm=500, variants=("m:first",))
    result = run_controls(stored, "m", params=params)
    assert cf.compared(result) == ["m:first", "m@random"]
    for builder, args in ((cf.loo_figure, ("eucl",)), (cf.icc_figure, ()), (cf.permutation_figure, ("proj",)),
                          (cf.variant_figure, ("m:first", "eucl")), (cf.variant_figure, ("m@random", "residual"))):
        spec = builder(result, *args).to_dict()
        assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/")
        assert export.chart_to_svg(builder(result, *args)).startswith("<svg")
    with pytest.raises(AnalysisError, match="'m:last' was not compared"):
        cf.variant_figure(result, "m:last", "eucl")
    verdicts = cf.controls_verdicts(result, "eucl")
    assert set(verdicts["status"]) <= {"problem", "ok", "not judged"} and len(verdicts) == 5
    assert len(cf.loo_table(result, "eucl")) == len(PAPER_CARRIERS)
    assert list(cf.permutation_table(result, "eucl")["layer"]) == list(range(5))
    assert list(cf.variant_table(result, "eucl")["variant"]) == ["m:first", "m@random"]
    long = cf.permutation_frame(result, "eucl")
    assert set(long["test"]) == {"parametric (t)", "permutation"} and len(long) == 10
    assert "control" in cf.controls_sentence(result, "eucl")
    document = reports.controls_report(stored, result, ["eucl", "proj"])
    assert "Robustness controls: m, V_eucl" in document and "Robustness controls: m, V_proj" in document
    manifest = report.extract_manifest(document)
    assert manifest["controls_parameters"]["variants"] == ["m:first"]
    assert document.count("<img") == 2 * 5  # loo, icc, permutation, two comparisons per measure
    # the sidebar's report adds the controls last shown, when they are the view model's
    view, inventory = _view(stored)
    shown = dc.session_sections(view, result, None)
    assert [s.title for s in shown] == ["Robustness controls: m, V_eucl"]
    assert dc.session_sections(dataclasses.replace(view, model="m:first"), result, None) == []
    key = dashboard.analysis_key(view, inventory)
    full = reports.analysis_report(stored, ["m"], key.stimuli, key.params, comparisons=[], extra_sections=shown)
    assert "Robustness controls: m, V_eucl" in full and "Verdicts (H1-H4)" in full


def test_design_figures_tables_and_report(stored):
    params = DesignParams(n_studies=60, n_points=4, n_boot=10, carrier_grid=(3, 5), magnitude_grid=(10, 26))
    result = run_design(stored, "m", params=params, analysis_params=AnalysisParams(n_boot=0))
    for builder in (cf.h1_figure, cf.e6_figure, cf.ci_width_figure):
        assert export.chart_to_png(builder(result), scale=1).startswith(b"\x89PNG")
    h1 = cf.h1_power_frame(result)
    assert set(h1["series"]) == {"t-test", "t-test, size-adjusted", "majority of layers > 0"}
    assert (h1["low"].dropna() <= h1.loc[h1["low"].notna(), "rate"]).all()
    assert set(cf.ci_width_frame(result)["factor"]) == {"carriers", "magnitudes"}
    assert "minimal detectable alpha" in cf.design_sentence(result)
    summary = cf.design_summary(result)
    assert "H1 power at the design's alpha" in set(summary["quantity"])
    analysis = analyze(stored, "m", params=AnalysisParams(n_boot=0))
    document = reports.design_report(stored, result, "m", analysis)
    assert "Study design (simulated)" in document and document.count("<img") == 3
    view, _ = _view(stored)
    assert [s.title for s in dc.session_sections(view, None, result, "m")] == ["Study design (simulated)"]
    assert dc.session_sections(view, None, result, "other") == []
    # a key left in the session from another store, model or set is never resolved for the report
    key = dc.DesignKey(view.store, "m", view.stimuli, AnalysisParams(n_boot=0), params, "token")
    assert dc.session_key(view, key) is key and dc.session_key(view, None) is None
    for other in ({"store": "elsewhere.duckdb"}, {"model": "other"}, {"stimuli": "wide"}):
        assert dc.session_key(view, dataclasses.replace(key, **other)) is None
    assert json.dumps(report.extract_manifest(document)["calibration"]["dimension"])
