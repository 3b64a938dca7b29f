"""The Streamlit app under AppTest on the store the real first run leaves (minilm, smollm2 and
their random controls, extracted and analysed exactly as the Home page's button does): every
page, the controls' verdicts, widget changes that rerun and land in the URL, bookmarks, uploads.

Slow (the first run extracts four models): the fast loop's page tests are test_pages.py."""

from __future__ import annotations

import json

import pytest

from magdash import dashboard
from magdash.dashboard.jobs import run_first_protocol
from magdash.formatting import MISSING
from magdash.store import Store
from tests.support import (
    app_pages,
    assert_page_draws_everything,
    chart_specs,
    copy_store,
    labels,
    open_app,
    shown,
    texts,
    widget,
)

pytestmark = pytest.mark.slow

PAGES = app_pages()


@pytest.fixture(scope="module")
def populated(tmp_path_factory) -> str:
    """The first-run protocol (minilm, smollm2 and their controls), exactly what the Home button runs."""
    path = tmp_path_factory.mktemp("populated") / "store.duckdb"
    store = Store(path)
    assert run_first_protocol(store, dashboard.analysis_params(dashboard.ViewState(store=str(path))))
    return str(path)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_on_the_populated_store(page, populated, monkeypatch):
    assert_page_draws_everything(open_app(populated, monkeypatch, page=page), page, token_facts=True)


def verdict_line(at, control: str) -> str:
    """The Controls page's verdict lines of ``control`` ("- **variant** (ok): ..."), joined."""
    lines = [line for element in at.markdown for line in shown(element).splitlines()
             if line.startswith(f"- **{control}** (")]
    assert lines, f"no verdict of {control}"
    return " ".join(lines)


def test_controls_page_judges_the_builtin_model_against_its_random_control(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/controls.py")
    # The verdicts are lines of text, whole (a table's cells cut their sentences), with their CSV.
    lines = [line for element in at.markdown for line in shown(element).splitlines() if line.startswith("- **")]
    assert [line.split("**")[1] for line in lines] == ["carriers", "icc", "permutation", "variant", "random"]
    assert "minilm@random" in verdict_line(at, "random")
    assert "CSV" in labels(at.get("download_button"))
    # Every chart's legend shows its labels whole.
    assert all(spec["config"]["legend"]["labelLimit"] == 0 for spec in chart_specs(at))
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
    assert len(at.get("vega_lite_chart")) == 3  # the scatter, alpha by layer, alpha adjusted for tokenization


def test_the_scaling_page_colours_the_points_by_token_count_and_shows_the_adjusted_alpha(populated, monkeypatch):
    at = open_app(populated, monkeypatch, page="pages/scaling.py", query={"model": "smollm2"})
    assert "splits every digit" in texts(at) and "adjusted for the token count (strata of 1, 2, 3, 4 tokens)" in texts(at)
    widget(at.toggle, "Colour the points by token count").set_value(True).run()
    assert not at.exception
    point = [layer for layer in chart_specs(at)[0]["layer"] if layer["mark"]["type"] == "point"][0]
    assert point["encoding"]["color"]["field"] == "tokens"
    strata = [frame.value for frame in at.dataframe if "stratum" in frame.value.columns][0]
    assert strata["stratum"].tolist()[:4] == ["1 token", "2 tokens", "3 tokens", "4 tokens"]


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
    # The source's note is a sentence about the source, not a fragment ("estimate, not a count: ...").
    source = widget(bookmarked.selectbox, "Frequency source").value
    assert any(shown(c).startswith(f"{source}: ") and shown(c).endswith(".") for c in bookmarked.caption)


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





def test_a_set_only_the_model_holds_shows_no_comparison_warning(populated, tmp_path, monkeypatch):
    """Switching to a stimulus set the control lacks drops the comparison partner quietly (the
    pages there compare nothing); switching back restores the control."""
    from magdash.extraction import extract
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


def test_every_token_position_and_another_number_format_are_one_click_each_on_controls(populated, tmp_path,
                                                                                        monkeypatch):
    from pages import ui

    path = str(copy_store(populated, tmp_path, "positions.duckdb"))
    at = open_app(path, monkeypatch, page="pages/controls.py")
    assert widget(at.multiselect, "Variants to compare").options == []
    widget(at.button, "Compare token positions (last, first, mean)").click().run()
    snapshot = ui.job_registry().get(path).wait(600)
    assert snapshot.state == "done" and snapshot.n_steps == 2, snapshot.message
    at.run()
    assert not at.exception
    variants = widget(at.multiselect, "Variants to compare")
    assert variants.options == ["minilm:first", "minilm:mean"] and variants.value == ["minilm:first", "minilm:mean"]
    lines = verdict_line(at, "variant")
    assert "minilm:first (token position last vs first)" in lines and "minilm:mean (token position last vs mean)" in lines
    assert widget(at.button, "Compare token positions (last, first, mean)").disabled  # every position stored
    widget(at.multiselect, "Number formats to extract").set_value(["grouped"]).run()
    widget(at.button, "Extract in these formats").click().run()
    assert ui.job_registry().get(path).wait(600).state == "done"
    at.run()
    assert not at.exception
    assert widget(at.multiselect, "Number formats to compare").value == ["grouped"]
    assert "minilm on paper-grouped (number format digits vs grouped)" in verdict_line(at, "variant")
