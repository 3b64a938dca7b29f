"""Probes: is magnitude linearly decodable from a layer, and how noisy is the decoded magnitude?

Beside the variability measures (:mod:`magdash.variability`), which measure the spread between
carriers in activation units, the probes read log n (and n) out of each layer with a ridge
regression and ask (docs/science.md, "Probes: decodability and decoded scalar variability"):

- does the read-out generalise to a new context (held-out carriers) and interpolate to new
  magnitudes (held-out magnitudes)? R², Spearman, the error in log units, with intervals, for
  the real labels and for a control task (Hewitt & Liang 2019), and the selectivity;
- is the axis a probe reads the geometry's magnitude axis (cosine with the centroids' PC1)?
- how does the spread of the *decoded* magnitude across carriers scale with n (the decoded
  Weber fraction SD(n-hat)/n and the slope of log SD(n-hat) on log n)?

Modules: :mod:`~magdash.probes.probe_params` (:class:`ProbeParams`), :mod:`~magdash.probes.labels`
(labels, control task, input checks), :mod:`~magdash.probes.basis` (exact and reduced
coordinates), :mod:`~magdash.probes.crossval` (folds and ridge fits), :mod:`~magdash.probes.scores`
(held-out scores, bootstrap), :mod:`~magdash.probes.decoded` (decoded variability),
:mod:`~magdash.probes.result` (tables, payload), :mod:`~magdash.probes.probe` (:func:`probe_layer`,
:func:`run_probes`). scikit-learn is imported only when a probe is fitted, so importing this
package (for :class:`ProbeParams`, say) stays fast.
"""
