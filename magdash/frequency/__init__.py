"""Number frequency: what counts as a number, corpus counts, sources, distribution fits and E5.

- :mod:`~magdash.frequency.rule`: what counts as a number (the paper's rule for RE2, number words);
- :mod:`~magdash.frequency.corpus`: streaming corpus counting with DuckDB (in memory, over the
  user's files; it never opens the store);
- :mod:`~magdash.frequency.sources`: built-in, corpus and CSV sources with provenance;
- :mod:`~magdash.frequency.count_fits`: power-law, exponential and log-log fits, plot data;
- :mod:`~magdash.frequency.e5`: E5, the partial correlation of V(n) with log(count(n) + 1) given log n,
  and the raw one.
"""

from magdash.frequency.corpus import (
    FORMATS,
    CorpusCounts,
    CountOptions,
    FrequencyError,
    count_corpus,
    expand_inputs,
)
from magdash.frequency.count_fits import distribution_plot_data, fit_distributions
from magdash.frequency.e5 import (
    E5_COLUMNS,
    E5_STATISTICS,
    counts_for_magnitudes,
    e5_correlation,
    e5_summary,
)
from magdash.frequency.rule import PAPER_PATTERN, number_word_values
from magdash.frequency.sources import (
    BUILTIN_SOURCES,
    DEFAULT_SOURCE,
    OPENWEBTEXT,
    WORDFREQ,
    WORDFREQ_NOTE,
    FrequencySource,
    builtin_source,
    check_source_name,
    corpus_source,
    counts_table,
    read_counts_csv,
)

__all__ = [
    "BUILTIN_SOURCES", "DEFAULT_SOURCE", "E5_COLUMNS", "E5_STATISTICS", "FORMATS", "OPENWEBTEXT", "PAPER_PATTERN", "WORDFREQ",
    "WORDFREQ_NOTE", "CorpusCounts", "CountOptions", "FrequencyError", "FrequencySource", "builtin_source",
    "check_source_name", "corpus_source", "count_corpus", "counts_for_magnitudes", "counts_table", "distribution_plot_data",
    "e5_correlation", "e5_summary", "expand_inputs", "fit_distributions", "number_word_values", "read_counts_csv",
]
