"""Depth-wise "phase transition" diagnostics of hidden states (Alpay & Kilictas, arXiv 2601.19942).

- :mod:`~magdash.depth_statistics.omega`: object integrity Omega, its distribution and the dip test;
- :mod:`~magdash.depth_statistics.spectrum`: covariance spectra, the Marchenko-Pastur fit, spikes,
  effective rank and participation ratio;
- :mod:`~magdash.depth_statistics.accumulate`: per-layer samples, streamed (online covariance) so that
  all-token runs keep no vectors, in the view of the massive dimensions asked for;
- :mod:`~magdash.depth_statistics.massive_dims`: massive-activation dimensions and the keep/drop/standardise views;
- :mod:`~magdash.depth_statistics.diagnostics`: every per-layer diagnostic and gamma_c from the samples;
- :mod:`~magdash.depth_statistics.depth_params`: :class:`~magdash.depth_statistics.depth_params.DepthParams`, light to import;
- :mod:`~magdash.depth_statistics.texts`: prompt documents cut to a model's context.

The runs over stored vectors or a model's forward passes, cached, are :mod:`magdash.runs.depth_runs`.
"""
