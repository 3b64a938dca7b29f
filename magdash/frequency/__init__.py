"""Number frequency: what counts as a number, corpus counts, sources, distribution fits and E5.

- :mod:`~magdash.frequency.rule`: what counts as a number (the paper's rule for RE2, number words);
- :mod:`~magdash.frequency.corpus`: streaming corpus counting with DuckDB (in memory, over the
  user's files; it never opens the store);
- :mod:`~magdash.frequency.sources`: built-in, corpus and CSV sources with provenance;
- :mod:`~magdash.frequency.count_fits`: power-law, exponential and log-log fits, plot data;
- :mod:`~magdash.frequency.e5`: E5, the partial correlation of V(n) with log(count(n) + 1) given log n,
  and the raw one.
"""

import importlib

_EXPORTS: dict[str, str] = {
    "FORMATS": "magdash.frequency.corpus",
    "CorpusCounts": "magdash.frequency.corpus",
    "CountOptions": "magdash.frequency.corpus",
    "FrequencyError": "magdash.frequency.corpus",
    "count_corpus": "magdash.frequency.corpus",
    "expand_inputs": "magdash.frequency.corpus",
    "distribution_plot_data": "magdash.frequency.count_fits",
    "fit_distributions": "magdash.frequency.count_fits",
    "E5_COLUMNS": "magdash.frequency.e5",
    "E5_STATISTICS": "magdash.frequency.e5",
    "counts_for_magnitudes": "magdash.frequency.e5",
    "e5_correlation": "magdash.frequency.e5",
    "e5_summary": "magdash.frequency.e5",
    "PAPER_PATTERN": "magdash.frequency.rule",
    "number_word_values": "magdash.frequency.rule",
    "BUILTIN_SOURCES": "magdash.frequency.sources",
    "DEFAULT_SOURCE": "magdash.frequency.sources",
    "OPENWEBTEXT": "magdash.frequency.sources",
    "WORDFREQ": "magdash.frequency.sources",
    "WORDFREQ_NOTE": "magdash.frequency.sources",
    "FrequencySource": "magdash.frequency.sources",
    "builtin_source": "magdash.frequency.sources",
    "check_source_name": "magdash.frequency.sources",
    "corpus_source": "magdash.frequency.sources",
    "counts_table": "magdash.frequency.sources",
    "read_counts_csv": "magdash.frequency.sources",
}
"""Each name above: the module that defines it, imported on first use (``freq corr``'s options are built
from :mod:`~magdash.frequency.e5_params` without DuckDB, pandas or SciPy)."""

__all__ = [*_EXPORTS]  # pyright: ignore[reportUnsupportedDunderAll] - the names __getattr__ imports on first use


def __getattr__(name: str):
    """A name of :data:`__all__`, imported from its module the first time it is used."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'magdash.frequency' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
