"""Sweeps: one plan of models x stimulus sets x dtypes x token positions, run in-process or on Ray.

- :mod:`~magdash.sweep.plan`: the plan file (TOML) and its cells;
- :mod:`~magdash.sweep.tasks`: the registry of task kinds (extract, analyze, depth, controls, probe);
- :mod:`~magdash.sweep.worker`: an extraction as a store-free job and the driver's registration;
- :mod:`~magdash.sweep.runner`: :func:`~magdash.sweep.runner.load_plan`, :func:`~magdash.sweep.runner.run_sweep`, the summary;
- :mod:`~magdash.sweep.sweep_params`: :class:`~magdash.sweep.sweep_params.SweepParams`, how a plan runs;
- :mod:`~magdash.sweep.ray_backend`: the Ray backend (Ray is imported there only).
"""
