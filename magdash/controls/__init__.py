"""Robustness controls of a scalar-variability result, and the study-design simulator.

- :mod:`~magdash.controls.carriers`: leave-one-carrier-out alpha and the carrier ICC(3,k);
- :mod:`~magdash.controls.permutation`: the permutation null of alpha;
- :mod:`~magdash.controls.variants`: another dtype, weights file or token position, and ``@random``;
- :mod:`~magdash.controls.run`: all of them for a stored model, with verdicts, cached.
"""

from magdash.controls.run import CONTROLS_VERSION, ControlsParams, ControlsResult, Verdict, run_controls

__all__ = ["CONTROLS_VERSION", "ControlsParams", "ControlsResult", "Verdict", "run_controls"]
