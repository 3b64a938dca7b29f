"""Design-simulator benchmark: a 20-point H1 power curve, 1,000 studies per point.

Workload (the target's): each study is 26 magnitudes x 5 carriers x 16 core layers, analysed as
the analysis engine fits V_eucl (OLS of log V on log n, 3x-median outlier rule, bootstrap off),
then the t-test of its core alphas; 20 true alphas from 0. Noise: a planted calibration like a
7-8B decoder's core band (tau 0.05, effective dimension 64, rho 0.5).

* ``magdash``: :meth:`magdash.controls.design.Simulator.h1_curve`, every study of a point drawn
  and fitted as arrays (studies x layers x magnitudes);
* ``loop``: the same draws, fitted one study-layer at a time with
  :func:`magdash.variability.fits.fit_scaling` (the analysis engine's fit), on a subset of
  studies, and scaled to the full count;
* ``engine``: studies drawn as vectors (:func:`magdash.controls.simulate.draw_vectors`, d = 64)
  and run through :func:`magdash.variability.analysis.run_analysis` (V_eucl only, bootstrap off),
  on a few studies, scaled to the full count: what drawing V directly saves.

Both give the same alphas (checked). Then the scaling of magdash's time with the number of
studies and of layers. Target: the curve in under 60 s on the 2-core machine.
Run: ``python bench/design.py [--studies 1000] [--points 20] [--loop-studies 25]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

try:
    import magdash  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from magdash.controls.controls_params import DesignParams
from magdash.controls.design import Simulator
from magdash.controls.simulate import Calibration, draw_vectors, fit_alphas
from magdash.variability.analysis import run_analysis
from magdash.variability.analysis_params import AnalysisParams, FitRules
from magdash.variability.fits import fit_scaling


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--loop-studies", type=int, default=25)
    parser.add_argument("--engine-studies", type=int, default=5)
    args = parser.parse_args()
    calibration = Calibration.planted(16, tau=0.05, dimension=64, rho=0.5)
    params = DesignParams(n_layers=16, n_studies=args.studies, n_boot=0)
    simulator = Simulator(calibration, params)
    simulator.alphas(0.0, (0, 0))  # build the carrier-scatter pool outside the timing
    grid = np.linspace(0.0, 0.02, args.points)

    start = time.perf_counter()
    curve = simulator.h1_curve(grid)
    vectorised = time.perf_counter() - start
    print(f"magdash: {args.points}-point H1 curve x {args.studies:,} studies x 16 layers x 26 magnitudes "
          f"x 5 carriers: {vectorised:.2f} s (target < 60 s)")
    print(f"  power {curve['power'].iloc[0]:.3f} at alpha 0 (size), {curve['power'].iloc[-1]:.3f} at alpha "
          f"{grid[-1]:.3f}")

    log_v = simulator.log_v(0.01, (1, 0))[: args.loop_studies]
    start = time.perf_counter()
    looped = np.array([
        [fit_scaling(simulator.magnitudes, np.exp(layer), rules=FitRules(drop_outliers=True, n_boot=0)).alpha for layer in study]
        for study in log_v
    ])
    loop_seconds = time.perf_counter() - start
    np.testing.assert_allclose(fit_alphas(simulator.magnitudes, log_v).alpha, looped, atol=1e-12)
    loop_full = loop_seconds / args.loop_studies * args.studies * args.points
    draw_share = vectorised / args.points
    print(f"loop: fit_scaling per study-layer, {args.loop_studies} studies in {loop_seconds:.2f} s -> "
          f"{loop_full:.1f} s for the curve (fits only); loop/magdash = {loop_full / vectorised:.1f}x "
          "(same alphas to 1e-12)")
    rng = np.random.default_rng(0)
    engine_params = AnalysisParams(measures=("eucl",), n_boot=0, core_layers=tuple(range(1, 17)))
    start = time.perf_counter()
    for _ in range(args.engine_studies):
        layers = draw_vectors(calibration, simulator.magnitudes, alpha=0.01, n_carriers=5, n_layers=16, rng=rng)
        layers.insert(0, layers[0])  # an embedding layer, outside the core band
        run_analysis(((str(i), x) for i, x in enumerate(layers)), simulator.magnitudes, n_blocks=17,
                     params=engine_params)
    engine_full = (time.perf_counter() - start) / args.engine_studies * args.studies * args.points
    print(f"engine: vectors + run_analysis, {args.engine_studies} studies -> {engine_full:.0f} s for the curve; "
          f"engine/magdash = {engine_full / vectorised:.0f}x")
    print(f"scaling (one curve point, {draw_share:.3f} s at {args.studies:,} studies x 16 layers):")
    for studies, layers in ((args.studies // 2, 16), (args.studies * 2, 16), (args.studies, 32)):
        sim = Simulator(calibration, DesignParams(n_layers=layers, n_studies=studies, n_boot=0))
        sim.alphas(0.0, (0, 0))
        start = time.perf_counter()
        sim.h1_curve(grid[:2])
        seconds = (time.perf_counter() - start) / 2
        print(f"  {studies:>5,} studies x {layers} layers: {seconds:.3f} s per point "
              f"({seconds / draw_share:.2f}x)")


if __name__ == "__main__":
    main()
