"""Runs over a store: compute a result from stored vectors, or load it from the store's cache.

Each analysis kind is declared once in :mod:`~magdash.runs.kinds` (:data:`~magdash.runs.kinds.ANALYSIS_KINDS`).
Each module runs one kind of result over a :class:`~magdash.store.vectors.VectorSource` (a stored
model, or arrays: one path), and over a store through the one cached-result path of
:mod:`~magdash.runs.cache`, which keeps the result's payload and its metric rows
(:mod:`~magdash.runs.rows`) in one transaction:

- :mod:`~magdash.runs.analysis_runs`: the scalar-variability analysis, comparisons of two models,
  the analysis without the massive dimensions;
- :mod:`~magdash.runs.controls_runs`: the robustness controls, variants and ``@random``;
- :mod:`~magdash.runs.design_runs`: the study-design simulator calibrated on a stored model;
- :mod:`~magdash.runs.probe_runs`: the probes of a stored model, beside its ``@random`` control's;
- :mod:`~magdash.runs.depth_runs`: the depth diagnostics of stored vectors or of every token of prompts;
- :mod:`~magdash.runs.frequency_runs`: stored frequency sources and E5;
- :mod:`~magdash.reports`: reports over a store;
- :mod:`~magdash.runs.backfill`: the metric rows of results cached before their tables existed.

The statistics themselves are the array-in functions of :mod:`magdash.variability`,
:mod:`magdash.controls`, :mod:`magdash.phase`, :mod:`magdash.frequency` and :mod:`magdash.probes`;
nothing here computes one.
"""
