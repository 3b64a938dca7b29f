"""Spectra of every layer of a synthetic 4096-d, 33-layer model (speed target: under 3 minutes).

Per layer, N = 10,000 token vectors (float32, an isotropic bulk with a few planted spikes and
a non-zero mean) are fed in batches of 1,024 to a ``LayerAccumulator`` (online float64
covariance + Omega values), then the 4096 x 4096 covariance is diagonalised (a CUDA GPU via
torch when present, LAPACK otherwise) and the MP fit and Omega summary are computed. Making
the synthetic vectors is not timed. With ``--tokens`` below ``--dim`` the Gram path is used.

Target: all layers in under 3 minutes on 2 CPU cores.
Run: ``python bench/phase_spectra.py [--layers 33] [--dim 4096] [--tokens 10000]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from magdash.depth_statistics.accumulate import LayerAccumulator
from magdash.depth_statistics.omega import summarize_omega
from magdash.depth_statistics.spectrum import fit_spectrum

TARGET_SECONDS = 180.0
BATCH = 1024


def synthetic_layer(base: np.ndarray, layer: int, rng: np.random.Generator) -> np.ndarray:
    """The shared noise block plus ``layer % 6`` planted spikes and a layer-specific offset."""
    n_spikes = layer % 6
    vectors = base + rng.normal(0.0, 2.0, base.shape[1]).astype(np.float32)
    if n_spikes:
        loadings = rng.standard_normal((base.shape[0], n_spikes)).astype(np.float32) * 6.0
        directions = np.linalg.qr(rng.standard_normal((base.shape[1], n_spikes)))[0].T.astype(np.float32)
        vectors += loadings @ directions
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=33)
    parser.add_argument("--dim", type=int, default=4096)
    parser.add_argument("--tokens", type=int, default=10_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    base = rng.standard_normal((args.tokens, args.dim), dtype=np.float32)
    timings = {"accumulate": 0.0, "eigenvalues": 0.0, "fit + Omega summary": 0.0}
    wrong, cpu_seconds = 0, 0.0
    for layer in range(args.layers):
        vectors = synthetic_layer(base, layer, rng)
        started, cpu_started = time.perf_counter(), time.process_time()
        accumulator = LayerAccumulator(args.dim)
        for start in range(0, args.tokens, BATCH):
            accumulator.add(vectors[start:start + BATCH])
        accumulator.covariance()  # merges the rows still buffered, so they count as accumulation
        accumulated = time.perf_counter()
        sample = accumulator.finish(layer)
        diagonalised = time.perf_counter()
        fit = fit_spectrum(sample.eigenvalues, sample.dim, sample.count)
        summarize_omega(sample.omegas)
        finished = time.perf_counter()
        cpu_seconds += time.process_time() - cpu_started
        timings["accumulate"] += accumulated - started
        timings["eigenvalues"] += diagonalised - accumulated
        timings["fit + Omega summary"] += finished - diagonalised
        wrong += fit.n_spikes != layer % 6
        print(f"layer {layer:2d}: {finished - started:5.2f} s (accumulate {accumulated - started:.2f}, "
              f"eigenvalues {diagonalised - accumulated:.2f}), {fit.n_spikes} spikes "
              f"(planted {layer % 6}), path {'Gram' if args.tokens < args.dim else 'covariance'}",
              flush=True)
    total = sum(timings.values())
    print(f"\n{args.layers} layers, d = {args.dim}, N = {args.tokens}, {os.cpu_count()} CPU cores")
    for stage, seconds in timings.items():
        print(f"  {stage:22s} {seconds:7.1f} s")
    print(f"  {'total':22s} {total:7.1f} s   target < {TARGET_SECONDS:.0f} s: "
          f"{'met' if total < TARGET_SECONDS else 'MISSED'} ({total / TARGET_SECONDS:.2f}x of the budget)")
    print(f"  process CPU time (all threads) {cpu_seconds:.1f} s; a busy machine inflates wall time")
    print(f"  layers whose spike count differs from the planted one: {wrong}")


if __name__ == "__main__":
    main()
