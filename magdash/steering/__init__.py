"""Steering along the magnitude direction (statistics layer): is the magnitude code used?

Cacioli 2026 (arXiv 2603.20642, Paradigm D; ``scripts/paradigm_d_causal.py`` in synthiumjp/weber) adds
dose x (the magnitude direction) to the residual stream at a number's token in comparison prompts and
measures how much the model's choice moves, against the same push along random directions. This package
holds the pure parts (no store, no model, no torch):

- :mod:`~magdash.steering.steer_params`: :class:`~magdash.steering.steer_params.SteerParams`, every choice;
- :mod:`~magdash.steering.directions`: the magnitude direction per layer (the probe's unit weight vector
  or PC1 of the centroids), the dose unit, the random and orthogonal null directions;
- :mod:`~magdash.steering.summary`: a steering frame summarised per layer and dose;
- :mod:`~magdash.steering.steer_result`: :class:`~magdash.steering.steer_result.SteerResult` and
  ``STEER_VERSION``.
"""
