"""Steering benchmark: the whole ``md.steer`` run vs its floor, the patched forward passes alone.

Workload: 60 comparison prompts on the built-in ``smollm2`` (SmolLM2-135M-Instruct, its chat template
applied): the paper's design with one template (5 references x 6 ratios x 2 positions), steered at
2 layers along 1 magnitude + 2 random + 2 orthogonal directions (``n_random=2``: the orthogonal null
has as many) at 1 dose. The directions come from vectors of the model's shape planted in the store
(8 magnitudes x 3 carriers, log n along one axis): their cost (a probe per steered layer) is in the
whole run, and the prompts' forward passes do not depend on what the directions are. One process loads
the model once and times, in turn and repeated:

* ``floor``: the same batches (built as ``steer_trials`` builds them) through
  :func:`magdash.trial_extraction.last_logits` as many times as the run passes them (one unpatched
  pass per batch, one per layer x direction x dose), without hooks;
* ``steer_trials``: :func:`magdash.trial_steering.steer_trials` on the loaded model (the hooks, the
  operand positions, the scores, the frame);
* ``steer``: :func:`magdash.runs.steer_runs.steer` end to end, ``use_cache=False`` (the stored trials
  and vectors read, the directions and nulls, the model loaded again, the passes, the bootstrap
  summary, the store's writes).

Reported as medians side by side, their ratios and the cost per layer x dose x direction.
Run: ``python bench/steer.py [--repeats 3] [--device cpu] [--batch-size 32]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from magdash.comparison_stimuli import PAPER_TEMPLATES, ComparisonSet
from magdash.extract_params import DEFAULT_BATCH_SIZE

MAGNITUDES = (2, 3, 5, 8, 13, 21, 34, 55)
CARRIERS = ("a {n}", "b {n}", "c {n}")
LAYERS = (4, 12)


def bench_design() -> ComparisonSet:
    """The benchmark's 60 trials: the paper's design with its first template."""
    return ComparisonSet(name="bench-steer", templates=PAPER_TEMPLATES[:1])


def planted_vectors(n_layers: int, dim: int) -> np.ndarray:
    """(magnitudes, carriers, layers, d) vectors moving along log n on one direction, with noise."""
    rng = np.random.default_rng(0)
    direction = rng.normal(size=dim)
    centroids = np.log(MAGNITUDES)[:, None, None, None] * direction
    noise = 0.1 * rng.normal(size=(len(MAGNITUDES), len(CARRIERS), n_layers, dim))
    return (centroids + noise).astype(np.float32)


def floor(loaded, trials, chat: bool, batch_size: int, passes_per_batch: int) -> float:
    """The prompts' batches through ``last_logits`` as often as the run passes them, nothing else."""
    from magdash.trial_extraction import batches, last_logits, prompt_texts, prompt_token_ids

    token_ids = prompt_token_ids(loaded, prompt_texts(loaded.tokenizer, list(trials["question"]), chat), chat)
    started = time.perf_counter()
    for indices in batches(token_ids, batch_size):
        ids = [token_ids[index] for index in indices]
        for _ in range(passes_per_batch):
            last_logits(loaded, ids)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description="Steering benchmark: md.steer vs the patched passes alone.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    args = parser.parse_args()

    import math

    from magdash.extract_params import ExtractParams
    from magdash.runs.steer_runs import steer
    from magdash.sources.resolve import resolve_model
    from magdash.steering.directions import layer_directions
    from magdash.steering.steer_params import SteerParams
    from magdash.store import Store
    from magdash.trial_extraction import load_for_trials, run_trials
    from magdash.trial_steering import steer_trials

    extract_params = ExtractParams(device=args.device, batch_size=args.batch_size)
    steer_params = SteerParams(layers=LAYERS, doses=(1.0,), n_random=2, n_boot=200)
    loaded = load_for_trials(resolve_model("smollm2"), extract_params)
    design = bench_design()
    times: dict[str, list[float]] = {"floor": [], "steer_trials": [], "steer": []}
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "bench.duckdb")
        run = run_trials(loaded, design, store, extract_params, name="smollm2")
        vectors = planted_vectors(len(loaded.layer_labels), loaded.hidden_size)
        store.put("smollm2", vectors, list(MAGNITUDES), carriers=list(CARRIERS))
        trials = store.trials("smollm2", design.name)
        magnitudes = np.asarray(MAGNITUDES, dtype=np.float64)
        found = {layer: layer_directions(layer, vectors[:, :, layer], magnitudes, steer_params) for layer in LAYERS}
        pushes = {layer: directions.pushes for layer, directions in found.items()}
        kinds = found[LAYERS[0]].kinds
        per_batch = 1 + len(LAYERS) * len(kinds) * len(steer_params.doses)
        for repeat in range(args.repeats):
            times["floor"].append(floor(loaded, trials, run.chat_template_applied, args.batch_size, per_batch))
            started = time.perf_counter()
            steered = steer_trials(loaded, trials, pushes, steer_params.doses, steer_params.operand, args.batch_size,
                                   labels=kinds, chat=run.chat_template_applied, options=design.options)
            times["steer_trials"].append(time.perf_counter() - started)
            assert len(steered) == len(trials) * per_batch - len(trials)
            started = time.perf_counter()
            result = steer(store, "smollm2", params=steer_params, extract_params=extract_params, use_cache=False)
            times["steer"].append(time.perf_counter() - started)
            assert result.layers["layer"].tolist() == list(LAYERS)
            print(f"repeat {repeat + 1}: floor {times['floor'][-1]:.2f} s, steer_trials {times['steer_trials'][-1]:.2f} s,"
                  f" steer {times['steer'][-1]:.2f} s", flush=True)
    medians = {key: statistics.median(values) for key, values in times.items()}
    n_batches = math.ceil(len(trials) / args.batch_size)
    cells = len(LAYERS) * len(kinds) * len(steer_params.doses)
    print(f"{len(trials)} trials on smollm2 ({args.device}, batch {args.batch_size}, {n_batches} batches, chat "
          f"template {run.chat_template_applied}), {len(LAYERS)} layers x {len(kinds)} directions x "
          f"{len(steer_params.doses)} dose = {cells} patched passes per batch + 1 unpatched; medians of {args.repeats}:")
    print(f"  floor {medians['floor']:.2f} s   steer_trials {medians['steer_trials']:.2f} s   steer {medians['steer']:.2f} s")
    print(f"  steer_trials / floor = {medians['steer_trials'] / medians['floor']:.3f}   "
          f"steer / steer_trials = {medians['steer'] / medians['steer_trials']:.3f}   "
          f"steer / floor = {medians['steer'] / medians['floor']:.3f}")
    per_cell = medians["steer_trials"] / (cells + 1)
    print(f"  cost per layer x dose x direction: {per_cell:.3f} s for the {len(trials)} prompts, "
          f"{1000 * per_cell / len(trials):.2f} ms per prompt")


if __name__ == "__main__":
    main()
