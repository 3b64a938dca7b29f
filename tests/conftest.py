"""Fixtures: tiny random-weight Llama and Mistral models (built by :mod:`tests.support`), a fresh
store, a seeded generator; the hypothesis profile; the model cache shared by every run; the
order in which the test files are handed to parallel workers; the bad-input case totals after
each run."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

# The suite starts many Python processes (its workers, the CLI, app servers, Ray); with bytecode writing
# off (PYTHONDONTWRITEBYTECODE, which some images set) each of them compiles magdash and rewrites the
# tests' asserts from source again, every run: about a tenth of the fast loop.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Each worker has a core of its own: a second intra-op thread per worker only makes the
    # workers (and the processes they start) wait for one another.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# The built-in GGUF decoders are converted once and kept between runs, outside the clone (the
# conversion cache is keyed by file hash, dtype, transformers version and CONVERSION_VERSION, so
# a stale entry is never used); the test workers and the app servers they start share it, and a
# conversion one of them is doing makes the others wait for it. A cold conversion is tested on
# its own (tests/test_gguf.py::test_a_cold_conversion_gives_the_weights_of_the_shared_cache).
TEST_MODEL_CACHE = Path(
    os.environ.get("MAGDASH_TEST_MODEL_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "magdash" / "test-models"
)
os.environ.setdefault("MAGDASH_MODEL_CACHE", str(TEST_MODEL_CACHE))
# When this run began (set once, by the first process: the parallel workers inherit it), so that
# a test can tell a conversion this run made from one an earlier run left in the cache.
os.environ.setdefault("MAGDASH_TEST_RUN_STARTED", repr(time.time()))

from hypothesis import HealthCheck, settings  # noqa: E402

from magdash.store import Store  # noqa: E402
from tests.support import CASES, ROOT, build_tiny_model, load_builtin, require_ray  # noqa: E402

# CI replays the same generated cases on every run so that a red build is reproducible; a
# developer's run explores new ones. Entry points are slow (processes, stores), hence no deadline.
settings.register_profile(
    "magdash", deadline=None, derandomize=bool(os.environ.get("CI")), print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("magdash")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama", "llama")


@pytest.fixture(scope="session")
def tiny_mistral(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-mistral", "mistral")


@pytest.fixture(scope="session")
def smollm2():
    """The built-in SmolLM2-135M-Instruct, converted into the shared model cache on first use."""
    return load_builtin("smollm2")


@pytest.fixture(scope="session")
def gemma3():
    """The built-in Gemma 3 270M (about 35 s to convert on first use: the tests that need it are few)."""
    return load_builtin("gemma3-270m")


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster with this machine's 2 CPUs for the whole session (its start costs
    seconds). Its workers import the tests package (for callbacks the tests send them)."""
    ray = require_ray()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    yield ray
    ray.shutdown()


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store.duckdb")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260404)


HEAVY_MARKS = ("slow", "faults", "browser", "bad_input")


def _test_weight(item) -> int:
    if item.get_closest_marker("long"):
        return 10_000
    return 10 if any(item.get_closest_marker(mark) for mark in HEAVY_MARKS) else 1


def pytest_collection_modifyitems(session, config, items) -> None:
    """Hand the heaviest test files to the parallel workers first (``--dist loadfile`` sends
    each file whole to one worker, in this order: ``--no-loadscope-reorder`` in pyproject.toml keeps
    xdist from sorting the files by their number of tests instead), so that no long file starts last
    and runs on alone; within a file the order is kept. A file weighs one per test, ten per test carrying a
    mark of ``HEAVY_MARKS``, ten thousand per test marked ``long`` (a minute or more: first whatever the counts)."""
    weight: dict[str, int] = {}
    for item in items:
        weight[item.fspath.strpath] = weight.get(item.fspath.strpath, 0) + _test_weight(item)
    items.sort(key=lambda item: -weight[item.fspath.strpath])


def pytest_terminal_summary(terminalreporter) -> None:
    if not CASES:
        return
    terminalreporter.section("bad-input cases tried")
    for entry_point, count in sorted(CASES.items()):
        terminalreporter.write_line(f"{count:7d}  {entry_point}")
    terminalreporter.write_line(f"{sum(CASES.values()):7d}  in all")
