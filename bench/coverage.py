"""Coverage of alpha's confidence interval by method, on studies with a planted alpha.

Not a timing: each CI method of :data:`magdash.variability.analysis_params.CI_METHODS` is run by the analysis
engine (:func:`magdash.variability.analysis.run_analysis`) on the same ``--draws`` studies drawn as
vectors by the design simulator (:func:`magdash.controls_statistics.simulate.draw_vectors`; the paper's 26
magnitudes x 5 carriers, planted alpha -0.05, tau 0.05, effective dimension 16), and the share of
95% intervals of the core layer's V_eucl alpha that hold the planted value is printed with its
Monte Carlo 95% band. ``docs/science.md`` quotes the table.
Run: ``python bench/coverage.py [--draws 1000] [--n-boot 1000]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

try:
    import magdash  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from magdash.controls_statistics.design import wilson
from magdash.controls_statistics.simulate import Calibration, draw_vectors
from magdash.stimuli import PAPER_MAGNITUDES
from magdash.variability.analysis import run_analysis
from magdash.variability.analysis_params import CI_METHODS, AnalysisParams

PLANTED = -0.05


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    magnitudes = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    calibration = Calibration.planted(3, tau=0.05, dimension=16)
    rng = np.random.default_rng(2026)
    studies = [draw_vectors(calibration, magnitudes, alpha=PLANTED, n_carriers=5, n_layers=3, rng=rng)
               for _ in range(args.draws)]
    print(f"{args.draws} studies, planted alpha {PLANTED}, {args.n_boot} resamples; 95% intervals of V_eucl's alpha")
    print(f"{'method':<12} {'coverage':>8} {'MC band':>16} {'mean width':>10}")
    for method in CI_METHODS:
        covered, widths = 0, []
        for seed, layers in enumerate(studies):
            params = AnalysisParams(measures=("eucl",), n_boot=args.n_boot, core_layers=(1,), seed=seed,
                                    ci_method=method)
            fit = run_analysis(((str(i), x) for i, x in enumerate(layers)), magnitudes, n_blocks=2,
                               params=params).fit("eucl", 1)
            covered += fit.ci_low <= PLANTED <= fit.ci_high
            widths.append(fit.ci_high - fit.ci_low)
        low, high = wilson(covered, args.draws)
        print(f"{method:<12} {covered / args.draws:>8.3f} [{float(low):.3f}, {float(high):.3f}] {np.mean(widths):>10.4f}")


if __name__ == "__main__":
    main()
