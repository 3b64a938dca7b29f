"""Fixtures: tiny random-weight Llama and Mistral models (built by :mod:`tests.support`), a fresh
store, a seeded generator; the hypothesis profile; the bad-input case totals after each run."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One model cache for the whole session (and the app servers it starts), so each built-in GGUF
# is converted once per run; set MAGDASH_MODEL_CACHE to keep conversions between runs.
_SESSION_MODEL_CACHE = None if os.environ.get("MAGDASH_MODEL_CACHE") else tempfile.mkdtemp(prefix="magdash-models-")
if _SESSION_MODEL_CACHE:
    os.environ["MAGDASH_MODEL_CACHE"] = _SESSION_MODEL_CACHE

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
    """The built-in SmolLM2-135M-Instruct, converted once per session into the session's model cache."""
    return load_builtin("smollm2")


@pytest.fixture(scope="session")
def gemma3():
    """The built-in Gemma 3 270M (about 80 s to convert: the tests that need it are few)."""
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


def pytest_sessionfinish(session, exitstatus) -> None:
    if _SESSION_MODEL_CACHE:
        shutil.rmtree(_SESSION_MODEL_CACHE, ignore_errors=True)


def pytest_terminal_summary(terminalreporter) -> None:
    if not CASES:
        return
    terminalreporter.section("bad-input cases tried")
    for entry_point, count in sorted(CASES.items()):
        terminalreporter.write_line(f"{count:7d}  {entry_point}")
    terminalreporter.write_line(f"{sum(CASES.values()):7d}  in all")
