"""Probes: is magnitude linearly decodable from a layer, and how noisy is the decoded magnitude?

Beside the variability measures (:mod:`magdash.variability`), which measure the spread between
carriers in activation units, the probes read log n (and n) out of each layer with a ridge
regression and ask (docs/science.md, "Probes: decodability and decoded scalar variability"):

- does the read-out generalise to a new context (held-out carriers) and interpolate to new
  magnitudes (held-out magnitudes)? R², Spearman, the error in log units, with intervals, for
  the real labels and for a control task (Hewitt & Liang 2019), and the selectivity;
- is the axis a probe reads the geometry's magnitude axis (cosine with the centroids' PC1)?
- how much of that R² would a read-out of the numbers' digit count (and token count) alone give,
  and how well does the probe do within those strata?
- which layers decode unseen magnitudes best, the choice of the best accounted for?
- how does the spread of the *decoded* magnitude across carriers scale with n (the slope beta of
  log SD(n-hat) on log n), against what a read-out of constant error gives for the same design?

Modules: :mod:`~magdash.probes.probe_params` (:class:`ProbeParams`), :mod:`~magdash.probes.labels`
(labels, control task, input checks), :mod:`~magdash.probes.basis` (exact and reduced
coordinates), :mod:`~magdash.probes.crossval` (folds and ridge fits), :mod:`~magdash.probes.scores`
(held-out scores, bootstrap), :mod:`~magdash.probes.baseline` (the strata's baseline, R² within
strata), :mod:`~magdash.probes.decoded` (decoded variability, its constant-error null),
:mod:`~magdash.probes.selection` (the band of best layers), :mod:`~magdash.probes.result` (tables,
payload), :mod:`~magdash.probes.findings` (the sentences), :mod:`~magdash.probes.probe`
(:func:`probe_layer`, :func:`run_probes`). scikit-learn is imported only when a probe is fitted, so importing this
package (for :class:`ProbeParams`, say) stays fast.
"""
