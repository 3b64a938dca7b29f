"""Cached results are keyed by a version that must change whenever the results do.

A golden file records, for a small fixed store, every number the analysis and the comparison
(in magdash's conventions and in the paper's), the phase diagnostics, the robustness controls,
the design simulator, E5, the probes, the behaviour fits of planted comparison trials and the steering's
statistics (the store's magnitude directions and dose units, a planted steering frame's summary) cache, under the
versions (:data:`ANALYSIS_VERSION`, :data:`PHASE_VERSION`, :data:`CONTROLS_VERSION`, :data:`DESIGN_VERSION`,
:data:`E5_VERSION`, :data:`PROBE_VERSION`, :data:`BEHAVIOUR_VERSION`, :data:`STEER_VERSION`) that computed them. A change to the code that moves a cached number
without bumping its version would serve stale results from every existing store: this test
fails on it. After a deliberate change, bump the version and rewrite the golden file with
``python tests/test_cache_versions.py``.

The payloads are checked to hold plain data only (JSON, and npz without objects), so moving a
class to another module never invalidates a store.
"""

from __future__ import annotations

import io
import json
import math
import sys
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

if __name__ == "__main__":  # run as a script to rewrite the golden file
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import BEHAVIOUR_VERSION
from magdash.controls_statistics.controls import CONTROLS_VERSION
from magdash.controls_statistics.controls_params import ControlsParams, DesignParams
from magdash.controls_statistics.design import DESIGN_VERSION
from magdash.depth_statistics.accumulate import PHASE_VERSION, samples_from_bytes
from magdash.frequency import FrequencySource
from magdash.frequency.e5 import E5_VERSION
from magdash.probes.probe_params import ProbeParams
from magdash.probes.result import PROBE_VERSION
from magdash.runs.analysis_runs import analysis_key, analyze, compare
from magdash.runs.behaviour_runs import behaviour, behaviour_key
from magdash.runs.controls_runs import controls_key, run_controls
from magdash.runs.depth_runs import depth_from_store, number_token_key
from magdash.runs.design_runs import design_key, run_design
from magdash.runs.frequency_runs import e5_from_store
from magdash.runs.probe_runs import probe, probe_key
from magdash.steering.directions import direction_kinds, layer_directions
from magdash.steering.steer_params import SteerParams
from magdash.steering.steer_result import STEER_VERSION, summarise_steering
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from magdash.tokenization import NumberTokens
from magdash.variability.analysis import ANALYSIS_VERSION
from magdash.variability.analysis_params import AnalysisParams

GOLDEN = Path(__file__).resolve().parent / "data" / "golden_results.json"
PARAMS = AnalysisParams(n_boot=200)
PAPER_PARAMS = AnalysisParams(n_boot=200, conventions="paper")
MODELS = ("golden", "golden@random")
RTOL, ATOL = 1e-6, 1e-10
COMPARISONS = "golden-comparisons"
BEHAVIOUR_PARAMS = BehaviourParams(n_boot=50, conventions=("magdash", "paper"))
STEER_PARAMS = SteerParams(doses=(0.5, 1.0), n_random=4, n_boot=50)


def portable_noise(n: int, seed: int) -> np.ndarray:
    """n numbers in [-1, 1) from a 32-bit linear congruential generator: the same on every
    machine and numpy version, unlike a library generator's stream."""
    state = np.uint64(seed)
    out = np.empty(n)
    for index in range(n):
        state = (np.uint64(1664525) * state + np.uint64(1013904223)) % np.uint64(2**32)
        out[index] = float(state) / 2**31 - 1.0
    return out


def golden_store(path: Path) -> Store:
    """Two imported models on the paper's stimuli: 4 layers of 8-d vectors whose spread falls with n."""
    store = Store(path)
    shape = (len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 4, 8)
    log_n = np.log(np.asarray(PAPER_MAGNITUDES, dtype=np.float64))[:, None, None, None]
    for seed, name in enumerate(MODELS, start=1):
        noise = portable_noise(int(np.prod(shape)), seed).reshape(shape)
        vectors = noise * np.exp(-0.1 * seed * log_n) + log_n * np.linspace(0.5, 1.5, 8)
        # The embedding layer: the same vector for every carrier, and no two magnitudes' vectors
        # collinear (collinear centroids have cosine distances of pure rounding noise, whose RSA
        # differed between machines).
        vectors[:, :, 0] = log_n[:, :, 0] + portable_noise(shape[0] * shape[3], seed + 10).reshape(shape[0], 1, shape[3])
        store.import_arrays(name, vectors.astype(np.float32), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)
        # Token facts as a tokenizer splitting every digit would give them, so that the cached
        # tokenization fits are covered too.
        items = store.stimulus_set("paper").items
        facts = [NumberTokens(item.magnitude, item.carrier_index, "last", len(str(item.magnitude)),
                              (int(str(item.magnitude)[-1]),), int(str(item.magnitude)[-1]), str(item.magnitude)[-1],
                              tuple(str(item.magnitude)), len(str(item.magnitude)), len(str(item.magnitude)))
                 for item in items]
        store.write_token_facts(store.model_record(name).model_id, [item.key for item in items], facts)
        store.put_trials(name, COMPARISONS, golden_trials(seed))
    return store


def golden_trials(seed: int) -> pd.DataFrame:
    """Comparison trials from a known psychometric function (P = 0.5 + 0.45 Phi((ln r - mu) / 0.3), mu growing
    with the reference), every choice drawn from :func:`portable_noise`: 20 per ratio and position at 3 references."""
    ratios, references, per_position = (1.05, 1.1, 1.2, 1.5, 2.0, 3.0), (10.0, 100.0, 1000.0), 20
    draws = iter((portable_noise(len(ratios) * len(references) * 2 * per_position * 2, seed + 20) + 1.0) / 2.0)
    rows = []
    for reference in references:
        mu = 0.15 + 0.05 * math.log10(reference)
        for ratio in ratios:
            p = 0.5 + 0.45 * 0.5 * (1.0 + math.erf((math.log(ratio) - mu) / (0.3 * math.sqrt(2.0))))
            for larger in ("A", "B"):
                small, big = f"{reference:g}", f"{reference * ratio:g}"
                for _ in range(per_position):
                    right = next(draws) < p
                    difference = (1.0 + math.log(ratio)) * (1.0 if right else -1.0) + next(draws) - 0.5
                    signed = difference if larger == "A" else -difference
                    chosen = larger if right else ("B" if larger == "A" else "A")
                    rows.append({"task": "golden", "reference": reference, "ratio": ratio, "larger": larger,
                                 "value_a": big if larger == "A" else small, "value_b": small if larger == "A" else big,
                                 "prompt": f"A) {big if larger == 'A' else small} or B) {small if larger == 'A' else big}?",
                                 "logit_a": 5.0 + signed, "logit_b": 5.0, "prob_a": 0.45 + 0.01 * signed,
                                 "prob_b": 0.45 - 0.01 * signed, "chosen": chosen, "correct": right})
    return pd.DataFrame(rows)


def golden_steering_frames(n_trials: int = 30) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A steering frame of two layers from :func:`portable_noise`: at layer 1 the magnitude direction raises
    p(choose a) by 0.2 x dose, every other (layer, direction, dose) moves it by noise of 0.02 x dose; and the
    unpatched trials."""
    kinds = direction_kinds(STEER_PARAMS)
    draws = iter(portable_noise(n_trials * (2 + 2 * len(kinds) * len(STEER_PARAMS.doses)), 40))
    larger = ["A" if next(draws) > 0 else "B" for _ in range(n_trials)]
    choose_a = [0.5 + 0.3 * next(draws) for _ in range(n_trials)]
    baseline = pd.DataFrame({"trial_id": [f"t{index}" for index in range(n_trials)], "larger": larger,
                             "p_a": [0.9 * p for p in choose_a], "p_b": [0.9 * (1 - p) for p in choose_a]})
    rows = []
    for layer in (0, 1):
        for direction, kind in enumerate(kinds):
            for dose in STEER_PARAMS.doses:
                for trial, p in zip(baseline["trial_id"], choose_a, strict=True):
                    moved = p + (0.2 * dose if (layer, kind) == (1, "magnitude") else 0.02 * dose * next(draws))
                    rows.append({"trial_id": trial, "layer": layer, "direction": direction, "dose": dose,
                                 "p_a": 0.9 * moved, "p_b": 0.9 * (1 - moved)})
    return pd.DataFrame(rows), baseline


def steer_document(store: Store) -> dict:
    """The steering's statistics on the fixed store: the magnitude direction and dose unit of layer 2 from each
    source (the null directions' draws are numpy's streams, not portable), and the payload of a planted frame's
    summary."""
    source = store.vectors(MODELS[0])
    vectors = source.layer(2)
    directions = {}
    for name in ("probe", "pc1"):
        params = SteerParams(direction=name, n_random=STEER_PARAMS.n_random)
        found = layer_directions(2, vectors, source.magnitudes, params)
        directions[name] = {"dose_unit": found.dose_unit, "direction": found.direction.tolist()}
    steered, baseline = golden_steering_frames()
    result = summarise_steering(steered, baseline, direction_kinds(STEER_PARAMS), STEER_PARAMS,
                                dose_units={0: 1.0, 1: 2.0}, top_shares={0: 0.25, 1: 0.75}, model=MODELS[0],
                                stimuli="paper", comparisons=COMPARISONS)
    return {"directions": directions, "result": json.loads(zlib.decompress(result.to_payload()))}


def cached_documents(store: Store) -> dict:
    """Every cached payload of the fixed store, decoded to plain data."""
    analysis = {}
    for suffix, params in (("", PARAMS), ("_paper", PAPER_PARAMS)):
        analyses = {}
        for name in MODELS:
            analyze(store, name, params=params)
            analyses[name] = json.loads(zlib.decompress(store.get_result(analysis_key(store, name, "paper", params))))
        analysis[f"analyses{suffix}"] = analyses
        analysis[f"comparison{suffix}"] = json.loads(zlib.decompress(compare(store, *MODELS, params=params).to_payload()))
    phases = {}
    for name in MODELS:
        depth_from_store(store, name)
        payload = store.get_result(number_token_key(store, name, "paper"))
        with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
            assert all(arrays[key].dtype.kind in "fiuU" for key in arrays.files)  # plain numbers and names only
        samples, n_blocks = samples_from_bytes(payload)
        phases[name] = {"n_blocks": n_blocks, "samples": [
            {"layer": s.layer, "dim": s.dim, "count": s.count, "nonfinite": s.nonfinite,
             "eigenvalues": s.eigenvalues.tolist(), "omegas": s.omegas.astype(np.float64).tolist(),
             "units": s.units.tolist(), "unit_names": list(s.unit_names)}
            for s in samples
        ]}
    controls_params = ControlsParams(analysis=PARAMS, n_perm=200)
    run_controls(store, MODELS[0], params=controls_params)
    controls = json.loads(zlib.decompress(store.get_result(controls_key(store, MODELS[0], "paper", controls_params))))
    design_params = DesignParams(n_studies=20, n_points=3, n_boot=5, carrier_grid=(3,), magnitude_grid=(8,))
    run_design(store, MODELS[0], params=design_params, analysis_params=PARAMS)
    design = json.loads(zlib.decompress(store.get_result(design_key(store, MODELS[0], "paper", PARAMS, design_params))))
    counts = pd.DataFrame({"number": PAPER_MAGNITUDES, "count": [10_000 // n for n in PAPER_MAGNITUDES]})
    e5_from_store(store, MODELS[0], FrequencySource("golden-counts", counts, {}), n_boot=200)
    (payload,) = [row for row in _payloads(store, "e5")]
    probe_params = ProbeParams(n_boot=50)
    probe(store, MODELS[0], params=probe_params)
    probes = json.loads(zlib.decompress(store.get_result(probe_key(store, MODELS[0], "paper", probe_params))))
    behaviour(store, MODELS[0], COMPARISONS, BEHAVIOUR_PARAMS)
    behaviour_payload = store.get_result(behaviour_key(MODELS[0], COMPARISONS, store.trials(MODELS[0], COMPARISONS),
                                                       BEHAVIOUR_PARAMS))
    return {
        "analysis": analysis,
        "phase": phases,
        "controls": controls,
        "design": design,
        "e5": json.loads(zlib.decompress(payload)),
        "probe": probes,
        "behaviour": json.loads(zlib.decompress(behaviour_payload)),
        "steer": steer_document(store),
    }


def _payloads(store: Store, kind: str) -> list[bytes]:
    """Every cached payload of ``kind``, through the store's metric rows' keys."""
    keys = set(store.metric_table(kind)["result_key"])
    return [store.get_result(key) for key in sorted(keys)]


def _json_text(value) -> object | None:
    """The document a string holds when it is JSON text of an object or a list (a table cell of
    per-token-count steps, say), else None."""
    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return None


def differences(expected, actual, where: str = "") -> list[str]:
    """Where two decoded payloads differ: structure and text exactly, numbers to RTOL/ATOL, also
    inside strings that hold JSON (their digits past float64's last few depend on the machine's
    BLAS and summation order, which a real change to a result exceeds by orders of magnitude)."""
    if (parsed := _json_text(expected)) is not None and (other := _json_text(actual)) is not None:
        return differences(parsed, other, f"{where}<json>")
    if isinstance(expected, dict) and isinstance(actual, dict):
        if expected.keys() != actual.keys():
            return [f"{where}: keys {sorted(expected)} != {sorted(actual)}"]
        return [d for key in expected for d in differences(expected[key], actual[key], f"{where}.{key}")]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: {len(expected)} items != {len(actual)}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual, strict=True)) for d in differences(e, a, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(expected, numbers) and isinstance(actual, numbers) and not isinstance(expected, bool):
        same = (math.isnan(expected) and math.isnan(actual)) or math.isclose(expected, actual, rel_tol=RTOL, abs_tol=ATOL)
        return [] if same else [f"{where}: {expected!r} != {actual!r}"]
    return [] if expected == actual else [f"{where}: {expected!r} != {actual!r}"]


@pytest.mark.slow
def test_cached_results_change_only_with_their_version(tmp_path):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    documents = cached_documents(golden_store(tmp_path / "golden.duckdb"))
    text = json.dumps(documents["analysis"])
    assert "magdash." not in text and "__" not in text  # no class paths in a payload
    for part, version, name in (("analysis", ANALYSIS_VERSION, "ANALYSIS_VERSION in magdash/variability/analysis.py"),
                                ("phase", PHASE_VERSION, "PHASE_VERSION in magdash/depth_statistics/accumulate.py"),
                                ("controls", CONTROLS_VERSION, "CONTROLS_VERSION in magdash/controls_statistics/controls.py"),
                                ("design", DESIGN_VERSION, "DESIGN_VERSION in magdash/controls_statistics/design.py"),
                                ("e5", E5_VERSION, "E5_VERSION in magdash/frequency/e5.py"),
                                ("probe", PROBE_VERSION, "PROBE_VERSION in magdash/probes/result.py"),
                                ("behaviour", BEHAVIOUR_VERSION,
                                 "BEHAVIOUR_VERSION in magdash/behaviour/behaviour_result.py"),
                                ("steer", STEER_VERSION, "STEER_VERSION in magdash/steering/steer_result.py")):
        computed = json.loads(json.dumps(documents[part], allow_nan=True))
        changed = differences(golden[part], computed, part)
        # A missed version bump, planted: one cached number moved by 1e-4 of itself is caught.
        planted_where, planted = _move_first_number(computed)
        assert any(line.startswith(f"{part}{planted_where}") for line in differences(golden[part], planted, part)), part
        if golden["versions"][part] == version:
            assert not changed, (
                f"cached {part} results changed but {name} is still {version!r}: bump it, then rewrite "
                f"the golden file with `python tests/test_cache_versions.py`. First differences: {changed[:5]}"
            )
        else:
            raise AssertionError(
                f"{name} is {version!r}, the golden file records {golden['versions'][part]!r}: rewrite it "
                "with `python tests/test_cache_versions.py`"
            )


def _move_first_number(document, where: str = ""):
    """(where, a copy of ``document`` whose first non-zero finite float is 1.0001 times itself)."""
    if isinstance(document, (dict, list)):
        pairs = document.items() if isinstance(document, dict) else enumerate(document)
        for key, value in pairs:
            label = f"{where}.{key}" if isinstance(document, dict) else f"{where}[{key}]"
            found, moved = _move_first_number(value, label)
            if found is not None:
                copy = dict(document) if isinstance(document, dict) else list(document)
                copy[key] = moved
                return found, copy
        return None, document
    if isinstance(document, float) and math.isfinite(document) and document != 0.0:
        return where, document * 1.0001
    return None, document


def test_the_comparison_finds_a_changed_number():
    document = {"a": [1.0, math.nan, "label"], "b": {"c": 0.5}}
    assert differences(document, json.loads(json.dumps(document, allow_nan=True))) == []
    assert differences(document, {"a": [1.0 + 1e-9, math.nan, "label"], "b": {"c": 0.5}}) == []
    assert differences(document, {"a": [1.001, math.nan, "label"], "b": {"c": 0.5}}) == [".a[0]: 1.0 != 1.001"]
    assert differences(document, {"a": [1.0, 2.0, "label"], "b": {"c": 0.5}}) == [".a[1]: nan != 2.0"]
    assert differences(document, {"a": [1.0, math.nan, "other"], "b": {}})[0].startswith(".a[2]")
    # A table cell holding JSON: another machine's last digits pass, a real change does not.
    cell = {"steps": '{"2": -0.0625777666817539, "3": 0.08882436375897428}'}
    assert differences(cell, {"steps": '{"2": -0.06257776668175402, "3": 0.08882436375897422}'}) == []
    assert differences(cell, {"steps": '{"2": -0.0626, "3": 0.08882436375897428}'}) == [
        ".steps<json>.2: -0.0625777666817539 != -0.0626"]
    assert differences(cell, {"steps": '{"2": -0.0625777666817539}'})[0].startswith(".steps<json>: keys")
    assert differences({"label": "{not json"}, {"label": "{not json!"}) != []


def write_golden() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        documents = cached_documents(golden_store(Path(folder) / "golden.duckdb"))
    documents["versions"] = {"analysis": ANALYSIS_VERSION, "phase": PHASE_VERSION, "controls": CONTROLS_VERSION,
                             "design": DESIGN_VERSION, "e5": E5_VERSION, "probe": PROBE_VERSION,
                             "behaviour": BEHAVIOUR_VERSION, "steer": STEER_VERSION}
    GOLDEN.write_text(json.dumps(documents, allow_nan=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    write_golden()
