"""Probes of every layer of a synthetic 33-layer, 4096-d model, in two designs (speed targets).

- the paper's design, 26 magnitudes x 5 carriers (130 vectors a layer, the exact path):
  target a few seconds for all layers;
- a large design, 1,000 magnitudes x 20 carriers (20,000 vectors a layer, the reduced path):
  target under 60 s for all layers on 2 CPU cores.

Each layer's vectors (float32) hold log n along a layer-specific unit direction, carrier
offsets, a few high-variance nuisance directions and isotropic noise; they are generated one
layer at a time, outside the timed region, and fed to :func:`magdash.probes.run_probes` by a
generator, as a store would. scikit-learn is imported first (once per process; its time is
printed, not counted). Each design runs ``--repeats`` times; the median is printed, with
seconds per layer, the CPU time of the process, the path used and the median held-out R² of
the log probe (a sanity check that the probes read the planted code). The machine may be
shared: wall time then grows while CPU time does not, so both are printed.

Run: ``python bench/probes.py [--layers 33] [--dim 4096] [--repeats 3] [--designs paper,large]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from magdash.probes.probe import run_probes
from magdash.probes.probe_params import ProbeParams

DESIGNS = {"paper": (26, 5, 5.0), "large": (1000, 20, 60.0)}  # magnitudes, carriers, target seconds
PAPER_MAGNITUDES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500,
                    700, 1000]


def design_magnitudes(n_magnitudes: int) -> np.ndarray:
    if n_magnitudes == len(PAPER_MAGNITUDES):
        return np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    return np.arange(1, n_magnitudes + 1, dtype=np.float64)


class SyntheticModel:
    """Layers of one design: a fixed noise block, and per layer a new code direction and nuisances."""

    def __init__(self, n_magnitudes: int, n_carriers: int, dim: int, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.magnitudes = design_magnitudes(n_magnitudes)
        self.noise = self.rng.standard_normal((n_magnitudes, n_carriers, dim), dtype=np.float32)
        self.carrier_offsets = self.rng.standard_normal((n_carriers, dim), dtype=np.float32) * 0.5

    def layer(self, layer: int) -> np.ndarray:
        n_magnitudes, n_carriers, dim = self.noise.shape
        directions = np.linalg.qr(self.rng.standard_normal((dim, 4)))[0].T.astype(np.float32)
        code = np.log(self.magnitudes).astype(np.float32) * (4.0 + layer / 2.0)
        vectors = self.noise * np.float32(0.5) + self.carrier_offsets[None]
        vectors += code[:, None, None] * directions[0]
        nuisance = self.rng.standard_normal((n_magnitudes, n_carriers, 3), dtype=np.float32) * 8.0
        vectors += nuisance @ directions[1:]
        return vectors


def made_layers(model: SyntheticModel, n_layers: int, making: dict[str, float]):
    """The model's layers one at a time, adding the time spent making them to ``making``."""
    for layer in range(n_layers):
        started, cpu_started = time.perf_counter(), time.process_time()
        vectors = model.layer(layer)
        making["wall"] += time.perf_counter() - started
        making["cpu"] += time.process_time() - cpu_started
        yield f"layer {layer}", vectors
        del vectors


def run_design(name: str, n_layers: int, dim: int, repeats: int) -> None:
    n_magnitudes, n_carriers, target = DESIGNS[name]
    model = SyntheticModel(n_magnitudes, n_carriers, dim)
    params = ProbeParams()
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        making = {"wall": 0.0, "cpu": 0.0}
        started, cpu_started = time.perf_counter(), time.process_time()
        result = run_probes(made_layers(model, n_layers, making), model.magnitudes, params, n_layers=n_layers)
        # The synthetic vectors are made inside the run's generator: their time is taken out.
        walls.append(time.perf_counter() - started - making["wall"])
        cpus.append(time.process_time() - cpu_started - making["cpu"])
    wall, cpu = float(np.median(walls)), float(np.median(cpus))
    r2 = result.score_table("carrier", "log", "real")["r2"]
    path = "exact" if result.layers["exact"].all() else f"reduced ({int(result.layers['n_features'].max())} PCs)"
    print(f"{name}: {n_magnitudes} magnitudes x {n_carriers} carriers x {n_layers} layers x {dim} d, path {path}")
    print(f"  wall {wall:7.2f} s (median of {repeats}: {', '.join(f'{w:.2f}' for w in walls)}), "
          f"{wall / n_layers:.3f} s per layer; target < {target:.0f} s: "
          f"{'met' if wall < target else 'MISSED'} ({wall / target:.2f}x of the budget)")
    print(f"  process CPU time (all threads) {cpu:.2f} s; a busy machine inflates wall time")
    print(f"  held-out-carrier R² of the log probe: median {np.median(r2):.3f} over layers (planted code)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=33)
    parser.add_argument("--dim", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--designs", default="paper,large")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPU cores; load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    started = time.perf_counter()
    import sklearn.linear_model  # noqa: F401  (the probes import it at their first fit)
    import sklearn.model_selection  # noqa: F401
    print(f"importing scikit-learn: {time.perf_counter() - started:.2f} s, once per process, not counted below")
    for name in args.designs.split(","):
        run_design(name.strip(), args.layers, args.dim, args.repeats)
    print(f"load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
