"""The Streamlit app under AppTest: every page on an empty store and on a store of imported
vectors (a model and its random control on the paper's stimuli); a failing extraction, the first
run's progress and cancel, pages that meet a model they cannot measure, the sidebar menu. The
same pages on the real first run's store, and the widget changes, are in test_pages_populated.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from magdash.caveats import Caveat, Severity
from magdash.dashboard.jobs import first_run_label
from magdash.extract_params import ExtractParams
from magdash.presentation.chart_style import CONTAINER_AUTOSIZE
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from magdash.variability.analysis import AnalysisResult
from pages import ui
from tests.support import (
    ROOT,
    app_pages,
    assert_clean,
    assert_page_draws_everything,
    assert_tables_are_labelled,
    chart_specs,
    data_pages,
    expected_charts,
    labels,
    open_app,
    shown,
    texts,
    widget,
)

PAGES = app_pages()
DATA_PAGES = data_pages()


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> str:
    """A store of imported vectors: "planted" and "planted@random" on the paper's stimuli, 7
    blocks of d = 16. The planted model's spread grows with magnitude (V ~ n^0.5), the control's
    does not, so every figure has something to draw."""
    path = tmp_path_factory.mktemp("imported") / "store.duckdb"
    store = Store(path)
    rng = np.random.default_rng(7)
    magnitudes = np.asarray(PAPER_MAGNITUDES, dtype=float)
    shape = (len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 8, 16)
    axis = rng.normal(size=16)
    centre = np.log(magnitudes)[:, None, None, None] * axis
    spread = magnitudes[:, None, None, None] ** 0.5 / 10
    store.import_arrays("planted", centre + spread * rng.normal(size=shape), PAPER_MAGNITUDES,
                        carriers=PAPER_CARRIERS, stimuli="paper")
    store.import_arrays("planted@random", rng.normal(size=shape), PAPER_MAGNITUDES,
                        carriers=PAPER_CARRIERS, stimuli="paper")
    return str(path)


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
    assert any("No store at" in shown(info) and "Home" in shown(info) for info in at.sidebar.info)
    assert widget(at.sidebar.text_input, "Store").value == str(tmp_path / "empty.duckdb")
    assert not (tmp_path / "empty.duckdb").exists()  # browsing never creates a store
    Store(tmp_path / "empty.duckdb")  # created empty, as an extraction would
    at = open_app(str(tmp_path / "empty.duckdb"), monkeypatch)
    assert any("no complete extraction" in shown(info) for info in at.sidebar.info)


@pytest.mark.slow
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


def test_another_session_sees_a_jobs_progress_but_no_cancel_button(tmp_path, monkeypatch):
    """A dashboard served to a lab: session B watches A's extraction but cannot cancel it; A
    cancels it, and A (not B) is told how it ended, even though B's page saw it end first."""
    import threading
    import time

    from magdash.dashboard.jobs import Job

    path = str(tmp_path / "s.duckdb")
    alice = open_app(path, monkeypatch, page="pages/extract.py")
    started, release = threading.Event(), threading.Event()

    def work(context):
        context.step("extracting m", 10)
        started.set()
        while not context.should_stop():
            time.sleep(0.01)
        release.wait(60)  # the checkpoint comes after the test has looked at both pages
        return None, True

    job = ui.job_registry().start(path, Job("extract m", work), owner=alice.session_state[ui.session.OWNER_KEY])
    try:
        assert started.wait(60)
        bob = open_app(path, monkeypatch, page="pages/extract.py")
        assert bob.get("progress"), "another session sees the progress"
        assert "Cancel" not in labels(bob.button)
        assert any("Started in another session" in shown(c) for c in bob.caption)
        alice.run()
        assert "Cancel" in labels(alice.button)
        assert not any("Started in another session" in shown(c) for c in alice.caption)
        widget(alice.button, "Cancel").click().run()
        assert job.snapshot().cancelling
        release.set()
        assert job.wait(60).state == "cancelled"
        bob.run()  # B's page sees the job end first: no notice there, and nothing forgotten
        assert not any("cancelled" in shown(w) for w in bob.warning)
        assert ui.job_registry().get(path) is job
        alice.run()
        assert any("extract m: cancelled" in shown(w) for w in alice.warning), [shown(w) for w in alice.warning]
        assert ui.job_registry().get(path) is None  # told once, then forgotten
    finally:
        job.cancel()
        release.set()
        job.wait(60)
        ui.job_registry().forget(path)


def test_the_extract_page_offers_extract_params_defaults(tmp_path, monkeypatch):
    at = open_app(str(tmp_path / "s.duckdb"), monkeypatch, page="pages/extract.py")
    defaults = ExtractParams()
    assert widget(at.selectbox, "dtype").value == defaults.dtype
    assert widget(at.selectbox, "Device").value == defaults.device
    assert widget(at.selectbox, "Token position").value == defaults.position
    assert widget(at.number_input, "Batch size").value == defaults.batch_size


def test_a_failing_extraction_shows_a_message_not_a_traceback(tmp_path, monkeypatch):
    at = open_app(str(tmp_path / "s.duckdb"), monkeypatch, page="pages/extract.py")
    widget(at.radio, "Model from").set_value("folder").run()
    widget(at.text_input, "Local folder").set_value(str(tmp_path / "nowhere")).run()
    assert any("does not exist" in shown(info) for info in at.info)
    assert widget(at.button, "Extract").disabled
    widget(at.text_input, "Local folder").set_value(str(tmp_path)).run()  # a folder, but no model
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
    widget(at.text_input, "Local folder").set_value(str(tiny_llama)).run()
    widget(at.button, "Extract").click().run()
    snapshot = ui.job_registry().get(path).wait(300)
    assert snapshot.state == "done", snapshot.message
    at.run()
    assert any("finished" in shown(success) for success in at.success)
    at.switch_page("pages/scaling.py").run()
    assert not at.exception
    assert len(at.get("vega_lite_chart")) == expected_charts("scaling", token_facts=True)  # extracted: token facts
    assert "tokenization" in " ".join(str(chart.proto.spec) for chart in at.get("vega_lite_chart"))
    # The tiny Llama has a final norm: its post-norm layer is offered as a layer too.
    assert widget(at.select_slider, "Layer").options[-1] == "4 · final norm (post-norm)"


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.slow
def test_every_page_draws_its_figures_on_imported_vectors(page, imported, monkeypatch):
    at = open_app(imported, monkeypatch, page=page)
    assert_page_draws_everything(at, page)
    if Path(page).stem in ("scaling", "weber", "compare"):
        assert "planted" in " ".join(str(chart.proto.spec) for chart in at.get("vega_lite_chart"))


@pytest.mark.slow
def test_the_design_pages_tables_are_labelled_down_to_the_summarys_quantities(imported, monkeypatch):
    at = open_app(imported, monkeypatch, page="pages/design.py")
    widget(at.number_input, "Studies per point").set_value(20)
    widget(at.number_input, "Joint-bootstrap resamples (E6)").set_value(5)
    at.get("form_submit_button")[0].click().run()
    assert_clean(at)
    assert len(at.dataframe) == 4
    assert_tables_are_labelled(at)
    h1, e6 = at.dataframe[0].value, at.dataframe[1].value
    assert "true_alpha" in h1.columns and "true_delta" in e6.columns  # the simulated truth, not a fitted alpha
    quantities = at.dataframe[3].value["quantity"].tolist()
    assert "H1 power at the design's alpha" in quantities and not any("_" in q for q in quantities)


@pytest.mark.slow
def test_home_and_compare_lead_with_the_stimulus_interval_and_say_when_the_wilcoxon_cannot_reach_05(
        imported, monkeypatch):
    """4 core layers: the paper's Wilcoxon test cannot give p < .05 however large the effect, and the
    pages say so beside the interval of the stimulus bootstrap, which leads."""
    for page in ("pages/home.py", "pages/compare.py"):
        shown_text = texts(open_app(imported, monkeypatch, page=page))
        sentence = next(line for line in shown_text.splitlines() if "Wilcoxon" in line)
        assert "mean difference" in sentence and "(stimulus bootstrap," in sentence, page
        assert sentence.index("stimulus bootstrap") < sentence.index("Wilcoxon"), page  # the estimate leads
        assert "with 4 pairs the smallest p this test can give is 0.12, so it cannot reach 0.05" in sentence, page
        assert "share their stimuli" in sentence, page


@pytest.mark.slow
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


# -- artifacts ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_scaling_and_weber_name_a_sink_carrier_and_the_sidebar_leaves_it_out(tmp_path, monkeypatch):
    """Carrier 2's vectors of magnitudes 1-9 are 100x the others' norm at every block (a sink)."""
    path = tmp_path / "sink.duckdb"
    rng = np.random.default_rng(3)
    magnitudes = np.asarray(PAPER_MAGNITUDES, dtype=float)
    arrays = rng.normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 6, 16))
    arrays[..., 0] += 10.0 + np.log(magnitudes)[:, None, None]
    arrays[:9, 2, 1:] *= 100.0
    Store(path).import_arrays("sinky", arrays, PAPER_MAGNITUDES, carriers=PAPER_CARRIERS, stimuli="paper")
    boot = {"boot": "100"}

    def sink_warnings(at) -> list[str]:  # a sink is serious: an error box, in view
        return [shown(w) for w in at.main.error if "norm over 10x" in shown(w)]

    for page in ("pages/scaling.py", "pages/weber.py"):
        at = open_app(path, monkeypatch, query=boot, page=page)
        [line] = sink_warnings(at)
        assert "sinky: carrier 2 ('{n} was the value.')" in line
        assert "45 vector(s) of magnitudes 1-9 at layers 1-5" in line
        assert any("Leave out carriers" in shown(c) for c in at.main.caption)
    at = open_app(path, monkeypatch, query=boot, page="pages/scaling.py")
    widget(at.sidebar.multiselect, "Leave out carriers").select(2).run()
    assert not at.exception and at.query_params["leave"] == "2"
    assert sink_warnings(at) == []  # the analysis shown is now the one without carrier 2
    scatter = at.get("vega_lite_chart")[0].proto.spec
    assert "carrier(s) 2 left out" in scatter and "{n} was the value." not in scatter  # its distances are gone
    at = open_app(path, monkeypatch, query={**boot, "leave": "9"})  # a bookmark's first run: the note
    assert any("carriers 9 cannot be left out of 'paper'" in shown(w) for w in at.sidebar.warning)
    at.switch_page("pages/scaling.py").run()
    assert len(sink_warnings(at)) == 1 and "leave" not in at.query_params


@pytest.mark.slow
def test_the_weber_panel_shows_the_selected_measure_s_caveats_most_severe_first(imported, monkeypatch):
    """Planted caveats: a serious one of V_proj, a caution of V_eucl, a note of every measure. With V_eucl
    selected, V_proj's is not shown anywhere, the caution stands in view and the note is folded."""
    planted = {
        "proj": Caveat(Severity.SERIOUS, "PLANTED-PROJ: a sink enters V_proj", ("proj",), "planted"),
        "eucl": Caveat(Severity.CAUTION, "PLANTED-EUCL: V_eucl rests on carrier 1", ("eucl",), "planted", 1),
        "all": Caveat(Severity.NOTE, "PLANTED-ALL: a note of every measure", (), "planted@random"),
    }
    monkeypatch.setattr(AnalysisResult, "caveats",
                        lambda self: [c for c in planted.values() if c.model == self.model])
    at = open_app(imported, monkeypatch, query={"measure": "eucl", "boot": "100"}, page="pages/weber.py")
    assert "PLANTED-PROJ" not in texts(at)
    assert [shown(w) for w in at.main.warning if "PLANTED" in shown(w)] == [
        "planted: PLANTED-EUCL: V_eucl rests on carrier 1"]
    assert not [e for e in at.main.error if "PLANTED" in shown(e)]
    [fold] = [e for e in at.main.expander if e.label == "1 more note"]
    assert "planted@random: PLANTED-ALL" in "\n".join(shown(m) for m in fold.markdown)
    assert any("Leave out carriers" in shown(c) for c in at.main.caption)  # the caution blames carrier 1
    at = open_app(imported, monkeypatch, query={"measure": "proj", "boot": "100"}, page="pages/weber.py")
    assert [shown(e) for e in at.main.error if "PLANTED" in shown(e)] == ["planted: PLANTED-PROJ: a sink enters V_proj"]
    assert "PLANTED-EUCL" not in texts(at)  # V_eucl's caution is about a measure not shown
    [fold] = [e for e in at.main.expander if e.label == "1 more note"]
    assert "PLANTED-ALL" in "\n".join(shown(m) for m in fold.markdown)
    assert not any("Leave out carriers" in shown(c) for c in at.main.caption)  # no caveat shown blames a carrier


def _model_colours(node) -> dict[str, str]:
    """Model name -> colour of every colour scale over model names in a spec."""
    found: dict[str, str] = {}
    if isinstance(node, dict):
        scale = node.get("scale")
        if node.get("field") == "model" and isinstance(scale, dict) and "range" in scale:
            found.update(zip(scale["domain"], scale["range"], strict=True))
        for value in node.values():
            found.update(_model_colours(value))
    elif isinstance(node, list):
        for value in node:
            found.update(_model_colours(value))
    return found


@pytest.mark.slow
def test_geometry_sets_the_model_beside_its_random_control(imported, monkeypatch):
    """A log-ratio RSA the random-weight control draws too is not learned: the page says both."""
    at = open_app(imported, monkeypatch, page="pages/geometry.py")
    assert not at.exception
    sentence = next(shown(m) for m in at.main.markdown if "with the log-ratio model minus" in shown(m))
    assert "(planted)" in sentence and "(planted@random)" in sentence and "not learned" in sentence
    [rsa] = [spec for spec in chart_specs(at) if "RSA by layer" in json.dumps(spec.get("title"))]
    assert '"strokeDash"' in json.dumps(rsa) and "@random control" in json.dumps(rsa)
    at = open_app(imported, monkeypatch, page="pages/geometry.py", query={"model": "planted@random"})
    assert any("no @random control is stored" in shown(m) for m in at.main.markdown)  # a control has none


@pytest.mark.slow
def test_a_model_has_one_colour_on_every_page_and_charts_fill_the_column(imported, monkeypatch):
    """The control drawn as model A on Compare keeps the colour it has on Weber (its place in the store:
    stored second), where the first model in a chart used to take the first colour; a single chart
    fills the column at the plot's own height (fit-x), as in the PNG."""
    weber = open_app(imported, monkeypatch, page="pages/weber.py")
    compare = open_app(imported, monkeypatch, page="pages/compare.py", query={"model": "planted@random"})
    on_weber = _model_colours(chart_specs(weber))
    on_compare = _model_colours(chart_specs(compare))
    assert set(on_compare) == set(on_weber) == {"planted", "planted@random"}
    assert on_compare == on_weber and on_weber["planted"] != on_weber["planted@random"]
    assert all(spec["autosize"] == CONTAINER_AUTOSIZE for spec in chart_specs(weber))
