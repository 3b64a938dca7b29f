"""The Streamlit app under AppTest: every page on an empty store and on one holding the
built-in model and its random control; widget changes rerun cleanly; the URL keeps the view."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from magdash import dashboard as db
from magdash.dashboard.jobs import first_run_label, run_first_protocol
from magdash.presentation.formatting import MISSING
from magdash.store import Store
from pages import ui
from tests.support import ROOT, copy_store, labels, open_app, shown, widget

PAGES = [page.file for page in db.PAGES if (ROOT / page.file).is_file()]
DATA_PAGES = [page for page in PAGES if Path(page).stem not in ("home", "extract", "stimuli")]

# Charts each page draws on the populated store (every chart has PNG and SVG buttons).
EXPECTED_CHARTS = {
    "home": 1, "extract": 0, "stimuli": 0, "scaling": 2, "weber": 5, "frequency": 3,
    "compare": 1, "geometry": 3, "depth": 6, "controls": 4, "design": 0,
}
EXPECTED_TABLES = {
    "home": 1, "scaling": 1, "weber": 2, "frequency": 2, "compare": 1, "geometry": 1, "depth": 2,
    "controls": 5,
}


@pytest.fixture(scope="module")
def populated(tmp_path_factory) -> str:
    """The first-run protocol (minilm, smollm2 and their controls), exactly what the Home button runs."""
    path = tmp_path_factory.mktemp("populated") / "store.duckdb"
    store = Store(path)
    assert run_first_protocol(store, db.analysis_params(db.ViewState(store=str(path))))
    return str(path)


def chart_specs(at: AppTest) -> list[dict]:
    return [json.loads(element.proto.spec) for element in at.get("vega_lite_chart")]


def texts(at: AppTest) -> str:
    kinds = ("markdown", "info", "warning", "error", "success", "caption")
    return "\n".join(shown(element) for kind in kinds for element in at.get(kind))


# -- empty store -------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_every_page_on_an_empty_store_says_what_to_do(page, tmp_path, monkeypatch):
    at = open_app(str(tmp_path / "empty.duckdb"), monkeypatch, page=page)
    assert not at.get("vega_lite_chart")
    name = Path(page).stem
    if name == "home":
        assert f"Run the paper's protocol on {first_run_label()}" in labels(at.button)
    elif name == "extract":
        assert "Extract" in labels(at.button)
    elif name == "stimuli":
        assert "Save stimulus set" in labels(at.button)
    else:
        assert any("Nothing to show yet" in shown(info) for info in at.info)
        links = [element.proto.page for element in at.main.get("page_link")]
        assert len(links) == 2  # Home (first run) and Extract: no dead end


def test_the_sidebar_of_an_empty_store_points_to_home(tmp_path, monkeypatch):
    at = open_app(str(tmp_path / "empty.duckdb"), monkeypatch)
    assert any("no complete extraction" in shown(info) for info in at.sidebar.info)
    assert widget(at.sidebar.text_input, "Store").value == str(tmp_path / "empty.duckdb")


def test_first_run_button_shows_progress_and_cancels(tmp_path, monkeypatch):
    path = str(tmp_path / "first.duckdb")
    at = open_app(path, monkeypatch)
    widget(at.button, f"Run the paper's protocol on {first_run_label()}").click().run()
    assert not at.exception
    job = ui.job_registry().get(path)
    assert job is not None
    assert at.get("progress"), "a running job shows a progress bar"
    assert "Cancel" in labels(at.button)
    job.cancel()

    def says_cancelled() -> bool:
        return any("cancelled" in shown(warning) for warning in at.warning)

    at.run()
    said = [says_cancelled()]  # the job may have stopped already, on a fast machine
    for bar in at.get("progress"):  # still running: the cancel is acknowledged at once
        assert "cancelling: stops after the current batch" in re.sub(r"\\(.)", r"\1", bar.proto.text)
        assert widget(at.button, "Cancel").disabled
    assert job.wait(300).state == "cancelled"
    at.run()
    said.append(says_cancelled())
    assert said.count(True) == 1  # said in the first run that sees the cancelled job, and only then
    at.run()  # forgotten: no box left on every page
    assert not says_cancelled()
    assert ui.job_registry().get(path) is None


def test_a_failing_extraction_shows_a_message_not_a_traceback(tmp_path, monkeypatch):
    at = open_app(str(tmp_path / "s.duckdb"), monkeypatch, page="pages/extract.py")
    widget(at.radio, "Model from").set_value("folder").run()
    widget(at.text_input, "Model folder or GGUF file").set_value(str(tmp_path / "nowhere")).run()
    assert any("does not exist" in shown(info) for info in at.info)
    assert widget(at.button, "Extract").disabled
    widget(at.text_input, "Model folder or GGUF file").set_value(str(tmp_path)).run()  # a folder, but no model
    widget(at.button, "Extract").click().run()
    job = ui.job_registry().get(str(tmp_path / "s.duckdb"))
    assert job.wait(300).state == "failed"
    at.run()
    assert not at.exception
    assert any("has no config.json" in shown(error) for error in at.error)


@pytest.mark.slow
def test_extract_page_runs_a_model_and_the_pages_show_it(tiny_llama, tmp_path, monkeypatch):
    path = str(tmp_path / "s.duckdb")
    at = open_app(path, monkeypatch, page="pages/extract.py")
    widget(at.radio, "Model from").set_value("folder").run()
    widget(at.text_input, "Model folder or GGUF file").set_value(str(tiny_llama)).run()
    widget(at.button, "Extract").click().run()
    snapshot = ui.job_registry().get(path).wait(300)
    assert snapshot.state == "done", snapshot.message
    at.run()
    assert any("finished" in shown(success) for success in at.success)
    at.switch_page("pages/scaling.py").run()
    assert not at.exception
    assert len(at.get("vega_lite_chart")) == 2
    # The tiny Llama has a final norm: its post-norm layer is offered as a layer too.
    assert widget(at.select_slider, "Layer").options[-1] == "4 · final norm (post-norm)"


# -- populated store -----------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_every_page_on_the_populated_store(page, populated, monkeypatch):
    at = open_app(populated, monkeypatch, page=page)
    name = Path(page).stem
    assert len(at.get("vega_lite_chart")) == EXPECTED_CHARTS[name]
    buttons = labels(at.get("download_button"))
    assert buttons.count("PNG") == buttons.count("SVG") == EXPECTED_CHARTS[name]
    assert buttons.count("CSV") >= EXPECTED_TABLES.get(name, 0)
    assert "Report (HTML)" in labels(at.sidebar.get("download_button"))
    assert not at.error


def test_controls_page_judges_the_builtin_model_against_its_random_control(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/controls.py")
    verdicts = at.dataframe[0].value
    assert list(verdicts["control"]) == ["carriers", "icc", "permutation", "variant", "random"]
    assert "minilm@random" in " ".join(verdicts["verdict"])
    assert "Controls report (HTML)" in labels(at.get("download_button"))
    widget(at.sidebar.selectbox, "Measure").set_value("proj").run()
    assert not at.exception and "V_proj" in texts(at)
    # a variant cannot be extracted for a model whose weights are not at hand: a message, no job
    widget(at.selectbox, "dtype").set_value("float32").run()
    widget(at.button, "Extract variant").click().run()
    assert any("already stored with dtype float32" in shown(e) for e in at.error)


def test_design_page_simulates_on_request(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/design.py")
    assert any("press Simulate" in shown(info) for info in at.info)
    widget(at.number_input, "Studies per point").set_value(50)
    widget(at.number_input, "Joint-bootstrap resamples (E6)").set_value(10)
    widget(at.number_input, "Core layers").set_value(3)
    at.get("form_submit_button")[0].click().run()
    assert not at.exception and not at.error
    assert len(at.get("vega_lite_chart")) == 3
    assert "minimal detectable alpha" in texts(at)
    buttons = labels(at.get("download_button"))
    assert buttons.count("PNG") == 3 and "Design report (HTML)" in buttons


def test_missing_numbers_in_app_tables_read_as_the_missing_mark(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/compare.py")
    table = at.dataframe[0]
    assert table.value[["ci_low", "ci_high"]].isna().any().all()  # no CI outside the core band
    assert table.proto.placeholder == MISSING  # shown as the mark, not as "None"


def test_depth_page_shows_the_worked_example_on_a_real_decoder(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/depth.py")
    expander = next(e for e in at.expander if "Worked example" in e.label)
    shown_text = " ".join(m.value for m in expander.markdown)
    # the measured numbers and the honest reading, from docs/depth_example.md
    assert "smollm2@random" in shown_text and "12,828 token vectors" in shown_text
    assert "mp_converged: false" in shown_text and "What it says about the claim" in shown_text


def test_a_bookmark_opened_on_a_fresh_server_goes_through_the_app(populated, monkeypatch):
    # The first request of a fresh server runs a page file alone; the page declares the
    # navigation and reruns, so the sidebar and the bookmarked view are there.
    at = open_app(populated, monkeypatch, query={"layer": "2"}, page="pages/scaling.py", fresh_server=True)
    assert widget(at.sidebar.selectbox, "Model").value == "minilm"
    assert widget(at.select_slider, "Layer").value == "2 · block 2"
    assert len(at.get("vega_lite_chart")) == 2


def test_layer_change_reruns_and_lands_in_the_url(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/scaling.py")
    slider = widget(at.select_slider, "Layer")
    assert slider.value == "4 · block 4"  # the middle of the default core band 3..5
    slider.set_value("2 · block 2").run()
    assert not at.exception
    assert at.query_params["layer"] == "2"
    assert "block 2" in json.dumps(chart_specs(at)[0]["title"])
    widget(at.select_slider, "Layer").set_value("6 · block 6").run()
    assert at.query_params["layer"] == "6" and not at.exception
    # Switching model keeps the layer (in the URL and on the slider): the same depth, another model.
    widget(at.sidebar.selectbox, "Model").set_value("minilm@random").run()
    assert not at.exception and at.query_params["model"] == "minilm@random"
    assert at.query_params["layer"] == "6" and widget(at.select_slider, "Layer").value == "6 · block 6"
    assert not [w for w in at.sidebar.warning if "cannot be compared" in shown(w)]


def test_measure_model_and_core_band_changes_rerun_cleanly(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/scaling.py")
    widget(at.sidebar.selectbox, "Measure").set_value("proj").run()
    assert not at.exception and at.query_params["measure"] == "proj"
    assert "V_proj" in json.dumps(chart_specs(at)[0]["title"])
    widget(at.sidebar.selectbox, "Model").set_value("minilm@random").run()
    assert not at.exception and at.query_params["model"] == "minilm@random"
    assert "minilm@random" in json.dumps(chart_specs(at)[1]["title"])
    widget(at.sidebar.select_slider, "Core layers").set_value((2, 4)).run()
    assert not at.exception and at.query_params["core"] == "2-4"
    assert "core layers 2-4" in json.dumps(chart_specs(at)[1]["title"])
    at.switch_page("pages/weber.py").run()  # the choices are kept across pages
    assert not at.exception
    assert widget(at.sidebar.selectbox, "Model").value == "minilm@random"
    assert widget(at.sidebar.select_slider, "Core layers").value == (2, 4)


def test_the_conventions_setting_lands_in_the_url_and_in_the_figures(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/scaling.py")
    assert "magdash's conventions" in json.dumps(chart_specs(at)[1]["title"])
    widget(at.sidebar.radio, "Conventions").set_value("paper").run()
    assert not at.exception and at.query_params["conv"] == "paper"
    assert "the conventions of the paper's script" in json.dumps(chart_specs(at)[1]["title"])
    at.switch_page("pages/weber.py").run()  # kept across pages
    assert not at.exception and widget(at.sidebar.radio, "Conventions").value == "paper"
    science = [e for e in at.expander if "docs/science.md" in e.label]
    assert len(science) == 1 and "Two conventions" in " ".join(m.value for m in science[0].markdown)
    bookmarked = open_app(populated, monkeypatch, query={"conv": "paper"}, page="pages/frequency.py")
    assert widget(bookmarked.sidebar.radio, "Conventions").value == "paper"
    assert "(rho > 0 and p < .05)" in texts(bookmarked)


def test_a_bookmarked_view_opens_as_it_was_shared(populated, monkeypatch):
    query = {"model": "minilm@random", "measure": "residual", "layer": "2", "vs": "minilm"}
    at = open_app(populated, monkeypatch, query=query, page="pages/compare.py")
    assert widget(at.sidebar.selectbox, "Model").value == "minilm@random"
    assert widget(at.sidebar.selectbox, "Measure").value == "residual"
    assert widget(at.selectbox, "Model B").value == "minilm"
    assert "minilm@random vs minilm" in json.dumps(chart_specs(at)[0]["title"])
    at.switch_page("pages/scaling.py").run()
    assert widget(at.select_slider, "Layer").value == "2 · block 2"


def test_a_broken_link_explains_what_it_ignored(populated, monkeypatch):
    at = open_app(populated, monkeypatch, query={"model": "gone", "measure": "bogus", "core": "x"})
    warnings = " ".join(shown(w) for w in at.sidebar.warning)
    assert "'gone'" in warnings and "'bogus'" in warnings and "'x'" in warnings
    assert widget(at.sidebar.selectbox, "Model").value == "minilm"


def test_geometry_metric_and_frequency_source_switch(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/geometry.py")
    widget(at.radio, "Distance").set_value("cosine").run()
    assert not at.exception
    assert "cosine" in json.dumps(chart_specs(at)[0]["title"])
    at.switch_page("pages/frequency.py").run()
    widget(at.selectbox, "Frequency source").set_value("openwebtext-500k").run()
    assert not at.exception
    assert "openwebtext-500k" in texts(at)
    assert len(at.get("vega_lite_chart")) == 3
    # the page's E5, every layer of the model, is in the store's e5 table for SQL
    e5 = Store(populated).metric_table("e5")
    shown = e5[(e5["source"] == "openwebtext-500k") & (e5["model"] == "minilm")]
    assert sorted(shown["layer"]) == list(range(Store(populated).model_record("minilm").n_layers))


def test_stimuli_upload_is_validated_and_saved(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/stimuli.py")
    widget(at.radio, "Carriers from").set_value("upload").run()
    uploader = at.file_uploader[0]
    uploader.upload("carriers.txt", "Caf\xe9 {n}.\n".encode("latin-1"), "text/plain")
    at.run()
    assert any("not UTF-8" in shown(e) for e in at.error)
    at.file_uploader[0].upload("carriers.csv", b"carrier\nThere are {n} cats.\nNo number.\n", "text/csv")
    at.run()
    assert any("row 3 has no {n}" in shown(e) for e in at.error)
    assert widget(at.button, "Save stimulus set").disabled
    at.file_uploader[0].upload("carriers.csv", b"carrier\nThere are {n} cats.\nI saw {n} dogs.\n", "text/csv")
    at.run()
    widget(at.radio, "Magnitudes from").set_value("list").run()
    widget(at.text_input, "Magnitudes").set_value("1-5").run()
    widget(at.text_input, "Stimulus set name").set_value("pets").run()
    widget(at.button, "Save stimulus set").click().run()
    assert any("Saved 'pets'" in shown(s) for s in at.success)
    assert Store(populated).stimulus_set("pets").magnitudes == (1, 2, 3, 4, 5)
    at.switch_page("pages/extract.py").run()
    assert "pets" in widget(at.main.selectbox, "Stimulus set").options


def test_tokenization_preview_for_the_builtin_model(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/stimuli.py")
    widget(at.toggle, "Show the tokenization").set_value(True).run()
    assert not at.exception
    preview = at.dataframe[-1].value
    assert {"number_tokens", "kept", "tokens"} <= set(preview.columns)
    assert preview.loc[preview["magnitude"] == 1000, "kept"].iloc[0] != ""
    assert any("numbers shown" in shown(m) for m in at.markdown)


def test_user_level_problems_in_a_page_show_as_messages(tmp_path, monkeypatch):
    # A one-block model has no core band (floor(L/2) .. L-1 is empty): every page must say so
    # instead of raising; a model name written as Markdown is shown literally.
    import numpy as np

    from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES

    store = Store(tmp_path / "odd.duckdb")
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 2, 8)).astype(np.float32)
    store.import_arrays("[odd](http://example.org)", vectors, PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)
    at = open_app(str(store.path), monkeypatch)
    assert any("at least 2 blocks" in shown(e) for e in at.sidebar.error)
    assert any("\\[odd\\]\\(http\\://example\\.org\\)" in h.value for h in at.subheader)
    for page in DATA_PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        if Path(page).stem in ("scaling", "weber", "frequency", "geometry"):  # they need the core band
            assert any("at least 2 blocks" in shown(e) for e in at.main.error), page


def test_the_sidebar_menu_links_every_page_and_the_server_stays_quiet(tmp_path, monkeypatch):
    import tomllib

    at = open_app(str(tmp_path / "empty.duckdb"), monkeypatch)
    menu = [element.proto.page for element in at.sidebar.get("page_link")]
    assert len(menu) == len(PAGES)  # the app's own menu: Streamlit's lists the pages/ files first
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["showSidebarNavigation"] is False
    # No recursive inotify watch over .venv/ and cache/ (it overflowed); no gc after each run.
    assert config["server"]["fileWatcherType"] == "poll"
    assert {".venv", "cache"} <= set(config["server"]["folderWatchBlacklist"])
    assert config["runner"]["postScriptGC"] is False
    # A :material/...: page icon is fetched from fonts.gstatic.com on every page load.
    assert 'page_icon=":material' not in (ROOT / "app.py").read_text(encoding="utf-8")


def test_a_set_only_the_model_holds_shows_no_comparison_warning(populated, tmp_path, monkeypatch):
    """Switching to a stimulus set the control lacks drops the comparison partner quietly (the
    pages there compare nothing); switching back restores the control."""
    from magdash.extract import extract
    from magdash.stimuli import StimulusSet

    path = copy_store(populated, tmp_path, "two-sets.duckdb")
    tiny = StimulusSet("my-carriers", ("I saw {n} birds.", "There were {n} cars."), (1, 2, 3, 5, 8, 13))
    extract("minilm", tiny, Store(path), device="cpu")
    at = open_app(str(path), monkeypatch, page="pages/scaling.py")
    widget(at.sidebar.selectbox, "Stimulus set").set_value("my-carriers").run()
    assert not at.exception and at.query_params["stimuli"] == "my-carriers"
    assert "vs" not in at.query_params
    assert not [w for w in at.sidebar.warning if "cannot be compared" in shown(w)]
    widget(at.sidebar.selectbox, "Stimulus set").set_value("paper").run()
    assert not at.exception and at.query_params.get("vs", "minilm@random") == "minilm@random"
