"""Scalar variability of number representations (Cacioli 2026, arXiv 2604.04469; geometry:
arXiv 2603.20642), the steps of one analysis:

- :mod:`~magdash.variability.measures`: V_eucl, V_residual, V_proj, V_pairwise, V_trace, CV and
  the on/off-axis variances, arrays in, arrays out;
- :mod:`~magdash.variability.fits`: OLS and Theil-Sen slopes of log V on log n, the vectorised
  bootstrap, the outlier rule, AICc noise models;
- :mod:`~magdash.variability.hypotheses`: the core band, H1-H4, E3, E4, the programme verdict;
- :mod:`~magdash.variability.stimulus_bootstrap`: inference at the unit of replication, the
  stimuli: carriers and magnitudes resampled once for every core layer (and both models of a
  comparison), the interval and p of the mean core alpha;
- :mod:`~magdash.variability.compare`: two models by depth fraction, joint-bootstrap slope
  differences, the stimulus bootstrap of the mean difference, Wilcoxon;
- :mod:`~magdash.variability.geometry`: centroid RDMs, RSA, PC1;
- :mod:`~magdash.variability.conventions`: magdash's conventions and the paper script's, each
  one table of rules, and the paper's consistency checks;
- :mod:`~magdash.variability.artifacts`: what every analysis looks for before its numbers are shown;
- :mod:`~magdash.variability.analysis`: all of them over one model's vectors, layer by layer, with
  :class:`~magdash.variability.analysis.AnalysisParams`;
- :mod:`~magdash.variability.massive_control`: alpha with the massive-activation dimensions dropped,
  as a control beside the raw alpha.

The runs over a store, cached, are :mod:`magdash.runs.analysis_runs`.
"""
