"""The dashboard's pure helpers: view state, inventory, jobs, stimuli input, figures, report."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from magdash import dashboard, reports
from magdash.dashboard import jobs as jobs
from magdash.dashboard import stimuli_page as ds
from magdash.errors import MagdashError, StimulusError
from magdash.formatting import MISSING
from magdash.frequency.sources import builtin_source
from magdash.params import parse_band
from magdash.presentation import compare_figures, export, report, scaling_figures, weber_figures
from magdash.presentation import frequency_figures as ff
from magdash.presentation import geometry_figures as gf
from magdash.runs.analysis_runs import analyze, compare
from magdash.runs.frequency_runs import e5_from_analysis
from magdash.sources.builtin import BUILTIN_MODELS
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES, StimulusSet, paper_stimuli
from magdash.store import Store
from magdash.variability.measures import PRIMARY_MEASURES
from tests.support import ROOT

PLANTED_ALPHA = (0.5, 0.5, -0.2)  # blocks 1..3; the embedding layer has V = 0 (no fit)


def planted_arrays(alphas=PLANTED_ALPHA, seed=7, dim=16):
    """Vectors whose V_eucl(n) is exactly n**alpha at each block (and 0 at the embeddings).

    Per magnitude, the carriers' deviations from the centroid are random, centred over carriers
    and scaled so their mean norm is n**alpha; the centroid moves along one axis with log n.
    """
    rng = np.random.default_rng(seed)
    magnitudes = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    n_carriers = len(PAPER_CARRIERS)
    layers = [np.repeat((np.log(magnitudes)[:, None] * np.eye(dim)[0])[:, None, :], n_carriers, axis=1)]
    for alpha in alphas:
        noise = rng.normal(size=(magnitudes.size, n_carriers, dim))
        noise -= noise.mean(axis=1, keepdims=True)
        noise /= np.linalg.norm(noise, axis=2).mean(axis=1)[:, None, None]
        centroid = np.log(magnitudes)[:, None] * np.eye(dim)[1] + 3.0
        layers.append(centroid[:, None, :] + noise * (magnitudes ** alpha)[:, None, None])
    return np.stack(layers, axis=2).astype(np.float32), magnitudes


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A store holding two imported models on the paper's stimuli (no model run needed)."""
    store = Store(tmp_path_factory.mktemp("planted") / "planted.duckdb")
    labels = ["embeddings", "block 1", "block 2", "block 3"]
    arrays, magnitudes = planted_arrays()
    store.import_arrays("planted", arrays, magnitudes, carriers=PAPER_CARRIERS, layer_labels=labels)
    flat, _ = planted_arrays(alphas=(0.0, 0.0, 0.0), seed=8)
    store.import_arrays("flat@random", flat, magnitudes, carriers=PAPER_CARRIERS, layer_labels=labels)
    return store


@pytest.fixture(scope="module")
def planted_view(planted):
    inventory = dashboard.read_inventory(planted)
    view, _ = dashboard.reconcile_view(dashboard.ViewState(store=str(planted.path), n_boot=200), inventory)
    return view, inventory


# -- pages and view state ------------------------------------------------------------------


def test_every_page_file_exists_and_groups_follow_the_navigation_order():
    groups = dashboard.page_groups(root=ROOT)
    assert list(groups) == [g for g in ("Data", "Noise", "Geometry", "Depth", "Behaviour", "Robustness") if g in groups]
    assert [p.title for p in groups["Data"]] == ["Home", "Extract", "Stimuli"]
    assert {p.url_path for p in dashboard.PAGES} == {Path(p.file).stem for p in dashboard.PAGES}
    shown = {p.file for pages in groups.values() for p in pages}
    assert shown == {p.file for p in dashboard.PAGES if (ROOT / p.file).is_file()}


def test_view_round_trips_through_the_query_string():
    view = dashboard.ViewState(store="/data/s.duckdb", model="llama", stimuli="paper", measure="proj",
                        core=(2, 5), layer=4, other="llama@random", n_boot=500, conventions="paper")
    query = dashboard.view_to_query(view, store="/default.duckdb")
    assert query == {"store": "/data/s.duckdb", "model": "llama", "stimuli": "paper", "measure": "proj",
                     "core": "2-5", "layer": "4", "vs": "llama@random", "boot": "500", "conv": "paper"}
    back, notes = dashboard.view_from_query(query, store="/default.duckdb")
    assert back == view and notes == []


def test_defaults_stay_out_of_the_query_string():
    assert dashboard.view_to_query(dashboard.ViewState(store="/default.duckdb"), store="/default.duckdb") == {}


@pytest.mark.parametrize(("boot", "n_boot", "said"), [
    ("100001", 100_000, "'100001' in the link is above what the sidebar allows (0 to 100,000); using 100,000"),
    ("-1", 0, "'-1' in the link is below what the sidebar allows (0 to 100,000); using 0"),
    ("9" * 5000, 10_000, "is not a whole number; using 10,000"),  # past Python's 4,300-digit guard
    ("1e5", 10_000, "'1e5' in the link is not a whole number; using 10,000"),
    ("100000", 100_000, None),
    ("0", 0, None),
])
def test_a_links_bootstrap_size_is_clamped_to_the_sidebars_bounds_with_a_note(boot, n_boot, said):
    """/scaling?boot=100001 once reached the widget and showed StreamlitValueAboveMaxError."""
    assert (dashboard.N_BOOT_RANGE.low, dashboard.N_BOOT_RANGE.high) == (0, 100_000)
    view, notes = dashboard.view_from_query({"boot": boot}, store="/s.duckdb")
    assert view.n_boot == n_boot
    assert dashboard.N_BOOT_RANGE.low <= view.n_boot <= dashboard.N_BOOT_RANGE.high
    if said is None:
        assert notes == []
    else:
        assert len(notes) == 1 and said in notes[0] and notes[0].startswith("bootstrap size")
        assert len(notes[0]) < 250  # a 5,000-digit value is not repeated whole


def test_a_note_repeats_at_most_the_start_of_a_long_link_value():
    long = "x" * 100_000
    _, notes = dashboard.view_from_query(dict.fromkeys(("measure", "core", "layer", "boot", "conv", "leave"), long), store="/s")
    assert len(notes) == 6
    assert all(len(note) < 300 and "xxx..." in note for note in notes), [len(note) for note in notes]


def test_bad_link_values_fall_back_to_defaults_with_a_message():
    view, notes = dashboard.view_from_query(
        {"measure": "bogus", "core": "5-2", "layer": "-1", "boot": "many", "conv": "nature"}, store="/s.duckdb"
    )
    assert (view.measure, view.core, view.layer, view.n_boot, view.conventions) == ("eucl", None, None, 10_000, "magdash")
    assert len(notes) == 5
    assert any("'nature'" in note and "magdash, paper" in note for note in notes)
    assert any("bogus" in note and "eucl" in note for note in notes)
    assert "core band '5-2' in the link runs backwards (write 2-5); using the default band" in notes
    _, notes = dashboard.view_from_query({"core": "a-b"}, store="/s.duckdb")
    assert notes == ["core band 'a-b' in the link is not FIRST-LAST; using the default band"]


def test_query_lists_take_the_last_value():
    view, _ = dashboard.view_from_query({"model": ["a", "b"], "layer": ["1", "3"]}, store="/s")
    assert (view.model, view.layer) == ("b", 3)


@pytest.mark.parametrize(("text", "band"), [("3-5", (3, 5)), ("4", (4, 4)), (" 0 - 2 ", (0, 2))])
def test_parse_band(text, band):
    assert parse_band(text) == band


@pytest.mark.parametrize("text", ["5-3", "a-b", "1-2-3", "-1", "2,4"])
def test_parse_band_refuses(text):
    with pytest.raises(MagdashError):
        parse_band(text)


def test_layer_options_parse_back():
    record = _record_like(n_blocks=3)
    options = dashboard.layer_options(record)
    assert options[0] == "0 · embeddings"
    assert [dashboard.layer_from_option(o) for o in options] == list(range(len(options)))


def _record_like(n_blocks):
    from magdash.store import ModelRecord

    labels = ("embeddings",) + tuple(f"block {i}" for i in range(1, n_blocks + 1))
    return ModelRecord("m", "id", "test", "fp", "float32", "5", "Test", n_blocks, 8, labels)


def test_default_layer_is_the_middle_of_the_core_band():
    record = _record_like(n_blocks=32)
    view = dashboard.ViewState(store="s")
    assert dashboard.core_band(view, record) == (16, 31)
    assert dashboard.default_layer(view, record) == 23
    assert dashboard.default_layer(dataclasses.replace(view, layer=5), record) == 5
    assert dashboard.default_layer(dataclasses.replace(view, core=(2, 4)), record) == 3


def test_analysis_params_follow_the_view():
    view = dashboard.ViewState(store="s", measure="trace", core=(1, 2), n_boot=123)
    params = dashboard.analysis_params(view)
    assert params.measures == (*PRIMARY_MEASURES, "trace")
    assert params.core_layers == (1, 2)
    assert params.n_boot == 123 and params.bootstrap_layers == "core"  # one default: the CLI's
    assert dashboard.analysis_params(dashboard.ViewState(store="s")).measures == PRIMARY_MEASURES


# -- inventory and reconciliation ------------------------------------------------------------


def test_inventory_lists_models_sets_and_controls(planted_view):
    view, inventory = planted_view
    assert inventory.usable_models == ["planted", "flat@random"]  # trained models first
    assert inventory.complete_sets["planted"] == ["paper"]
    table = dashboard.inventory_table(inventory)
    assert set(table["model"]) == {"planted", "flat@random"}
    assert table.set_index("model")["weights"].to_dict() == {"planted": "trained", "flat@random": "random (control)"}
    assert "unfinished" not in table  # only when an extraction is unfinished: the table fits the page
    assert view.model == "planted" and view.stimuli == "paper"


def test_data_token_survives_cache_writes_but_not_new_vectors(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    arrays, magnitudes = planted_arrays()
    store.import_arrays("m", arrays, magnitudes, carriers=PAPER_CARRIERS)
    before, stamp = dashboard.read_inventory(store).data_token("m", "paper"), dashboard.store_stamp(store.path)
    store.put_result("anything", "test", b"payload")
    assert dashboard.store_stamp(store.path) != stamp  # the inventory is re-read ...
    assert dashboard.read_inventory(store).data_token("m", "paper") == before  # ... analyses stay cached
    other = StimulusSet("more", PAPER_CARRIERS, (11, 12, 13))  # sentences not stored yet
    store.register_stimulus_set(other)
    model_id = store.model_record("m").model_id
    store.write_vectors(model_id, [other.items[0].key], arrays[:1, 0])
    inventory = dashboard.read_inventory(store)
    assert inventory.data_token("m", "more") != inventory.data_token("m", "paper")
    assert inventory.incomplete[["name", "set_name", "done", "total"]].values.tolist() == [["m", "more", 1, 15]]
    assert inventory.complete_sets["m"] == ["paper"]


def test_reconcile_repairs_a_stale_view(planted_view):
    _, inventory = planted_view
    stale = dashboard.ViewState(store="s", model="gone", stimuli="nope", core=(1, 9), layer=12, other="gone too")
    view, notes = dashboard.reconcile_view(stale, inventory)
    assert (view.model, view.stimuli, view.core, view.layer) == ("planted", "paper", None, None)
    assert view.other == "flat@random"
    assert len(notes) == 5 and any("'gone'" in n for n in notes)


def test_reconcile_drops_a_core_band_equal_to_the_default(planted_view):
    _, inventory = planted_view
    view, notes = dashboard.reconcile_view(dashboard.ViewState(store="s", core=(1, 2)), inventory)
    assert view.core is None and notes == []
    view, _ = dashboard.reconcile_view(dashboard.ViewState(store="s", core=(2, 3)), inventory)
    assert view.core == (2, 3)


def test_suffixed_models_default_to_their_own_control(tmp_path):
    # Home and Compare compare a model with its @random control; for a float16 or first-token
    # extraction that control is stored as minilm@random:float16:first, not minilm:float16:first@random.
    store = Store(tmp_path / "suffixed.duckdb")
    arrays, magnitudes = planted_arrays()
    for name in ("aaa", "minilm:float16:first", "minilm@random:float16:first", "minilm@random"):
        store.import_arrays(name, arrays, magnitudes, carriers=PAPER_CARRIERS)
    inventory = dashboard.read_inventory(store)
    view, _ = dashboard.reconcile_view(dashboard.ViewState(store=str(store.path), model="minilm:float16:first"), inventory)
    assert view.other == "minilm@random:float16:first"
    keys = dashboard.depth_keys(view, inventory)
    assert keys[dashboard.CONTROL_SERIES].model == "minilm@random:float16:first"


def test_reconcile_on_an_empty_store(tmp_path):
    inventory = dashboard.read_inventory(Store(tmp_path / "empty.duckdb"))
    assert inventory.is_empty and inventory.usable_models == []
    view, notes = dashboard.reconcile_view(dashboard.ViewState(store="s", model="x", layer=3), inventory)
    assert view.model is None and view.layer is None and notes == []


# -- jobs ----------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_eta_uses_the_rate_since_the_first_report():
    clock = FakeClock()
    eta = jobs.EtaClock(clock)
    assert eta.update(30, 130) is None  # what was already stored: the baseline
    clock.now += 10.0
    assert eta.update(50, 130) == pytest.approx(40.0)  # 20 items in 10 s, 80 to go
    clock.now += 10.0
    assert eta.update(90, 130) == pytest.approx(13.333, rel=1e-3)


def _run(job):
    snapshot = job.start().wait(timeout=300)
    assert snapshot.finished
    return snapshot


def test_a_job_reports_steps_progress_and_its_result():
    seen = threading.Event()

    def work(context):
        context.step("first", 4)
        for done in range(5):
            context.progress(done, 4)
        context.step("second", 0)
        seen.set()
        return "result", False

    snapshot = _run(jobs.Job("demo", work, n_steps=2))
    assert seen.is_set()
    assert (snapshot.state, snapshot.result, snapshot.step, snapshot.step_index) == ("done", "result", "second", 1)
    assert snapshot.fraction == 1.0


def test_an_extraction_says_loading_until_the_first_batch_is_extracted(monkeypatch):
    import magdash.sources as sources

    steps = []
    monkeypatch.setattr(sources, "loading_words",
                        lambda source, dtype: f"converting {source.spec}'s GGUF file to {dtype} (first time only)")

    def work(context):
        progress = jobs.begin_extraction(context, "minilm", paper_stimuli(), "float32")
        steps.append(job.snapshot().step)
        progress(0, 130)  # what was already stored, reported before the model loads
        steps.append(job.snapshot().step)
        progress(32, 130)  # the first batch
        steps.append(job.snapshot().step)
        return None, False

    job = jobs.Job("demo", work)
    snapshot = _run(job)
    loading = "converting minilm's GGUF file to float32 (first time only), then extracting minilm on paper"
    assert steps == [loading, loading, "extracting minilm on paper"]
    assert (snapshot.step_index, snapshot.done) == (0, 32)  # one step, renamed


def test_progress_text_counts_steps_items_and_time():
    snapshot = jobs.JobSnapshot("x", "running", "extracting minilm", 0, 3, 40, 130, 3.2, 7.4, "")
    assert snapshot.progress_text() == (
        "step 1/3 · extracting minilm: 40/130 · 3 s elapsed · about 7 s left in this step")
    assert snapshot.fraction == pytest.approx((0 + 40 / 130) / 3)
    alone = dataclasses.replace(snapshot, n_steps=1)
    assert alone.progress_text().endswith("3 s elapsed · about 7 s left")


@pytest.mark.parametrize(("step_index", "n_steps", "done", "eta", "says"), [
    (0, 3, 130, 0.0, "finishing this step…"),  # the last batch stored, its writes and two steps to come
    (2, 3, 130, 0.0, "finishing…"),
    (0, 1, 120, 0.2, "finishing…"),  # an estimate under half a second is not "about 0 s left"
    (0, 1, 130, None, "finishing…"),
])
def test_progress_text_never_claims_0_s_left_while_work_remains(step_index, n_steps, done, eta, says):
    snapshot = jobs.JobSnapshot("x", "running", "extracting minilm", step_index, n_steps, done, 130, 9.0, eta, "")
    text = snapshot.progress_text()
    assert text.endswith(says) and "0 s left" not in text
    assert "finishing" not in dataclasses.replace(snapshot, state="done").progress_text()


def test_a_page_is_drawn_again_when_a_step_of_its_job_finishes():
    first = jobs.JobSnapshot("x", "running", "extracting minilm", 0, 10, 40, 130, 3.0, 7.0, "")
    assert not dataclasses.replace(first, done=90).moved_on_from(first)
    assert dataclasses.replace(first, step_index=1, done=0).moved_on_from(first)  # minilm is stored
    assert dataclasses.replace(first, state="done").moved_on_from(first)
    assert jobs.is_first_run(jobs.first_run_job(None, None).snapshot()) and not jobs.is_first_run(first)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (MagdashError("no model 'x': give 'minilm'"), "no model 'x': give 'minilm'"),
        (MemoryError(), "out of memory: choose a smaller dtype"),
        (RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"), "out of memory: choose a smaller dtype"),
        (MagdashError("out of memory during the forward pass"), "out of memory during the forward pass — choose"),
        (ValueError("boom"), "unexpected error (ValueError: boom)"),
    ],
)
def test_job_errors_become_messages(error, expected):
    def work(context):
        raise error

    snapshot = _run(jobs.Job("failing", work))
    assert snapshot.state == "failed"
    assert snapshot.message.startswith(expected)
    assert "Traceback" not in snapshot.message


def test_cancel_stops_a_job_at_its_next_checkpoint():
    started = threading.Event()

    def work(context):
        started.set()
        while not context.should_stop():
            time.sleep(0.01)
        return None, True

    job = jobs.Job("slow", work).start()
    assert started.wait(300)
    job.cancel()
    snapshot = job.wait(300)
    assert snapshot.state == "cancelled" and "resume" in snapshot.message


def test_registry_allows_one_running_job_per_store():
    registry = jobs.JobRegistry()
    release = threading.Event()

    def work(context):
        release.wait(300)
        return None, False

    first = registry.start("store", jobs.Job("first", work), owner="a")
    with pytest.raises(MagdashError, match="still running"):
        registry.start("store", jobs.Job("second", work), owner="a")
    registry.forget("store")
    assert registry.get("store") is first  # a running job is never forgotten
    release.set()
    first.wait(300)
    registry.forget("store")
    assert registry.get("store") is None


def _waiting_job(registry: jobs.JobRegistry, owner: str, key: str = "store") -> jobs.Job:
    """A job on ``key`` started by ``owner`` that runs until cancelled."""
    started = threading.Event()

    def work(context):
        started.set()
        while not context.should_stop():
            time.sleep(0.01)
        return None, True

    job = registry.start(key, jobs.Job("extract m", work), owner=owner)
    assert started.wait(300)
    return job


def test_only_the_session_that_started_a_job_may_cancel_it():
    registry, alice, bob = jobs.JobRegistry(), jobs.new_owner(), jobs.new_owner()
    assert alice != bob and len(alice) >= 20  # unguessable tokens, one per session
    job = _waiting_job(registry, alice)
    assert registry.is_owner("store", alice) and not registry.is_owner("store", bob)
    with pytest.raises(MagdashError, match="started in another session: only that session can cancel it"):
        registry.cancel("store", bob)
    with pytest.raises(MagdashError, match="another session, which alone can cancel it"):
        registry.start("store", jobs.Job("bob's", lambda context: (None, False)), owner=bob)
    time.sleep(0.05)
    assert job.snapshot().state == "running" and not job.snapshot().cancelling  # bob changed nothing
    registry.cancel("store", alice)
    assert job.wait(300).state == "cancelled"
    with pytest.raises(MagdashError, match="no job runs"):
        registry.cancel("elsewhere", alice)


@pytest.mark.parametrize("ending", ["done", "failed", "cancelled"])
def test_the_owner_is_told_how_a_job_ended_whoever_saw_it_end_first(ending):
    """Another session that sees the job end cannot forget it: the finished job stays until
    the session that started it has been told (acknowledge), for every way a job ends."""
    registry, alice, bob = jobs.JobRegistry(), jobs.new_owner(), jobs.new_owner()

    def work(context):
        if ending == "failed":
            raise MagdashError("the model folder has no config.json")
        return None, ending == "cancelled"

    job = registry.start("store", jobs.Job("extract m", work), owner=alice)
    assert job.wait(300).state == ending
    assert not registry.acknowledge("store", bob)  # bob's page saw it end: nothing forgotten
    assert registry.get("store") is job and registry.is_owner("store", alice)
    assert registry.acknowledge("store", alice)
    assert registry.get("store") is None


def test_the_owner_is_told_even_after_another_session_started_a_job_on_the_same_store():
    registry, alice, bob = jobs.JobRegistry(), jobs.new_owner(), jobs.new_owner()
    first = registry.start("store", jobs.Job("alice's", lambda context: (None, False)), owner=alice)
    first.wait(300)
    second = _waiting_job(registry, bob)  # allowed: alice's job has finished
    assert registry.ending("store", alice) is first and registry.ending("store", bob) is None
    assert registry.acknowledge("store", alice)
    assert registry.ending("store", alice) is None
    assert registry.get("store") is second  # bob's running job stays
    registry.cancel("store", bob)
    second.wait(300)


def test_a_running_job_is_never_acknowledged_away():
    registry, alice = jobs.JobRegistry(), jobs.new_owner()
    job = _waiting_job(registry, alice)
    assert not registry.acknowledge("store", alice)
    assert registry.get("store") is job
    registry.cancel("store", alice)
    job.wait(300)


def test_first_run_pairs_each_model_with_its_control():
    pairs = jobs.first_run_pairs()
    assert pairs[0] == ("minilm", "minilm@random")
    assert all(control == f"{model}@random" for model, control in pairs)
    assert jobs.first_run_steps() == 5 * len(pairs)
    assert jobs.first_run_models() == tuple(name for pair in pairs for name in pair)


@pytest.mark.slow
def test_extraction_job_runs_cancels_and_resumes(tiny_llama, tmp_path):
    store = Store(tmp_path / "s.duckdb")
    stimuli = StimulusSet("small", ("There are {n} items.", "{n} was the value."), (1, 7, 42, 347, 1000))
    request = jobs.ExtractionRequest(spec=str(tiny_llama), stimuli=stimuli, name="tiny", batch_size=2)
    job = jobs.extraction_job(store, request)
    job.cancel()  # before the first batch: nothing extracted, a resumable model registered
    cancelled = _run(job)
    assert cancelled.state == "cancelled"
    assert "small" not in dashboard.read_inventory(store).complete_sets.get("tiny", [])
    done = _run(jobs.extraction_job(store, request))
    assert done.state == "done" and done.result.extracted == 10
    assert (done.done, done.total) == (10, 10)
    assert dashboard.read_inventory(store).complete_sets["tiny"] == ["small"]


def test_extraction_job_reports_a_missing_model(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    request = jobs.ExtractionRequest(spec="no/such-model", stimuli=StimulusSet("s", ("{n}.",), (1, 2)))
    snapshot = _run(jobs.extraction_job(store, request))
    assert snapshot.state == "failed" and "no model 'no/such-model'" in snapshot.message


# -- stimuli input -------------------------------------------------------------------------------


def test_typed_carriers_with_every_kind_of_problem():
    text = "The number {n} is here.\nNo placeholder.\n\n{n} and {n}.\nThe number {n} is here.\n" + "x {n}" * 200 + "\n\n"
    result = ds.carriers_from_text(text)
    assert not result.ok
    joined = " | ".join(result.problems)
    assert "line 2 has no {n}" in joined
    assert "line 3 is empty" in joined
    assert "line 4 has 2 {n} placeholders" in joined
    assert "line 5 repeats line 1" in joined
    assert re.search(r"line 6 is \d+ characters long", joined)
    assert len(result.carriers) == 6  # trailing blank lines are not carriers


def test_a_clean_text_upload_passes():
    result = ds.read_carrier_upload("c.txt", "\ufeffA {n} b.\r\nC {n} d.\r\n".encode())
    assert result.ok and result.carriers == ["A {n} b.", "C {n} d."]


def test_uploads_that_are_not_utf8_text_say_so():
    latin = ds.read_carrier_upload("c.txt", "Caf\xe9 {n}.\nThe {n}.".encode("latin-1"))
    assert not latin.ok and "not UTF-8 (first bad byte on line 1)" in latin.problems[0]
    binary = ds.read_carrier_upload("c.txt", b"\x00\x01{n}")
    assert "looks binary" in binary.problems[0]


def test_csv_uploads_use_the_carrier_column_and_count_rows_with_the_header():
    data = b"id,carrier\n1,There are {n} items.\n2,No number here.\n3,There are {n} items.\n"
    result = ds.read_carrier_upload("c.csv", data)
    assert result.carriers == ["There are {n} items.", "No number here.", "There are {n} items."]
    assert result.problems == [
        "row 3 has no {n} placeholder: write {n} where the number goes",
        "row 4 repeats row 2: remove the duplicate",
    ]


def test_csv_without_a_header_takes_the_first_column():
    result = ds.read_carrier_upload("c.csv", b'"A {n}, b.",x\nC {n} d.,y\n')
    assert result.ok and result.carriers == ["A {n}, b.", "C {n} d."]


def test_magnitude_editor_modes():
    assert ds.magnitudes_from_editor("paper") == list(PAPER_MAGNITUDES)
    assert ds.magnitudes_from_editor("list", text="1-3, 10, 2") == [1, 2, 3, 10]
    assert ds.magnitudes_from_editor("range", first=10, last=50, step=20) == [10, 30, 50]
    with pytest.raises(StimulusError, match="backwards"):
        ds.magnitudes_from_editor("range", first=9, last=1)
    with pytest.raises(StimulusError, match="cannot read"):
        ds.magnitudes_from_editor("list", text="1-3, ten")


def test_saving_under_a_taken_name_with_other_content_is_refused(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    store.register_stimulus_set(StimulusSet("mine", ("A {n}.",), (1, 2)))
    assert ds.build_stimulus_set("mine", ["A {n}."], [1, 2], store).name == "mine"  # same content: fine
    with pytest.raises(StimulusError, match="already stored"):
        ds.build_stimulus_set("mine", ["B {n}."], [1, 2], store)
    # the same sentences under a second name: one content is one set
    with pytest.raises(StimulusError, match="already stored as the set 'mine'"):
        ds.build_stimulus_set("yours", ["A {n}."], [2, 1], store)
    assert store.stimulus_set_names() == ["mine"]


def test_a_set_saved_in_another_number_format_is_a_set_of_its_own(tmp_path, tiny_llama):
    from magdash.sources import load_model

    store = Store(tmp_path / "s.duckdb")
    store.register_stimulus_set(StimulusSet("mine", ("A {n}.",), (7, 1000)))
    grouped = ds.build_stimulus_set("mine-grouped", ["A {n}."], [7, 1000], store, "grouped")
    store.register_stimulus_set(grouped)
    assert store.number_formats() == {"mine": "digits", "mine-grouped": "grouped"}
    with pytest.raises(StimulusError, match="already stored as the set 'mine-grouped'"):
        ds.build_stimulus_set("again", ["A {n}."], [7, 1000], store, "grouped")
    assert ds.format_label("grouped") == "grouped (7, 23, 1,000)"
    assert ds.format_label("words") == "words (seven, twenty-three, one thousand)"
    # the preview writes the numbers in the chosen format, and the span covers all of "1,000"
    preview = ds.tokenization_preview(load_model(str(tiny_llama), device="cpu"),
                                      list(ds.preview_set(["There are {n} items."], [1000], "grouped").items))
    assert (preview["number_tokens"].item(), preview["kept"].item()) == ("1 + , + 000", "000")


def test_preview_items_spread_over_the_magnitudes():
    stimuli = StimulusSet("big", ("A {n}.", "B {n}."), tuple(range(1, 1001)))
    items = ds.preview_items(stimuli, limit=20)
    magnitudes = sorted({item.magnitude for item in items})
    assert magnitudes[0] == 1 and magnitudes[-1] == 1000 and len(items) == 20
    assert ds.preview_note(stimuli, items) == (
        "Showing 10 of the 1000 numbers, spread over the range: " + ", ".join(map(str, magnitudes)))
    small = StimulusSet("small", ("A {n}.",), (1, 2, 3))
    assert ds.preview_note(small, ds.preview_items(small)) is None


def test_the_preview_says_which_input_to_fix():
    assert ds.what_to_fix(False, True) == "Fix the carriers above to preview their tokens."
    assert ds.what_to_fix(True, False) == "Fix the magnitudes above to preview their tokens."
    assert ds.what_to_fix(False, False) == "Fix the carriers and magnitudes above to preview their tokens."
    assert ds.what_to_fix(True, True) is None


def test_tokenization_preview_shows_split_numbers(tiny_llama):
    from magdash.sources import load_model

    loaded = load_model(str(tiny_llama), device="cpu")
    stimuli = StimulusSet("p", ("There are {n} items.",), (7, 1000))
    last = ds.tokenization_preview(loaded, list(stimuli.items), "last")
    row = last[last["magnitude"] == 1000].iloc[0]
    assert (row["number_tokens"], row["n_number_tokens"], row["kept"]) == ("100 + 0", 2, "0")
    first = ds.tokenization_preview(loaded, list(stimuli.items), "first")
    assert first.loc[first["magnitude"] == 1000, "kept"].item() == "100"
    assert "1 of 2 numbers shown span several tokens (e.g. 1000 → 100 + 0)" in ds.split_summary(last)


def test_the_tokenization_preview_shows_the_bos_magdash_prepends(tmp_path):
    from magdash.sources import load_model
    from tests.support import build_tiny_model

    loaded = load_model(str(build_tiny_model(tmp_path / "no-bos-added", "llama", start="bos-not-added")), device="cpu")
    stimuli = StimulusSet("p", ("{n} was the value.", "There are {n} items."), (7,))
    preview = ds.tokenization_preview(loaded, list(stimuli.items), "last")
    bos = loaded.tokenizer.convert_ids_to_tokens(1)
    assert all(tokens.split(" | ")[0] == bos for tokens in preview["tokens"])  # the BOS the model sees
    assert preview["carrier"].tolist() == [0, 1] and not preview["first_position"].any()
    bare = ds.tokenization_preview(loaded.tokenizer, list(stimuli.items), "last")  # the tokenizer's own start
    assert bare.loc[bare["carrier"] == 0, "first_position"].item()
    assert "magdash puts the model's BOS" in ds.sequence_start_note(loaded.sequence_start, loaded.tokenizer)


def test_tokenizer_specs_list_builtins_stored_sources_and_the_cache(planted_view):
    _, inventory = planted_view
    specs = ds.tokenizer_specs(inventory.records.values(), ["org/a", "minilm"])
    assert specs == [*BUILTIN_MODELS, "org/a"]  # imported models have no tokenizer to preview


# -- figures and tables from planted data -------------------------------------------------------


def _results(store, view, inventory):
    keys = {name: dashboard.analysis_key(view, inventory, name) for name in inventory.usable_models}
    return {name: analyze(store, key.model, key.stimuli, key.params) for name, key in keys.items()}


def test_planted_alpha_reaches_the_scaling_figure(planted, planted_view):
    view, inventory = planted_view
    key = dashboard.analysis_key(view, inventory)
    result = analyze(planted, key.model, key.stimuli, key.params)
    for layer, alpha in enumerate(PLANTED_ALPHA, start=1):
        assert result.fit("eucl", layer).alpha == pytest.approx(alpha, abs=1e-6)
    spec = scaling_figures.scaling_figure(result, "eucl", 1).to_dict()
    assert "alpha = 0.500" in json.dumps(spec)
    empty = json.dumps(scaling_figures.scaling_figure(result, "eucl", 0).to_dict(), ensure_ascii=False)
    assert f"alpha = {MISSING}" in empty  # V = 0 at the embeddings: never shown as a number
    summary = scaling_figures.fit_summary(result, "eucl")  # the stimulus bootstrap's interval leads
    assert summary.startswith("Mean alpha of V_eucl over the 2 core layers: 0.5000, 95% CI [0.4")
    assert "(stimulus bootstrap," in summary and summary.endswith("(2/2 layers with alpha > 0).")
    table = scaling_figures.fit_table(result, "eucl")
    assert np.isnan(table.loc[table["layer"] == 0, "alpha"].item())


@pytest.mark.slow
def test_every_figure_builds_and_one_exports(planted, planted_view):
    view, inventory = planted_view
    results = _results(planted, view, inventory)
    result = results["planted"]
    layer = planted.read_layer("planted", "paper", 2).vectors
    key = dashboard.comparison_key(view, inventory)
    from magdash.runs.analysis_runs import compare

    comparison = compare(planted, key.model_a, key.model_b, key.stimuli, key.params)
    source = builtin_source("openwebtext-500k")
    e5 = ff.e5_table(result, e5_from_analysis(planted, result, source, "eucl"))
    built = [
        scaling_figures.scaling_figure(result, "residual", 2, layer), scaling_figures.profile_figure(result, "trace"),
        weber_figures.weber_figure(results, "eucl"), weber_figures.cv_figure(result), weber_figures.noise_figure(result, "eucl"),
        weber_figures.e3_figure(result), weber_figures.e4_figure(result), compare_figures.compare_figure(comparison, "eucl"),
        gf.rdm_figure(result, layer, 2, "cosine"), gf.rsa_figure(result, "euclidean"), gf.pc1_figure(result, layer, 2),
        ff.frequency_rho_figure(e5), ff.frequency_counts_figure(source),
        ff.frequency_scatter_figure(ff.frequency_scatter_frame(result, source, "eucl", 2), e5, 2, "block 2"),
    ]
    specs = [chart.to_dict() for chart in built]
    assert all("$schema" in spec for spec in specs)
    png = export.chart_to_png(specs[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert export.chart_to_svg(specs[0]).lstrip().startswith("<svg")


def test_comparison_against_a_flat_control(planted, planted_view):
    view, inventory = planted_view
    from magdash.runs.analysis_runs import compare

    key = dashboard.comparison_key(view, inventory)
    assert (key.model_a, key.model_b) == ("planted", "flat@random")
    comparison = compare(planted, key.model_a, key.model_b, key.stimuli, key.params)
    table = compare_figures.comparison_table(comparison, "eucl")
    core = table[table["core"]]
    assert core["delta"].to_numpy() == pytest.approx([0.5, 0.5], abs=1e-6)
    assert "mean difference 0.5000" in compare_figures.comparison_sentence(comparison, "eucl")


def test_verdict_table_reads_as_words(planted, planted_view):
    view, inventory = planted_view
    table = weber_figures.verdict_table(_results(planted, view, inventory), "eucl")
    assert table.loc[table["model"] == "planted", "H1"].item() == "supported"  # alpha = 0.5 > 0
    assert table.loc[table["model"] == "planted", "H2"].item() == "not supported"
    assert table["model"].iloc[-1].startswith("programme")
    # The estimate at the unit of replication leads; the verdicts over layers follow it.
    assert list(table.columns[:7]) == ["model", "role", "mean_alpha", "mean_alpha_ci_low", "mean_alpha_ci_high",
                                       "mean_alpha_p", "H1"]


def test_e5_covers_every_layer_and_missing_counts_are_explained(planted, planted_view):
    view, inventory = planted_view
    key = dashboard.analysis_key(view, inventory)
    result = analyze(planted, key.model, key.stimuli, key.params)
    source = builtin_source("openwebtext-500k")
    table = ff.e5_table(result, e5_from_analysis(planted, result, source, "eucl"))
    assert list(table["layer"]) == [0, 1, 2, 3]
    assert list(table["core"]) == [False, True, True, False] and set(table["model"]) == {"planted"}
    assert np.isnan(table.loc[0, "raw_rho"])  # V = 0 at the embeddings
    # V_eucl = n**0.5 is monotone in n; counts mostly fall with n: the raw rho is strongly negative,
    # and once log n is controlled nothing is left (V orders the magnitudes as n does).
    assert table.loc[1, "raw_rho"] < -0.5
    assert np.isnan(table.loc[1, "partial_rho"])
    own, paper = ff.e5_sentence(table, source), ff.e5_sentence(table, source, "paper")
    assert own.startswith("No core layer has a partial Spearman rho given log n")
    # negative correlations are significant for magdash, not in the paper's convention
    assert "Raw Spearman rho (the paper's E5" in own and "2 of 2 layers significant (p < .05)" in own
    assert "0 of 2 layers significant (rho > 0 and p < .05)" in paper
    small = dataclasses.replace(source, counts=source.counts[source.counts["number"] <= 100])
    with pytest.raises(MagdashError, match="1000|missing|150"):
        e5_from_analysis(planted, result, small, "eucl")
    zero = ff.frequency_scatter_frame(result, small, "eucl", 1, "zero")
    assert zero.loc[zero["magnitude"] == 1000, "count"].item() == 0


@pytest.mark.slow  # renders every figure to an image; the fast loop draws the same figures through the pages
def test_the_report_holds_figures_verdicts_and_the_manifest(planted, planted_view):
    view, inventory = planted_view
    keys = {n: dashboard.analysis_key(view, inventory, n) for n in inventory.usable_models}
    comparison = dashboard.comparison_key(view, inventory)
    document = reports.analysis_report(
        planted, list(keys), view.stimuli, {n: key.params for n, key in keys.items()},
        comparisons=[compare(planted, comparison.model_a, comparison.model_b, comparison.stimuli, comparison.params)],
        view={"model": "planted"}, focus="planted", layer=2, depth=dashboard.depth_params(view),
        source=reports.REPORT_SOURCE)
    manifest = report.extract_manifest(document)
    assert [m["name"] for m in manifest["models"]] == ["planted", "flat@random"]
    assert manifest["dashboard_view"] == {"model": "planted"}
    assert "H1-H4" in document
    # Every page's figures: Scaling, Weber, Frequency (E5), Compare, Geometry, Depth.
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", document)
    where = "layer 2 (block 2) of planted"
    for caption in (
        "Alpha by layer, planted", "CV against n, planted", "Akaike weights by layer, planted", "E3, planted",
        "E4, planted", "RSA by layer, planted", "planted vs flat@random",
        *(f"{m} against n, {where}" for m in ("V_eucl", "V_residual", "V_proj")),
        f"Centroid RDM, {where}", f"PC1 against log n, {where}",
        "Partial and raw Spearman rho by layer, planted", f"V against corpus count, {where}",
        "Distribution of the counts (openwebtext-500k)",
        "Order parameter, raw and without the massive dimensions, planted",
        "Effective rank and participation ratio, planted", "Omega by layer, planted",
        f"Covariance spectrum, {where}",
    ):
        assert caption in captions, caption
    assert document.count("<img") == len(captions)
    assert "E5 per layer, planted" in document
    assert "Control: alpha without the massive dimensions (planted)" in document
    # one depth section, raw and without the massive dimensions side by side
    assert document.count("Per-layer diagnostics, planted") == 1
    assert document.count("The three largest steps of m(gamma), planted") == 1
    assert "massive dimensions dropped" in document
    assert "<script>" not in document.replace('<script type="application/json"', "")


def test_layer_and_analysis_keys_are_hashable_and_change_with_the_data(planted_view):
    view, inventory = planted_view
    a = dashboard.analysis_key(view, inventory)
    assert hash(a) == hash(dashboard.analysis_key(view, inventory))
    assert dashboard.layer_key(view, inventory, 2) != dashboard.layer_key(view, inventory, 3)
    other = dashboard.analysis_key(view, inventory, "flat@random")
    assert other.model == "flat@random" and other.token != a.token


def test_depth_axis():
    assert dashboard.depth_axis([_record_like(3), _record_like(3)]) == "layer"
    assert dashboard.depth_axis([_record_like(3), _record_like(6)]) == "gamma"



def test_user_text_is_shown_literally_in_markdown():
    text = "[see](http://example.org) ![x](u) **bold** a_b -0.5 C:\\dir"
    escaped = dashboard.escape_markdown(text)
    assert "](" not in escaped and "**" not in escaped and "![" not in escaped
    # Removing the escapes gives the text back: nothing is lost, only neutralised.
    assert re.sub(r"\\(.)", r"\1", escaped) == text
