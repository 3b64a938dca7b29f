"""Robustness controls of a scalar-variability result, and the study-design simulator.

- :mod:`~magdash.controls.carriers`: leave-one-carrier-out alpha and the carrier ICC(3,k);
- :mod:`~magdash.controls.permutation`: the permutation null of alpha;
- :mod:`~magdash.controls.variants`: another dtype, weights file or token position, and ``@random``;
- :mod:`~magdash.controls.robustness`: all of them for one model, with verdicts;
- :mod:`~magdash.controls.simulate` and :mod:`~magdash.controls.design`: the study-design simulator;
- :mod:`~magdash.controls.controls_params`: :class:`~magdash.controls.controls_params.ControlsParams` and
  :class:`~magdash.controls.controls_params.DesignParams`, light to import.

The runs over a store, cached, are :mod:`magdash.runs.controls_runs` and :mod:`magdash.runs.design_runs`.
"""
