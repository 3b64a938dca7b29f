"""A sweep plan: models x stimulus sets x dtypes x token positions, and what to run on each.

A plan is a TOML file (read with :mod:`tomllib`)::

    tasks = ["extract", "analyze", "depth", "controls"]   # run in this order on every cell
    dtypes = ["float32"]                       # every model, unless it lists its own
    positions = ["last"]
    batch_size = 32
    model_cache = "/shared/models"             # GGUF conversions, relative to the plan file
                                               # (default: $MAGDASH_MODEL_CACHE or cache/models)

    [[models]]
    spec = "meta-llama/Meta-Llama-3-8B"        # as for `magdash extract --model`
    name = "llama3-8b"                         # optional store name
    num_gpus = 1                               # Ray resources of each of its tasks
    device_map = "auto"                        # spread over the task's GPUs

    [[stimuli]]
    name = "paper"

    [[stimuli]]
    name = "wide"
    carriers = "carriers.txt"                  # relative to the plan file
    magnitudes = "1-1000"

    [[stimuli]]
    name = "paper-words"                       # the paper's carriers and magnitudes ...
    number_format = "words"                    # ... in number words (magdash.stimuli.NUMBER_FORMATS)

    [analyze]                                  # AnalysisParams fields
    n_boot = 1000

    [depth]                                    # DepthParams fields
    n_boot = 1000

    [controls]                                 # ControlsParams fields but analysis ([analyze]'s)
    n_perm = 10000

    [probe]                                    # ProbeParams fields (with "probe" in tasks)
    n_boot = 1000

    [steer]                                    # SteerParams fields (with "steer" in tasks, after
    layers = "0-8"                             # "extract" and "behave", which store its vectors and trials)

A stimulus set's ``number_format`` (digits by default) writes its numbers; the same carriers
and magnitudes in another format are another set, listed as another ``[[stimuli]]`` entry with
its own name (``paper-<format>`` for the paper's, as ``magdash extract --number-format`` names it).

A cell is one (model, stimulus set, dtype, position); its store name is
:func:`magdash.names.default_name` of the model's name (or spec), so a sweep stores each
cell under the name ``magdash extract`` would give it. Every mistake is a :class:`PlanError`
naming the plan file and the entry, raised before anything runs.

The depth task and its table were called ``phase``; a plan saying so still runs, with a
DeprecationWarning and a logged warning (:data:`DEPRECATED_SECTIONS`).
"""

from __future__ import annotations

import dataclasses
import logging
import tomllib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.controls_statistics.controls_params import ControlsParams
from magdash.depth_statistics.depth_params import DepthParams
from magdash.errors import MagdashError, PlanError
from magdash.extract_params import DEFAULT_BATCH_SIZE, DEFAULT_PADDING_SIDE, PADDING_SIDES
from magdash.names import default_name
from magdash.params import DEFAULT_DEVICE, DEFAULT_DTYPE, DTYPES
from magdash.probes.probe_params import ProbeParams
from magdash.steering.steer_params import SteerParams
from magdash.stimuli import (
    DEFAULT_NUMBER_FORMAT,
    DEFAULT_POSITION,
    NUMBER_FORMAT_NAMES,
    PAPER_CARRIERS,
    PAPER_SET_NAME,
    POSITIONS,
    StimulusSet,
    paper_set_name,
    parse_magnitudes,
    read_carrier_file,
)
from magdash.variability.analysis_params import AnalysisParams

log = logging.getLogger(__name__)

DEFAULT_TASKS = ("extract", "analyze")
DEPRECATED_SECTIONS = {"phase": "depth"}
"""An old name of a task and of its table: the name that replaced it (the CHANGELOG says when)."""


@dataclass(frozen=True)
class ModelEntry:
    """One model of a plan, with the resources each of its tasks asks a Ray cluster for.

    Attributes:
        spec: the model, as for ``extract --model``.
        name: its name in the store (default: the spec).
        num_gpus: GPUs each of its tasks asks Ray for.
        num_cpus: CPUs each of its tasks asks Ray for.
        device_map: ``auto`` spreads the model over its task's GPUs.
        trust_remote_code: run code shipped with the model.
        allow_pickle: load pickle weights.
        dtypes: its own dtypes (None: the plan's).
        positions: its own token positions (None: the plan's).
    """

    spec: str
    name: str | None = None
    num_gpus: float = 0.0
    num_cpus: float = 1.0
    device_map: str | None = None
    trust_remote_code: bool = False
    allow_pickle: bool = False
    dtypes: tuple[str, ...] | None = None  # None: the plan's
    positions: tuple[str, ...] | None = None  # None: the plan's

    @property
    def base_name(self) -> str:
        return self.name or self.spec


@dataclass(frozen=True)
class StimuliEntry:
    """A stimulus set: the paper's, one already stored (by name), or carriers and magnitudes.

    Attributes:
        name: the set's name.
        stimulus_set: the set defined by the plan's carriers and magnitudes; None for the paper's set or a stored one,
            by name.
    """

    name: str
    stimulus_set: StimulusSet | None = None  # None: the paper's set or a stored one, by name


@dataclass(frozen=True)
class Cell:
    """One (model, stimulus set, dtype, position) of a plan, and the name it is stored under.

    Attributes:
        model: the model.
        stimuli: the stimulus set's name.
        dtype: the dtype it runs in.
        position: which of the number's tokens is kept.
    """

    model: ModelEntry
    stimuli: str
    dtype: str
    position: str

    @property
    def store_name(self) -> str:
        return default_name(self.model.base_name, self.dtype, self.position)

    @property
    def label(self) -> str:
        return f"{self.store_name} / {self.stimuli}"


@dataclass(frozen=True)
class SweepPlan:
    """A plan file's models x stimulus sets x dtypes x positions and the tasks run on each cell.

    Attributes:
        models: the plan's models.
        stimuli: its stimulus sets.
        tasks: the task kinds run on each cell, in order.
        dtypes: the dtypes of every model without its own.
        positions: the token positions of every model without its own.
        batch_size: sentences per forward pass.
        padding_side: ``right`` or ``left``.
        device: where the models run (``auto``, ``cpu``, ``cuda``, ...).
        model_cache: where GGUF models are converted (None: the default model cache).
        analysis: the ``[analyze]`` table's parameters.
        depth: the ``[depth]`` table's parameters.
        controls: the ``[controls]`` table's parameters (None: the defaults over ``analysis``).
        probe: the ``[probe]`` table's parameters.
        behave: the ``[behave]`` table's parameters (the fits of the comparison trials).
        steer: the ``[steer]`` table's parameters (the steering of the comparison trials).
    """
    models: tuple[ModelEntry, ...]
    stimuli: tuple[StimuliEntry, ...]
    tasks: tuple[str, ...] = DEFAULT_TASKS
    dtypes: tuple[str, ...] = (DEFAULT_DTYPE,)
    positions: tuple[str, ...] = (DEFAULT_POSITION,)
    batch_size: int = DEFAULT_BATCH_SIZE
    padding_side: str = DEFAULT_PADDING_SIDE
    device: str = DEFAULT_DEVICE
    model_cache: str | None = None  # None: magdash.sources.gguf.model_cache_dir's default
    analysis: AnalysisParams = field(default_factory=AnalysisParams)
    depth: DepthParams = field(default_factory=DepthParams)
    controls: ControlsParams | None = None  # None: the defaults over ``analysis``
    probe: ProbeParams = field(default_factory=ProbeParams)
    behave: BehaviourParams = field(default_factory=BehaviourParams)
    steer: SteerParams = field(default_factory=SteerParams)

    @property
    def controls_params(self) -> ControlsParams:
        """The controls' params; their analysis is always the plan's."""
        return self.controls or ControlsParams(analysis=self.analysis)

    def params_for(
        self, task: str
    ) -> AnalysisParams | DepthParams | ControlsParams | ProbeParams | BehaviourParams | SteerParams:
        """The parameters of an analysis task: the plan's table of that name (``[analyze]``, ``[depth]``,
        ``[controls]``, ``[probe]``, ``[behave]``, ``[steer]``).

        Args:
            task: the task's name in ``tasks``.
        """
        tables = {"analyze": self.analysis, "depth": self.depth, "controls": self.controls_params, "probe": self.probe,
                  "behave": self.behave, "steer": self.steer}
        if task not in tables:
            raise PlanError(f"task {task!r} has no table of parameters; the tables are {', '.join(tables)}")
        return tables[task]

    def cells(self) -> list[Cell]:
        """Every cell, model by model, in the plan's order."""
        return [
            Cell(model, stimuli.name, dtype, position)
            for model in self.models
            for stimuli in self.stimuli
            for dtype in (model.dtypes or self.dtypes)
            for position in (model.positions or self.positions)
        ]


_PLAN_KEYS = {"tasks", "dtypes", "positions", "batch_size", "padding_side", "device", "model_cache", "models",
              "stimuli", "analyze", "depth", "controls", "probe", "behave", "steer"}
_MODEL_KEYS = {f.name for f in dataclasses.fields(ModelEntry)}
_STIMULI_KEYS = {"name", "carriers", "magnitudes", "number_format"}


def read_plan(path: str | Path, task_kinds: Mapping[str, object]) -> SweepPlan:
    """Read and check a plan file; ``task_kinds`` are the known kinds (the registry's:
    :func:`magdash.sweep.runner.load_plan` passes them).

    Args:
        path: the plan file (TOML).
        task_kinds: task name -> kind, the registered kinds.
    """
    path = Path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"no plan file {str(path)!r}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PlanError(f"cannot read the plan {str(path)!r}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise PlanError(f"the plan {str(path)!r} is not valid TOML: {error}") from None
    try:
        return parse_plan(document, path.parent, task_kinds)
    except PlanError as error:
        raise PlanError(f"{path.name}: {error}") from None


def parse_plan(document: Mapping[str, Any], folder: Path, task_kinds: Mapping[str, object]) -> SweepPlan:
    """A plan from its parsed TOML; relative carrier files are read from ``folder``; ``tasks`` must
    name kinds of ``task_kinds``.

    Args:
        document: the plan's parsed TOML.
        folder: the folder relative carrier files are read from (the plan file's).
        task_kinds: task name -> kind, the registered kinds.
    """
    document = _renamed(document)
    _check_keys(document, _PLAN_KEYS, "the plan")
    tasks = _strings(document.get("tasks", list(DEFAULT_TASKS)), "tasks", tuple(task_kinds))
    if len(set(tasks)) != len(tasks):
        raise PlanError(f"tasks {list(tasks)} name a task twice")
    models = tuple(_model(entry, index) for index, entry in enumerate(_tables(document, "models")))
    stimuli = tuple(_stimuli(entry, index, folder) for index, entry in enumerate(_tables(document, "stimuli")))
    _unique([s.name for s in stimuli], "stimulus set name", "list each set once")
    analysis = _params(AnalysisParams, document.get("analyze", {}), "analyze")
    plan = SweepPlan(
        models=models,
        stimuli=stimuli,
        tasks=tasks,
        dtypes=_strings(document.get("dtypes", [DEFAULT_DTYPE]), "dtypes", DTYPES),
        positions=_strings(document.get("positions", [DEFAULT_POSITION]), "positions", POSITIONS),
        batch_size=_positive_int(document.get("batch_size", DEFAULT_BATCH_SIZE), "batch_size"),
        padding_side=_choice(document.get("padding_side", DEFAULT_PADDING_SIDE), "padding_side", PADDING_SIDES),
        device=_text(document.get("device", DEFAULT_DEVICE), "device"),
        model_cache=str(folder / _text(document["model_cache"], "model_cache")) if "model_cache" in document else None,
        analysis=analysis,
        depth=_params(DepthParams, document.get("depth", {}), "depth"),
        controls=_controls(document, tasks, analysis),
        probe=_task_params(ProbeParams, document, tasks, "probe"),
        behave=_task_params(BehaviourParams, document, tasks, "behave"),
        steer=_task_params(SteerParams, document, tasks, "steer"),
    )
    _unique([cell.store_name for cell in plan.cells() if cell.stimuli == stimuli[0].name], "store name",
            "give each model its own name")
    return plan


def _renamed(document: Mapping[str, Any]) -> dict[str, Any]:
    """The plan with each old task and table name (:data:`DEPRECATED_SECTIONS`) as its new one,
    warning once per old name; a plan giving both names of a table is refused."""
    renamed = dict(document)
    tasks = renamed.get("tasks")
    for old, new in DEPRECATED_SECTIONS.items():
        in_tasks = isinstance(tasks, list) and old in tasks
        if old in renamed:
            if new in renamed:
                raise PlanError(f"[{old}] and [{new}] are the same table: keep [{new}]")
            renamed[new] = renamed.pop(old)
        if in_tasks and isinstance(tasks, list):  # the second test narrows tasks for the type checker
            tasks = [new if task == old else task for task in tasks]
            renamed["tasks"] = tasks
        if in_tasks or old in document:
            message = f'the plan\'s "{old}" task and [{old}] table are deprecated; call them "{new}" and [{new}]'
            warnings.warn(message, DeprecationWarning, stacklevel=4)
            log.warning(message)
    return renamed


def _check_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise PlanError(f"unknown key(s) {', '.join(unknown)} in {where}; allowed: {', '.join(sorted(allowed))}")


def _tables(document: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    tables = document.get(key)
    if not tables:
        raise PlanError(f"no [[{key}]] given: list at least one")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise PlanError(f"{key} must be an array of tables, written [[{key}]]")
    return tables


def _model(entry: Mapping[str, Any], index: int) -> ModelEntry:
    where = f"[[models]] #{index + 1}"
    _check_keys(entry, _MODEL_KEYS, where)
    if "spec" not in entry:
        raise PlanError(f"{where} has no spec: give e.g. spec = \"minilm\"")
    spec = _text(entry["spec"], f"{where} spec")
    where = f"model {spec!r}"
    name = None if "name" not in entry else _text(entry["name"], f"{where} name")
    device_map = entry.get("device_map")
    if device_map is not None and device_map != "auto":
        raise PlanError(f"{where}: device_map must be \"auto\" or left out, got {device_map!r}")
    num_gpus = _number(entry.get("num_gpus", 0.0), f"{where} num_gpus", minimum=0.0)
    num_cpus = _number(entry.get("num_cpus", 1.0), f"{where} num_cpus", minimum=0.0)
    if num_cpus == 0 and num_gpus == 0:
        raise PlanError(f"{where}: a task needs some resource; num_cpus and num_gpus are both 0")
    return ModelEntry(
        spec=spec,
        name=name,
        num_gpus=num_gpus,
        num_cpus=num_cpus,
        device_map=device_map,
        trust_remote_code=_flag(entry.get("trust_remote_code", False), f"{where} trust_remote_code"),
        allow_pickle=_flag(entry.get("allow_pickle", False), f"{where} allow_pickle"),
        dtypes=None if "dtypes" not in entry else _strings(entry["dtypes"], f"{where} dtypes", DTYPES),
        positions=None if "positions" not in entry else _strings(entry["positions"], f"{where} positions", POSITIONS),
    )


def _stimuli(entry: Mapping[str, Any], index: int, folder: Path) -> StimuliEntry:
    where = f"[[stimuli]] #{index + 1}"
    _check_keys(entry, _STIMULI_KEYS, where)
    if "name" not in entry:
        raise PlanError(f"{where} has no name: give e.g. name = \"paper\"")
    name = _text(entry["name"], f"{where} name")
    number_format = _choice(entry.get("number_format", DEFAULT_NUMBER_FORMAT), f"stimuli {name!r} number_format",
                            NUMBER_FORMAT_NAMES)
    if "carriers" not in entry and "magnitudes" not in entry and number_format == DEFAULT_NUMBER_FORMAT:
        return StimuliEntry(name)
    if name == PAPER_SET_NAME and number_format != DEFAULT_NUMBER_FORMAT:
        raise PlanError(
            f"stimuli {name!r}: the name {PAPER_SET_NAME!r} is the paper's set in digits; name its {number_format} "
            f"form {paper_set_name(number_format)!r}"
        )
    try:
        carriers = list(PAPER_CARRIERS)
        if "carriers" in entry:
            carriers = read_carrier_file(str(folder / _text(entry["carriers"], f"stimuli {name!r} carriers")))
        magnitudes = parse_magnitudes(_text(entry.get("magnitudes", PAPER_SET_NAME), f"stimuli {name!r} magnitudes"))
        from magdash.stimuli import check_reserved_name

        stimulus_set = StimulusSet(name, tuple(carriers), tuple(magnitudes), number_format)
        check_reserved_name(stimulus_set)
    except PlanError:
        raise
    except MagdashError as error:
        raise PlanError(f"stimuli {name!r}: {error}") from None
    return StimuliEntry(name, stimulus_set)


def _controls(document: Mapping[str, Any], tasks: tuple[str, ...], analysis: AnalysisParams) -> ControlsParams | None:
    """The [controls] table over the plan's analysis. Variants are not planned: a sweep's cells
    are compared with their ``@random`` control when it is stored (``random_control``)."""
    if "controls" not in tasks:
        if "controls" in document:
            raise PlanError('[controls] is given but tasks do not include "controls": add it or drop the table')
        return None
    return _params(ControlsParams, document.get("controls", {}), "controls", analysis=analysis, variants=())


def _task_params(kind: type, document: Mapping[str, Any], tasks: tuple[str, ...], task: str):
    """The table of ``task``'s parameters (``[probe]``: :class:`ProbeParams`, ``[behave]``:
    :class:`BehaviourParams`, ``[steer]``: :class:`SteerParams`), refused without the task that reads it."""
    if task in document and task not in tasks:
        raise PlanError(f'[{task}] is given but tasks do not include "{task}": add it or drop the table')
    return _params(kind, document.get(task, {}), task)


def _params(kind: type, table: Any, section: str, **fixed: Any):
    """``kind`` from a plan's table; ``fixed`` fields come from elsewhere in the plan, not the table."""
    if not isinstance(table, dict):
        raise PlanError(f"[{section}] must be a table of {kind.__name__} fields")
    _check_keys(table, {f.name for f in dataclasses.fields(kind)} - set(fixed), f"[{section}]")
    values: dict[str, Any] = {key: tuple(value) if isinstance(value, list) else value for key, value in table.items()}
    for name in ("core_layers", "layers"):  # a band may be written as on the command line, "0-8"
        if isinstance(values.get(name), str):
            from magdash.params import parse_layers

            values[name] = tuple(parse_layers(values[name]))
    try:
        return kind(**values, **fixed)
    except (MagdashError, TypeError, ValueError) as error:
        raise PlanError(f"[{section}]: {error}") from None


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PlanError(f"{where} must be a non-empty string, got {value!r}")
    return value.strip()


def _choice(value: Any, where: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise PlanError(f"{where} {value!r} is not one of {', '.join(choices)}")
    return value


def _strings(value: Any, where: str, choices: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise PlanError(f"{where} must be a non-empty list, e.g. {where.split()[-1]} = [\"{choices[0]}\"]")
    return tuple(_choice(item, where, choices) for item in value)


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise PlanError(f"{where} must be true or false, got {value!r}")
    return value


def _number(value: Any, where: str, *, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= minimum:
        raise PlanError(f"{where} must be a number >= {minimum:g}, got {value!r}")
    return float(value)


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PlanError(f"{where} must be a whole number >= 1, got {value!r}")
    return value


def _unique(names: list[str], what: str, fix: str) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise PlanError(f"two entries share the {what} {name!r}: {fix}")
        seen.add(name)
