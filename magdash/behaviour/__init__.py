"""A model's behaviour in number comparisons (statistics layer): pure functions on the trials frame.

Cacioli 2026 (arXiv 2603.20642, Paradigm B) asks a model which of two numbers is larger and fits a
psychometric function of the ratio to its answers. This package holds the fits and nothing else (no store,
no model): :func:`~magdash.behaviour.behaviour_result.fit_behaviour` turns the trials frame
(:mod:`magdash.behaviour.trial_frames`) into a :class:`~magdash.behaviour.behaviour_result.BehaviourResult` under
the choices of :class:`~magdash.behaviour.behaviour_params.BehaviourParams`:

- :mod:`~magdash.behaviour.trial_frames`: the trials frame, measured trials, position-corrected accuracy and bias;
- :mod:`~magdash.behaviour.psychometric`: magdash's two-alternative function, its fit, Weber fraction and
  bootstrap (choice and graded variants);
- :mod:`~magdash.behaviour.paper`: the paper's function and procedure exactly;
- :mod:`~magdash.behaviour.behaviour_fits`: both, for every task and reference (``fits``, ``curves``);
- :mod:`~magdash.behaviour.weber_law`: the Weber-law slope, model-vs-model deltas, behaviour against
  representation;
- :mod:`~magdash.behaviour.published`: the paper's published trial files read into the trials frame.
"""
