"""Comparison-trials benchmark: ``run_trials`` vs the floor, the same forward passes alone.

Workload: the paper's design on the built-in ``smollm2`` (SmolLM2-135M-Instruct, its chat
template applied): 5 references x 6 ratios x 2 positions x 5 templates (the paper's four wordings
and one more) = 300 prompts. One process loads the model once and times, in turn and repeated:

* ``floor``: the prompts' batches (built as ``run_trials`` builds them: chat template, tokens,
  longest first) through :func:`magdash.trial_extraction.last_logits`, nothing else;
* ``run_trials``: :func:`magdash.trial_extraction.run_trials` of the design into a fresh store
  (trials expanded, chat template, option tokens, the same passes, scores, the store's writes).

Reported as medians side by side and their ratio. Target: run_trials within 1.2x of the floor.
Run: ``python bench/behave.py [--repeats 3] [--device cpu] [--batch-size 32]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from magdash.comparison_stimuli import PAPER_TEMPLATES, ComparisonSet, ComparisonTemplate
from magdash.extract_params import DEFAULT_BATCH_SIZE

BENCH_TEMPLATES = (*PAPER_TEMPLATES,
                   ComparisonTemplate("greater", "Which number is greater: A) {a} or B) {b}? Answer with only A or B."))
"""The paper's four wordings and a fifth, for the issue's 5 templates."""


def bench_design() -> ComparisonSet:
    """The benchmark's 300 trials."""
    return ComparisonSet(name="bench", templates=BENCH_TEMPLATES)


def floor(loaded, design: ComparisonSet, batch_size: int) -> float:
    """The forward passes of ``design``'s prompts alone, batched as ``run_trials`` batches them."""
    from magdash.trial_extraction import applies_chat_template, batches, last_logits, prompt_texts, prompt_token_ids

    chat = applies_chat_template(loaded.tokenizer, design)
    token_ids = prompt_token_ids(loaded, prompt_texts(loaded.tokenizer, list(design.trials()["question"]), chat), chat)
    started = time.perf_counter()
    rows = 0
    for indices in batches(token_ids, batch_size):
        rows += last_logits(loaded, [token_ids[index] for index in indices]).shape[0]
    assert rows == design.n_trials
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description="Comparison-trials benchmark: run_trials vs the floor.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    args = parser.parse_args()

    from magdash.extract_params import ExtractParams
    from magdash.sources.resolve import resolve_model
    from magdash.store import Store
    from magdash.trial_extraction import load_for_trials, run_trials

    params = ExtractParams(device=args.device, batch_size=args.batch_size)
    loaded = load_for_trials(resolve_model("smollm2"), params)
    design = bench_design()
    times: dict[str, list[float]] = {"floor": [], "run_trials": []}
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats):
            times["floor"].append(floor(loaded, design, args.batch_size))
            store = Store(Path(folder) / f"bench-{repeat}.duckdb")
            started = time.perf_counter()
            run = run_trials(loaded, design, store, params, name="smollm2")
            times["run_trials"].append(time.perf_counter() - started)
            assert run.n_new == design.n_trials
            print(f"repeat {repeat + 1}: floor {times['floor'][-1]:.2f} s, run_trials {times['run_trials'][-1]:.2f} s",
                  flush=True)
    medians = {key: statistics.median(values) for key, values in times.items()}
    print(f"{design.n_trials} trials on smollm2 ({args.device}, batch {args.batch_size}, chat template "
          f"{run.chat_template_applied}), medians of {args.repeats}: floor {medians['floor']:.2f} s, "
          f"run_trials {medians['run_trials']:.2f} s: run_trials / floor = "
          f"{medians['run_trials'] / medians['floor']:.3f}  (target <= 1.2)")


if __name__ == "__main__":
    main()
