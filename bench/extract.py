"""Extraction benchmark: magdash's extract vs the storage-free floor vs a one-sentence loop.

Workload: magnitudes 1..1000 x the paper's 5 carriers (5,000 sentences) on the built-in
``minilm``, every layer kept at the number's last token. Three whole processes are timed
side by side, each started fresh, repeated, and reported as medians:

* ``magdash``: ``python -m magdash extract`` into a fresh store;
* ``floor``: the same sorted, batched forward passes with hooks, storing nothing;
* ``loop``: the paper's reference loop (``paradigm_a_extract.py`` of GitHub synthiumjp/weber,
  rewritten here): one sentence per forward pass, the sentence tokenized once with offsets to
  find the number and once more for the forward pass, the model loaded with
  ``AutoModelForCausalLM`` (for MiniLM that adds an LM head, as the reference does for its
  decoders) and ``output_hidden_states``, every layer copied out and checked for NaN;
* ``lean-loop``: the same loop stripped to its minimum — one tokenization, the bare
  ``AutoModel`` — to show how much of the gap is the loop itself.

Targets: magdash within 1.25x of the floor, at least 5x faster than the loop.
Run: ``python bench/extract.py [--repeats 3] [--magnitudes 1-1000]``.

``--mode in-process`` isolates what the store costs (issue 17's target: within 1.1x of the
floor): one process loads the model once and times, in turn, the floor's passes and
``extract`` of the same sentences into a fresh store (shards written, registered, flagged),
and the time ``extract`` itself reports waiting for the store (``ExtractionResult.store_seconds``),
which two runs' noise does not blur; ``--device cuda`` runs it on a GPU.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def floor_run(magnitudes: str, batch_size: int, loaded=None) -> None:
    import numpy as np

    from magdash.extraction import forward_number_vectors, locate_numbers
    from magdash.sources import load_model
    from magdash.stimuli import PAPER_CARRIERS, StimulusSet, parse_magnitudes

    loaded = loaded or load_model("minilm", device="cpu")
    stimuli = StimulusSet("bench", PAPER_CARRIERS, tuple(parse_magnitudes(magnitudes)))
    token_ids, number_tokens = locate_numbers(loaded, stimuli.items, "last")
    order = np.argsort([len(ids) for ids in token_ids], kind="stable")
    kept = 0
    for start in range(0, len(order), batch_size):
        chosen = order[start:start + batch_size]
        vectors = forward_number_vectors(loaded, [token_ids[i] for i in chosen], [number_tokens[i] for i in chosen])
        kept += vectors.shape[0]
    assert kept == len(stimuli.items)


def in_process(magnitudes: str, batch_size: int, repeats: int, device: str = "cpu") -> None:
    """One loaded model, the floor's passes and ``extract`` into a fresh store in turn: what the
    store costs an extraction, without process start-up and model loading around it."""
    from magdash.extraction import extract
    from magdash.sources import load_model
    from magdash.stimuli import PAPER_CARRIERS, StimulusSet, parse_magnitudes
    from magdash.store import Store

    loaded = load_model("minilm", device=device)
    stimuli = StimulusSet("bench", PAPER_CARRIERS, tuple(parse_magnitudes(magnitudes)))
    floor_run(magnitudes, batch_size, loaded)  # warm-up: first passes allocate
    times: dict[str, list[float]] = {"extract": [], "floor": [], "waiting for the store": []}
    for repeat in range(repeats):
        started = time.perf_counter()
        floor_run(magnitudes, batch_size, loaded)
        times["floor"].append(time.perf_counter() - started)
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            store = Store(Path(folder) / "bench.duckdb")
            opened = time.perf_counter() - started
            result = extract(loaded, stimuli, store, batch_size=batch_size)
            times["extract"].append(time.perf_counter() - started)
            times["waiting for the store"].append(opened + result.store_seconds)
        print(f"in-process repeat {repeat + 1} ({loaded.device}): "
              + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    medians = {k: statistics.median(v) for k, v in times.items()}
    shares = [wait / total for wait, total in zip(times["waiting for the store"], times["extract"], strict=True)]
    print(f"in-process medians: extract {medians['extract']:.2f} s, floor {medians['floor']:.2f} s: "
          f"extract / floor = {medians['extract'] / medians['floor']:.3f}  (target <= 1.1); the extraction "
          f"waited for the store {medians['waiting for the store']:.2f} s, a median {statistics.median(shares):.1%} "
          f"of its time (store opened, set and model registered, writes the forward passes did not hide)")


def loop_run(magnitudes: str, reference: bool) -> None:
    import numpy as np
    import torch
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from magdash.sources.builtin import builtin_model_path
    from magdash.stimuli import PAPER_CARRIERS, StimulusSet, parse_magnitudes, token_indices_for_span

    hf_logging.set_verbosity_error()
    path = builtin_model_path("minilm")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    loader = AutoModelForCausalLM if reference else AutoModel
    model = loader.from_pretrained(path, local_files_only=True).eval()
    model.config.output_hidden_states = True
    stimuli = StimulusSet("bench", PAPER_CARRIERS, tuple(parse_magnitudes(magnitudes)))
    kept = []
    with torch.no_grad():
        for item in stimuli.items:
            encoded = tokenizer(item.sentence, return_offsets_mapping=True, return_tensors="pt")
            offsets = encoded.pop("offset_mapping")[0].tolist()
            index = token_indices_for_span(offsets, item.start, item.end, "last")[0]
            if reference:
                encoded = tokenizer(item.sentence, return_tensors="pt")
            hidden = model(**encoded).hidden_states
            vectors = np.zeros((len(hidden), hidden[0].shape[-1]), dtype=np.float32)
            for layer, states in enumerate(hidden):
                vector = states[0, index].float().cpu().numpy()
                if reference and (np.isnan(vector).any() or not vector.any()):
                    vector[:] = np.nan
                vectors[layer] = vector
            kept.append(vectors)
    assert len(kept) == len(stimuli.items)


def time_command(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("bench", "in-process", "floor", "loop", "lean-loop"), default="bench")
    parser.add_argument("--magnitudes", default="1-1000")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu", help="--mode in-process only: cpu, cuda, mps or auto")
    args = parser.parse_args()
    if args.mode == "floor":
        floor_run(args.magnitudes, args.batch_size)
        return
    if args.mode == "in-process":
        in_process(args.magnitudes, args.batch_size, args.repeats, args.device)
        return
    if args.mode in ("loop", "lean-loop"):
        loop_run(args.magnitudes, reference=args.mode == "loop")
        return
    python = sys.executable
    times: dict[str, list[float]] = {"magdash": [], "floor": [], "loop": [], "lean-loop": []}
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as folder:
            store = str(Path(folder) / "bench.duckdb")
            times["magdash"].append(time_command([
                python, "-m", "magdash", "extract", "--model", "minilm", "--magnitudes", args.magnitudes,
                "--stimuli", "bench", "--store", store, "--quiet", "--device", "cpu",
                "--batch-size", str(args.batch_size),
            ]))
        times["floor"].append(time_command([python, __file__, "--mode", "floor", "--magnitudes", args.magnitudes,
                                            "--batch-size", str(args.batch_size)]))
        for loop in ("loop", "lean-loop"):
            times[loop].append(time_command([python, __file__, "--mode", loop, "--magnitudes", args.magnitudes]))
        print(f"repeat {repeat + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    medians = {k: statistics.median(v) for k, v in times.items()}
    print("median whole-process seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in medians.items()))
    print(f"magdash / floor = {medians['magdash'] / medians['floor']:.3f}  (target <= 1.25)")
    print(f"loop / magdash  = {medians['loop'] / medians['magdash']:.2f}  (target >= 5)")
    print(f"lean-loop / magdash = {medians['lean-loop'] / medians['magdash']:.2f}")


if __name__ == "__main__":
    main()
