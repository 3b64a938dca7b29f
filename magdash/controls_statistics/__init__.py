"""Robustness controls of a scalar-variability result, and the study-design simulator.

- :mod:`~magdash.controls_statistics.carriers`: leave-one-carrier-out alpha and the carrier ICC(3,k);
- :mod:`~magdash.controls_statistics.permutation`: the permutation null of alpha;
- :mod:`~magdash.controls_statistics.variants`: another dtype, weights file or token position, and ``@random``;
- :mod:`~magdash.controls_statistics.controls`: all of them for one model, with verdicts;
- :mod:`~magdash.controls_statistics.simulate` and :mod:`~magdash.controls_statistics.design`: the study-design simulator;
- :mod:`~magdash.controls_statistics.controls_params`: :class:`~magdash.controls_statistics.controls_params.ControlsParams` and
  :class:`~magdash.controls_statistics.controls_params.DesignParams`, light to import.

The runs over a store, cached, are :mod:`magdash.runs.controls_runs` and :mod:`magdash.runs.design_runs`.
"""
