"""All-token phase diagnostics vs the forward passes alone, on the built-in ``minilm``.

Workload: a document of carrier sentences (the paper's five, numbers 1, 2, 3, ...) long
enough for ``--tokens`` real tokens (10,000 by default), cut to the model's context with
:func:`magdash.runs.depth_runs.document_chunks`. Three runs over the same chunks, in one process,
interleaved and repeated, medians reported:

* ``forward``: the same sorted batches through the model, nothing captured;
* ``capture``: :func:`magdash.extraction.capture_all_tokens` with a consumer that does nothing
  (hooks, pad/special masking, copies to the CPU);
* ``diagnostics``: :func:`magdash.runs.depth_runs.depth_from_texts` — capture, online covariance and
  Omega per layer, eigenvalues, MP fits, dip tests and the 1,000-resample gamma_c bootstrap.

Target: diagnostics <= 1.5x forward.
Run: ``python bench/phase.py [--tokens 10000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

TARGET_RATIO = 1.5


def make_chunks(loaded, tokens: int) -> tuple[list[str], int]:
    from magdash.runs.depth_runs import document_chunks
    from magdash.stimuli import PAPER_CARRIERS

    sentences, n = [], 0
    tokenizer = loaded.tokenizer
    while True:
        batch = [PAPER_CARRIERS[i % len(PAPER_CARRIERS)].replace("{n}", str(n + i)) for i in range(200)]
        sentences.extend(batch)
        n += 200
        chunks = document_chunks(loaded, " ".join(sentences))
        counts = [len(ids) for ids in tokenizer(chunks, add_special_tokens=False)["input_ids"]]
        if sum(counts) >= tokens:
            break
    # Whole chunks, until the token budget is met.
    kept, total = [], 0
    for chunk, count in zip(chunks, counts, strict=True):
        kept.append(chunk)
        total += count
        if total >= tokens:
            break
    return kept, total


def forward_only(loaded, chunks: list[str], batch_size: int) -> None:
    import torch

    encoded = loaded.tokenizer(chunks, truncation=True, max_length=loaded.max_length)
    order = np.argsort([len(ids) for ids in encoded["input_ids"]], kind="stable")
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chosen = [chunks[i] for i in order[start:start + batch_size]]
            batch = loaded.tokenizer(chosen, padding=True, truncation=True, max_length=loaded.max_length,
                                     return_tensors="pt")
            loaded.model(**batch)


def capture_only(loaded, chunks: list[str], batch_size: int) -> None:
    from magdash.extraction import capture_all_tokens

    capture_all_tokens(loaded, chunks, lambda layer, vectors: None, batch_size=batch_size)


def diagnostics(loaded, chunks: list[str], batch_size: int) -> None:
    from magdash.depth_statistics.depth_params import DepthParams
    from magdash.runs.depth_runs import depth_from_texts

    depth_from_texts(loaded, chunks, batch_size=batch_size, params=DepthParams(n_boot=1000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    import torch

    from magdash.sources import load_model

    loaded = load_model("minilm", device="cpu")
    chunks, n_tokens = make_chunks(loaded, args.tokens)
    runs = {"forward": forward_only, "capture": capture_only, "diagnostics": diagnostics}
    for run in runs.values():  # warm-up: first-call costs (allocator, lazy imports) are not measured
        run(loaded, chunks[:2], args.batch_size)
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run(loaded, chunks, args.batch_size)
            seconds[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) for name, values in seconds.items()}
    print(f"minilm, {n_tokens} tokens in {len(chunks)} chunks of <= {loaded.max_length} tokens, "
          f"batch {args.batch_size}, {torch.get_num_threads()} torch threads, {args.repeats} repeats")
    for name, value in median.items():
        print(f"  {name:12s} {value:6.2f} s  (runs: {', '.join(f'{v:.2f}' for v in seconds[name])})")
    ratio = median["diagnostics"] / median["forward"]
    print(f"diagnostics / forward = {ratio:.2f}x  (target <= {TARGET_RATIO}x: "
          f"{'met' if ratio <= TARGET_RATIO else 'MISSED'});  "
          f"diagnostics / capture = {median['diagnostics'] / median['capture']:.2f}x")


if __name__ == "__main__":
    main()
