"""The public Python API, exposed by :mod:`magdash` (``import magdash as md``).

The names are listed in ``magdash.__all__``; the modules:

- :mod:`~magdash.api.analyses`: extraction and every analysis, on a store or on arrays;
- :mod:`~magdash.api.adapters`: arrays from a TransformerLens cache, nnsight saves or any
  per-layer hidden states, at the number tokens of the stimuli;
- :mod:`~magdash.api.charts`: the charts the app draws, from the results.

The api is the top layer: it may import every other; nothing imports it.
"""
