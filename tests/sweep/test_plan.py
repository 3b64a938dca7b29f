"""Plan files: what a good one expands to, and a clear PlanError for every kind of mistake."""

from __future__ import annotations

import pytest

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.errors import PlanError
from magdash.probes.probe_params import ProbeParams
from magdash.stimuli import paper_stimuli
from magdash.store import Store
from magdash.sweep.plan import DEFAULT_TASKS
from magdash.sweep.runner import load_plan, stimulus_sets

GOOD = """
tasks = ["extract", "analyze", "depth", "controls"]
dtypes = ["float32", "bfloat16"]
positions = ["last", "first"]
batch_size = 4
model_cache = "models"

[[models]]
spec = "minilm"
num_gpus = 0.5

[[models]]
spec = "some/model"
name = "big"
num_gpus = 2
device_map = "auto"
dtypes = ["bfloat16"]

[[stimuli]]
name = "paper"

[[stimuli]]
name = "mine"
carriers = "carriers.txt"
magnitudes = "1-5"

[analyze]
n_boot = 100
core_layers = "2-3"
conventions = "paper"

[depth]
n_boot = 7

[controls]
n_perm = 50
random_control = false
"""


def _plan(tmp_path, text: str):
    (tmp_path / "carriers.txt").write_text("I saw {n} birds.\nIt cost {n} euros.\n", encoding="utf-8")
    path = tmp_path / "plan.toml"
    path.write_text(text, encoding="utf-8")
    return load_plan(path)


def test_a_plan_naming_the_old_phase_task_and_table_runs_as_depth_and_warns(tmp_path, caplog):
    old = GOOD.replace('"depth"', '"phase"').replace("[depth]", "[phase]")
    assert old != GOOD
    with pytest.warns(DeprecationWarning, match=r'"phase" task and \[phase\] table are deprecated; call them "depth"'):
        plan = _plan(tmp_path, old)
    assert "deprecated" in caplog.text  # what `magdash sweep` shows on stderr
    assert plan == _plan(tmp_path, GOOD)
    with pytest.raises(PlanError, match=r"\[phase\] and \[depth\] are the same table"):
        _plan(tmp_path, GOOD + "\n[phase]\nn_boot = 3\n")


def test_a_plan_expands_to_its_cells_in_order(tmp_path):
    plan = _plan(tmp_path, GOOD)
    cells = plan.cells()
    # minilm: 2 sets x 2 dtypes x 2 positions; big: 2 sets x its own 1 dtype x 2 positions.
    assert len(cells) == 8 + 4
    assert [c.store_name for c in cells[:4]] == ["minilm", "minilm:first", "minilm:bfloat16", "minilm:bfloat16:first"]
    assert {c.store_name for c in cells[8:]} == {"big:bfloat16", "big:bfloat16:first"}
    big = cells[8].model
    assert (big.num_gpus, big.num_cpus, big.device_map) == (2.0, 1.0, "auto")
    assert plan.tasks == ("extract", "analyze", "depth", "controls")
    assert plan.batch_size == 4
    assert plan.model_cache == str(tmp_path / "models")  # relative to the plan file
    assert plan.analysis.n_boot == 100 and plan.analysis.core_layers == (2, 3) and plan.analysis.seed == 42
    assert plan.depth.n_boot == 7
    assert (plan.controls.n_perm, plan.controls.random_control, plan.controls.variants) == (50, False, ())
    assert plan.controls_params.analysis is plan.analysis
    mine = plan.stimuli[1].stimulus_set
    assert mine.carriers == ("I saw {n} birds.", "It cost {n} euros.") and mine.magnitudes == (1, 2, 3, 4, 5)
    assert plan.stimuli[0].stimulus_set is None  # the paper's set, made when the sweep starts


def test_the_probe_table_gives_the_probes_params(tmp_path):
    plan = _plan(tmp_path, 'tasks = ["extract", "probe"]\n[[models]]\nspec = "minilm"\n[[stimuli]]\nname = "paper"\n'
                           "[probe]\nn_boot = 50\ntargets = ['log']\nalphas = [0.1, 1, 10]\n")
    assert plan.tasks == ("extract", "probe")
    assert plan.probe == ProbeParams(n_boot=50, targets=("log",), alphas=(0.1, 1.0, 10.0))


def test_the_behave_table_gives_the_fits_params(tmp_path):
    plan = _plan(tmp_path, 'tasks = ["behave"]\n[[models]]\nspec = "minilm"\n[[stimuli]]\nname = "paper"\n'
                           "[behave]\nn_boot = 50\nconventions = ['magdash', 'paper']\n")
    assert plan.tasks == ("behave",) and plan.params_for("behave") is plan.behave
    assert plan.behave == BehaviourParams(n_boot=50, conventions=("magdash", "paper"))
def test_a_stimuli_entry_takes_a_number_format(tmp_path):
    plan = _plan(tmp_path, MODELS + STIMULI + (
        '[[stimuli]]\nname = "paper-words"\nnumber_format = "words"\n'
        '[[stimuli]]\nname = "mine-grouped"\ncarriers = "carriers.txt"\nmagnitudes = "999-1001"\n'
        'number_format = "grouped"\n'
    ))
    paper, words, grouped = plan.stimuli
    assert paper.stimulus_set is None
    assert words.stimulus_set == paper_stimuli("words") and words.stimulus_set.name == "paper-words"
    assert grouped.stimulus_set.number_format == "grouped"
    assert [item.sentence for item in grouped.stimulus_set.items[-2:]] == ["I saw 1,001 birds.", "It cost 1,001 euros."]
    assert [cell.label for cell in plan.cells()] == ["minilm / paper", "minilm / paper-words", "minilm / mine-grouped"]
    # every set of the plan is registered as what it is: the words set never joins the digits set
    store = Store(tmp_path / "store.duckdb")
    stimulus_sets(plan, store)
    assert store.number_formats() == {"mine-grouped": "grouped", "paper": "digits", "paper-words": "words"}


def test_defaults(tmp_path):
    plan = _plan(tmp_path, '[[models]]\nspec = "minilm"\n[[stimuli]]\nname = "paper"\n')
    assert plan.tasks == DEFAULT_TASKS
    assert plan.probe == ProbeParams()
    assert plan.controls is None and plan.controls_params.analysis is plan.analysis
    assert plan.model_cache is None
    assert (plan.dtypes, plan.positions, plan.padding_side) == (("float32",), ("last",), "right")
    assert [c.label for c in plan.cells()] == ["minilm / paper"]


MODELS = '[[models]]\nspec = "minilm"\n'
STIMULI = '[[stimuli]]\nname = "paper"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tasks = [", "is not valid TOML"),
        ("colour = 1\n" + MODELS + STIMULI, "unknown key(s) colour in the plan"),
        ('tasks = ["extract", "dance"]\n' + MODELS + STIMULI, "tasks 'dance' is not one of extract, analyze, depth, controls, probe"),
        ('tasks = ["extract", "extract"]\n' + MODELS + STIMULI, "name a task twice"),
        ('dtypes = ["float8"]\n' + MODELS + STIMULI, "dtypes 'float8' is not one of float32"),
        ("dtypes = []\n" + MODELS + STIMULI, "dtypes must be a non-empty list"),
        ('positions = "middle"\n' + MODELS + STIMULI, "positions 'middle' is not one of last, first, mean"),
        ("batch_size = 0\n" + MODELS + STIMULI, "batch_size must be a whole number >= 1, got 0"),
        ("model_cache = 3\n" + MODELS + STIMULI, "model_cache must be a non-empty string, got 3"),
        (STIMULI, "no [[models]] given"),
        (MODELS, "no [[stimuli]] given"),
        ("models = 3\n" + STIMULI, "models must be an array of tables, written [[models]]"),
        ('[[models]]\nname = "x"\n' + STIMULI, "[[models]] #1 has no spec"),
        ('[[models]]\nspec = ""\n' + STIMULI, "spec must be a non-empty string"),
        ('[[models]]\nspec = "minilm"\ngpus = 1\n' + STIMULI, "unknown key(s) gpus in [[models]] #1"),
        ('[[models]]\nspec = "minilm"\nnum_gpus = -1\n' + STIMULI, "model 'minilm' num_gpus must be a number >= 0"),
        ('[[models]]\nspec = "minilm"\nnum_gpus = "two"\n' + STIMULI, "num_gpus must be a number >= 0, got 'two'"),
        ('[[models]]\nspec = "minilm"\nnum_cpus = 0\n' + STIMULI, "num_cpus and num_gpus are both 0"),
        ('[[models]]\nspec = "minilm"\ndevice_map = "balanced"\n' + STIMULI, 'device_map must be "auto"'),
        ('[[models]]\nspec = "minilm"\ntrust_remote_code = "yes"\n' + STIMULI, "must be true or false"),
        (MODELS + MODELS + STIMULI, "two entries share the store name 'minilm': give each model its own name"),
        (MODELS + STIMULI + STIMULI, "share the stimulus set name 'paper'"),
        (MODELS + "[[stimuli]]\ncarriers = 'carriers.txt'\n", "[[stimuli]] #1 has no name"),
        (MODELS + "[[stimuli]]\nname = 'x'\ncarriers = 'nope.txt'\n", "stimuli 'x': "),
        (MODELS + "[[stimuli]]\nname = 'x'\nmagnitudes = 'ten'\n", "stimuli 'x': "),
        (MODELS + "[[stimuli]]\nname = 'paper'\nmagnitudes = '1-3'\n", "kept for the paper's stimuli"),
        (MODELS + "[[stimuli]]\nname = 'x'\nnumber_format = 'roman'\n",
         "stimuli 'x' number_format 'roman' is not one of digits, grouped, spaced, padded, words"),
        (MODELS + "[[stimuli]]\nname = 'paper'\nnumber_format = 'words'\n", "name its words form 'paper-words'"),
        (MODELS + STIMULI + "[analyze]\nn_boot = -1\n", "[analyze]: n_boot=-1 must be 0 or more"),
        (MODELS + STIMULI + "[analyze]\nmeasures = ['volume']\n", "[analyze]: unknown measure(s) 'volume'"),
        (MODELS + STIMULI + "[analyze]\nboots = 3\n", "unknown key(s) boots in [analyze]"),
        (MODELS + STIMULI + "[depth]\nlevel = 0.5\n", "[depth]: the Tracy-Widom level must be one of"),
        ("depth = 3\n" + MODELS + STIMULI, "[depth] must be a table"),
        (MODELS + STIMULI + "[controls]\nn_perm = 5\n", '[controls] is given but tasks do not include "controls"'),
        ('tasks = ["controls"]\n' + MODELS + STIMULI + "[controls]\nn_perm = 0\n", "[controls]: n_perm=0 must be 1"),
        ('tasks = ["controls"]\n' + MODELS + STIMULI + "[controls]\nvariants = ['x']\n",
         "unknown key(s) variants in [controls]"),
        ('tasks = ["controls"]\n' + MODELS + STIMULI + "[analyze]\nmassive = 'drop'\n",
         "[controls]: the robustness controls and the design simulator work on the raw vectors"),
        (MODELS + STIMULI + "[probe]\nn_boot = 5\n", '[probe] is given but tasks do not include "probe"'),
        ('tasks = ["probe"]\n' + MODELS + STIMULI + "[probe]\ntargets = ['cube']\n",
         "[probe]: unknown probe target(s) cube"),
        ('tasks = ["probe"]\n' + MODELS + STIMULI + "[probe]\ncarrier_folds = 1\n", "[probe]: carrier_folds=1: give 0"),
        ('tasks = ["probe"]\n' + MODELS + STIMULI + "[probe]\nfolds = 3\n", "unknown key(s) folds in [probe]"),
        (MODELS + STIMULI + "[behave]\nn_boot = 5\n", '[behave] is given but tasks do not include "behave"'),
        ('tasks = ["behave"]\n' + MODELS + STIMULI + "[behave]\nn_boot = -1\n", "[behave]: n_boot=-1 must be a whole"),
        ('tasks = ["behave"]\n' + MODELS + STIMULI + "[behave]\nconventions = ['nobody']\n",
         "[behave]: unknown conventions nobody"),
    ],
)
def test_bad_plans_are_refused_with_a_message(tmp_path, text, message):
    with pytest.raises(PlanError) as caught:
        _plan(tmp_path, text)
    assert message in str(caught.value)
    assert "plan.toml" in str(caught.value)  # names the file


def test_a_missing_or_unreadable_plan(tmp_path):
    with pytest.raises(PlanError, match="no plan file"):
        load_plan(tmp_path / "nope.toml")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(PlanError, match="cannot read the plan"):
        load_plan(tmp_path / "binary.toml")
