"""magdash: geometry and noise of number representations in transformer language models.

The public API is one import away, and this module lists all of it (:data:`__all__`)::

    import magdash as md

    store = md.Store("cache/magdash.duckdb")
    md.extract("minilm", store=store)                 # the paper's stimuli by default
    result = md.analyze(store, "minilm")              # an AnalysisResult
    result.fits                                       # a tidy DataFrame
    same = md.analyze(per_carrier, magnitudes=mags)   # the same statistics on an array

Every name of :data:`__all__` is stable; everything else (the modules under ``magdash.``, and
the underscored names of :mod:`magdash.api`) is internal and may change between releases. The
names are loaded when first used, so ``import magdash`` (and the command line's ``--help``) loads
no numerical library.

- data in: :class:`Store` (with :meth:`Store.put` for arrays), :func:`extract`, the stimuli
  (:class:`StimulusSet`, :func:`paper_stimuli`; comparisons: :class:`ComparisonSet`,
  :func:`paper_comparisons`), arrays as :class:`Activations`, and the adapters
  :func:`number_prompts`, :func:`from_transformer_lens`, :func:`from_nnsight`, :func:`from_hidden_states`;
- analyses (a store and a model name, or arrays), each with its params class and result type:
  :func:`analyze` (scaling, hypotheses, geometry), :func:`compare`, :func:`controls` (the robustness
  controls), :func:`design`, :func:`depth` and :func:`depth_of_texts`, :func:`e5` with
  :func:`frequency_source` and :func:`frequency_sources`, :func:`probe` (is magnitude decodable?), :func:`behave` (the model's own number comparisons),
  :func:`steer` (is the magnitude code used?), :func:`rdm` and :func:`layer_vectors`;
- figures: :mod:`magdash.charts`, the Altair charts the app draws;
- errors: :class:`MagdashError` and its kinds, each message saying what to fix.
"""

import importlib

from magdash.kind_declarations import KIND_DECLARATIONS as _KIND_DECLARATIONS

__version__ = "0.1.0"

_PUBLIC: dict[str, tuple[str, str | None]] = {
    # data in
    "Store": ("magdash.store", "Store"),
    "Activations": ("magdash.store", "Activations"),
    "StimulusSet": ("magdash.stimuli", "StimulusSet"),
    "paper_stimuli": ("magdash.stimuli", "paper_stimuli"),
    "ComparisonSet": ("magdash.comparison_stimuli", "ComparisonSet"),
    "paper_comparisons": ("magdash.comparison_stimuli", "paper_comparisons"),
    "extract": ("magdash.api.analyses", "extract"),
    "ExtractParams": ("magdash.extract_params", "ExtractParams"),
    "ExtractionResult": ("magdash.extraction", "ExtractionResult"),
    "NumberPrompts": ("magdash.api.adapters", "NumberPrompts"),
    "number_prompts": ("magdash.api.adapters", "number_prompts"),
    "from_hidden_states": ("magdash.api.adapters", "from_hidden_states"),
    "from_transformer_lens": ("magdash.api.adapters", "from_transformer_lens"),
    "from_nnsight": ("magdash.api.adapters", "from_nnsight"),
    # analyses, each with its params and result classes (:data:`magdash.kind_declarations.KIND_DECLARATIONS`)
    **_KIND_DECLARATIONS.public_names(),
    # more analyses and their inputs
    "depth_of_texts": ("magdash.api.analyses", "depth_of_texts"),
    "frequency_source": ("magdash.api.analyses", "frequency_source"),
    "frequency_sources": ("magdash.api.analyses", "frequency_sources"),
    "rdm": ("magdash.api.analyses", "rdm"),
    "layer_vectors": ("magdash.api.analyses", "layer_vectors"),
    "FrequencySource": ("magdash.frequency.sources", "FrequencySource"),
    # figures
    "charts": ("magdash.api.charts", None),
    # errors
    "MagdashError": ("magdash.errors", "MagdashError"),
    "AnalysisError": ("magdash.errors", "AnalysisError"),
    "StoreError": ("magdash.errors", "StoreError"),
    "StimulusError": ("magdash.errors", "StimulusError"),
    "ModelLoadError": ("magdash.errors", "ModelLoadError"),
}
"""Each public name: the module that defines it, and its name there (None: the module itself)."""

_DEPRECATED: dict[str, str] = {
    # An old public name: the public name that replaced it (the CHANGELOG says when). Using one
    # warns (DeprecationWarning) and gives the new name's object; neither is in __all__.
    "PhaseParams": "DepthParams",  # deprecated name
    "PhaseResult": "DepthResult",  # deprecated name
    "robustness": "controls",  # deprecated name
}

__all__ = ["__version__", *_PUBLIC]  # pyright: ignore[reportUnsupportedDunderAll] - the names __getattr__ imports on first use


def __getattr__(name: str):
    """A public name, imported from its module the first time it is used; an old name
    (:data:`_DEPRECATED`) warns and gives its replacement."""
    if name in _DEPRECATED:
        import warnings

        warnings.warn(f"magdash.{name} is deprecated; use magdash.{_DEPRECATED[name]} (the same object)",
                      DeprecationWarning, stacklevel=2)
        return __getattr__(_DEPRECATED[name])
    if name not in _PUBLIC:
        raise AttributeError(f"module 'magdash' has no attribute {name!r}")
    module_name, attribute = _PUBLIC[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
