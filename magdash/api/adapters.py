"""Your own activations in: the number tokens' hidden states of a run made elsewhere, as
:class:`~magdash.store.Activations` that every analysis takes (and :meth:`~magdash.store.Store.put` stores).

A run feeds the stimuli's sentences as one batch (or several concatenated), in the order of
:func:`number_prompts`: row ``i * n_carriers + c`` is magnitude ``i`` in carrier ``c``. The
adapters keep each layer's vector at the number's token (:attr:`NumberPrompts.positions`), so
nothing but those vectors is copied:

- :func:`from_transformer_lens`: a TransformerLens ``ActivationCache`` (``run_with_cache``) with
  the residual stream hooks ``blocks.{l}.hook_resid_pre``/``hook_resid_post`` and, from a
  ``TransformerBridge``, ``ln_final.hook_out``;
- :func:`from_nnsight`: the values saved in an nnsight trace, one per layer;
- :func:`from_hidden_states`: any per-layer (batch, tokens, d) tensors or arrays
  (transformers' ``output_hidden_states=True`` among them).

Layer 0 is the input to the first block and layer l the output of block l, as magdash extracts
them (:mod:`magdash.extraction`); ``layout`` says whether the final norm's output is there too. torch,
TransformerLens and nnsight are never imported here: tensors are read through their own methods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from magdash.errors import AnalysisError
from magdash.layers import layer_labels as magdash_layer_labels
from magdash.stimuli import DEFAULT_POSITION, POSITIONS, StimulusSet, paper_stimuli
from magdash.store.activations import Activations, as_array

LAYOUTS = ("blocks", "magdash", "hidden_states")
"""What the layers of a run are, L the model's blocks:

- ``blocks``: the embeddings and every block's output (L + 1 layers);
- ``magdash``: the same and the final norm's output (L + 2), as magdash extracts a model with a
  final norm;
- ``hidden_states``: transformers' ``output_hidden_states`` (L + 1): the embeddings, blocks 1..L-1
  and, last, the final norm's output in place of block L's.
"""


@dataclass(frozen=True, eq=False)
class NumberPrompts:
    """The stimuli's sentences in a run's row order, with the number's tokens in each.

    Row ``i * n_carriers + c`` of :attr:`sentences` is magnitude ``magnitudes[i]`` in carrier ``c``.
    :attr:`positions` holds, per row, the token indices standing for the number in the sequence
    the tokenizer makes of the sentence (with its own special tokens): one index for the
    positions ``last`` (the paper's) and ``first``, every overlapping token for ``mean``.

    Attributes:
        sentences: every sentence, magnitude-major (row ``i * n_carriers + c``).
        positions: per sentence, the indices of the tokens that stand for the number.
        magnitudes: the stimuli's magnitudes, ascending.
        carriers: the carrier templates, with ``{n}`` where the number goes.
        stimuli: the stimulus set's name.
    """

    sentences: tuple[str, ...]
    positions: tuple[tuple[int, ...], ...]
    magnitudes: tuple[int, ...]
    carriers: tuple[str, ...]
    stimuli: str

    @property
    def n_rows(self) -> int:
        """The sentences a run feeds: n_magnitudes x n_carriers."""
        return len(self.sentences)

    def shifted(self, offset: int) -> NumberPrompts:
        """The same prompts with every position moved by ``offset``: 1 when the run put a token in
        front that the tokenizer does not add itself (TransformerLens' ``prepend_bos`` on a
        tokenizer without a BOS of its own).

        Args:
            offset: tokens added before each sentence.
        """
        moved = tuple(tuple(index + offset for index in row) for row in self.positions)
        if any(index < 0 for row in moved for index in row):
            raise AnalysisError(f"an offset of {offset} moves a number before the sequence's start")
        return NumberPrompts(self.sentences, moved, self.magnitudes, self.carriers, self.stimuli)


def number_prompts(tokenizer: Any, stimuli: StimulusSet | None = None, *, position: str = DEFAULT_POSITION) -> NumberPrompts:
    """The sentences to run and the number's token in each, as magdash's own extraction finds it.

    Args:
        tokenizer: the model's fast tokenizer (transformers'; it must give character offsets).
        stimuli: the stimulus set; default the paper's 26 magnitudes x 5 carriers.
        position: which of the number's tokens: ``last`` (the paper's), ``first`` or ``mean``.
    """
    from magdash.extraction import locate_numbers

    stimuli = stimuli or paper_stimuli()
    if position not in POSITIONS:
        raise AnalysisError(f"position must be one of {', '.join(POSITIONS)}, got {position!r}")
    if not getattr(tokenizer, "is_fast", False):
        raise AnalysisError("the tokenizer gives no character offsets: load the fast one (use_fast=True)")
    _, number_tokens = locate_numbers(tokenizer, stimuli.items, position)
    return NumberPrompts(
        sentences=tuple(item.sentence for item in stimuli.items),
        positions=tuple(tuple(indices) for indices in number_tokens),
        magnitudes=tuple(stimuli.magnitudes),
        carriers=tuple(stimuli.carriers),
        stimuli=stimuli.name,
    )


def from_hidden_states(
    hidden_states: Sequence[Any] | Any,
    prompts: NumberPrompts | Any,
    magnitudes: Sequence[int] | None = None,
    *,
    carriers: Sequence[str] | None = None,
    layout: str = "blocks",
    layer_labels: Sequence[str] | None = None,
    name: str = "activations",
    source: str = "hidden_states",
) -> Activations:
    """The number tokens' vectors of per-layer hidden states.

    Args:
        hidden_states: one (batch, tokens, d) tensor or array per layer, in layer order, or all
            of them stacked (n_layers, batch, tokens, d); the batch's rows in
            :func:`number_prompts` order.
        prompts: the :class:`NumberPrompts` the run was fed; or the number's token index per
            row, shape (batch,) or (n_magnitudes, n_carriers), with ``magnitudes``.
        magnitudes: with plain positions, the magnitude of each group of ``n_carriers`` rows.
        carriers: with plain positions, the carriers (sentences with ``{n}``, or labels).
        layout: what the layers are (:data:`LAYOUTS`): ``blocks``, ``magdash`` or ``hidden_states``.
        layer_labels: the layers' names (default as magdash names them).
        name: the model's name in results.
        source: where the vectors come from, kept by :meth:`~magdash.store.Store.put`.
    """
    layers = _layer_list(hidden_states)
    rows, magnitude_list, carrier_list, stimuli = _rows(prompts, magnitudes, carriers)
    vectors = np.stack([_at_numbers(hidden, rows, index) for index, hidden in enumerate(layers)], axis=1)
    n_carriers = len(rows) // len(magnitude_list)
    per_carrier = vectors.reshape(len(magnitude_list), n_carriers, len(layers), vectors.shape[-1])
    labels, n_blocks, last_layer = _layout(layout, len(layers), layer_labels)
    return Activations(per_carrier, magnitude_list, carriers=carrier_list, layer_labels=labels, n_blocks=n_blocks,
                       last_layer=last_layer, name=name, source=source, stimuli=stimuli)


def from_transformer_lens(
    cache: Any,
    prompts: NumberPrompts | Any,
    magnitudes: Sequence[int] | None = None,
    *,
    carriers: Sequence[str] | None = None,
    post_norm: bool = True,
    name: str | None = None,
    source: str | None = None,
) -> Activations:
    """The number tokens' residual stream from a TransformerLens run.

    The layers are ``blocks.0.hook_resid_pre`` (the embeddings as the first block sees them) and
    ``blocks.{l-1}.hook_resid_post`` for l = 1..L; with ``post_norm``, ``ln_final.hook_out`` (the
    final norm's output, which a ``TransformerBridge`` records) is one more, as magdash extracts it.
    To keep only these in the cache: ``model.run_with_cache(tokens, names_filter=lambda name:
    name.endswith(("hook_resid_pre", "hook_resid_post")) or name == "ln_final.hook_out")``.

    Args:
        cache: the ``ActivationCache`` of ``run_with_cache`` (or a mapping of hook name to
            (batch, tokens, d) tensor), the batch's rows in :func:`number_prompts` order.
        prompts: the :class:`NumberPrompts` the run was fed (shifted by 1 when TransformerLens
            put a BOS in front that the tokenizer does not add); or plain positions, as
            :func:`from_hidden_states` takes them.
        magnitudes: with plain positions, the magnitudes.
        carriers: with plain positions, the carriers.
        post_norm: keep the final norm's output when the cache holds ``ln_final.hook_out``.
        name: the model's name in results (default the model's, from the cache).
        source: where the vectors come from (default ``transformer_lens:<model>``).
    """
    keys = set(cache.keys()) if hasattr(cache, "keys") else set()
    n_blocks = 0
    while f"blocks.{n_blocks}.hook_resid_post" in keys:
        n_blocks += 1
    missing = [hook for hook in ("blocks.0.hook_resid_pre", "blocks.0.hook_resid_post") if hook not in keys]
    if missing:
        raise AnalysisError(
            f"the cache holds no {', '.join(missing)}: run the model with run_with_cache and keep the residual stream "
            "hooks (names ending in hook_resid_pre and hook_resid_post)"
        )
    hooks = ["blocks.0.hook_resid_pre"] + [f"blocks.{block}.hook_resid_post" for block in range(n_blocks)]
    with_norm = post_norm and "ln_final.hook_out" in keys
    if with_norm:
        hooks.append("ln_final.hook_out")
    model_name = _transformer_lens_model_name(cache)
    return from_hidden_states(
        [cache[hook] for hook in hooks], prompts, magnitudes, carriers=carriers,
        layout="magdash" if with_norm else "blocks",
        name=name or model_name or "transformer_lens",
        source=source or ("transformer_lens" + (f":{model_name}" if model_name else "")),
    )


def from_nnsight(
    saved: Sequence[Any] | Mapping[str, Any],
    prompts: NumberPrompts | Any,
    magnitudes: Sequence[int] | None = None,
    *,
    carriers: Sequence[str] | None = None,
    layout: str = "blocks",
    layer_labels: Sequence[str] | None = None,
    name: str = "nnsight",
    source: str = "nnsight",
) -> Activations:
    """The number tokens' vectors from values saved in an nnsight trace, one per layer.

    For a Llama-like model (``model`` an ``nnsight.TransformersModel``)::

        saved = []
        with model.trace(batch):
            saved.append(model.model.layers[0].input.save())       # the embeddings
            for layer in model.model.layers[:-1]:
                saved.append(layer.output.save())                  # blocks 1 .. L-1
            saved.append(model.model.norm.input.save())            # block L
            saved.append(model.model.norm.output.save())           # the final norm
        activations = magdash.from_nnsight(saved, prompts, layout="magdash")

    Args:
        saved: the saved values in layer order (or a mapping, in its order): tensors, older
            nnsight's proxies (read through ``.value``), or a module's output tuple (its first item).
        prompts: the :class:`NumberPrompts` the trace was fed; or plain positions, as
            :func:`from_hidden_states` takes them.
        magnitudes: with plain positions, the magnitudes.
        carriers: with plain positions, the carriers.
        layout: what the layers are (:data:`LAYOUTS`).
        layer_labels: the layers' names (default as magdash names them).
        name: the model's name in results.
        source: where the vectors come from, kept by :meth:`~magdash.store.Store.put`.
    """
    values = list(saved.values()) if isinstance(saved, Mapping) else list(saved)
    unwrapped = []
    for value in values:
        if not _is_tensor_like(value) and hasattr(value, "value"):
            value = value.value
        if isinstance(value, (tuple, list)) and value:
            value = value[0]
        unwrapped.append(value)
    return from_hidden_states(unwrapped, prompts, magnitudes, carriers=carriers, layout=layout,
                              layer_labels=layer_labels, name=name, source=source)


# -- reading the hidden states -----------------------------------------------------------------


def _is_tensor_like(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (hasattr(value, "detach") and hasattr(value, "shape"))


def _layer_list(hidden_states: Any) -> list[Any]:
    if hasattr(hidden_states, "hidden_states") and not _is_tensor_like(hidden_states):
        hidden_states = hidden_states.hidden_states  # a transformers ModelOutput
    if _is_tensor_like(hidden_states):
        if len(hidden_states.shape) != 4:
            raise AnalysisError(
                f"stacked hidden states have shape {tuple(hidden_states.shape)}: give (n_layers, batch, tokens, d), "
                "or a list of (batch, tokens, d), one per layer"
            )
        return [hidden_states[index] for index in range(hidden_states.shape[0])]
    if not isinstance(hidden_states, (list, tuple)) or not hidden_states:
        raise AnalysisError("give the hidden states as a list of (batch, tokens, d) tensors or arrays, one per layer")
    return list(hidden_states)


def _rows(
    prompts: Any, magnitudes: Any, carriers: Any
) -> tuple[list[tuple[int, ...]], list[int], list[str] | None, str | None]:
    """(token indices per row, magnitudes, carriers, stimulus set name) from prompts or plain positions."""
    if isinstance(prompts, NumberPrompts):
        if magnitudes is not None or carriers is not None:
            raise AnalysisError("NumberPrompts carry their magnitudes and carriers: leave magnitudes= and carriers= out")
        return list(prompts.positions), list(prompts.magnitudes), list(prompts.carriers), prompts.stimuli
    if magnitudes is None:
        raise AnalysisError("with plain positions, say the magnitudes: magnitudes=[...] (or pass magdash.number_prompts)")
    magnitude_list = [int(m) for m in as_array(magnitudes, "magnitudes").ravel()]
    positions = as_array(prompts, "positions")
    if positions.dtype.kind not in "iu":
        raise AnalysisError(f"positions must be whole token indices, got {positions.dtype} values")
    flat = positions.reshape(-1)
    if not magnitude_list or flat.size % len(magnitude_list):
        raise AnalysisError(
            f"{flat.size} positions for {len(magnitude_list)} magnitudes: give one position per sentence, "
            "n_magnitudes x n_carriers of them in magnitude-major order"
        )
    return [(int(index),) for index in flat], magnitude_list, None if carriers is None else list(carriers), None


def _at_numbers(hidden: Any, rows: list[tuple[int, ...]], layer: int) -> np.ndarray:
    """(batch, d) float32: each row's vector at its number's token (the mean over several)."""
    shape = tuple(hidden.shape)
    if len(shape) == 2 and len(rows) == 1:
        hidden, shape = hidden[None], (1, *shape)
    if len(shape) != 3:
        raise AnalysisError(f"layer {layer}'s hidden states have shape {shape}: each layer must be (batch, tokens, d)")
    if shape[0] != len(rows):
        raise AnalysisError(
            f"layer {layer} holds {shape[0]} sentences, the prompts {len(rows)}: run every prompt, in the prompts' "
            "order, as one batch (concatenate the batches' hidden states along the first axis)"
        )
    longest = max(max(indices) for indices in rows)
    if longest >= shape[1] or min(min(indices) for indices in rows) < 0:
        raise AnalysisError(
            f"a number's token index {longest} lies outside layer {layer}'s {shape[1]} tokens: tokenize the prompts' "
            "sentences with the same tokenizer, padded on the right"
        )
    if all(len(indices) == 1 for indices in rows):
        picked = hidden[np.arange(len(rows)), np.asarray([indices[0] for indices in rows])]
        return as_array(picked, "hidden states").astype(np.float32, copy=False)
    return np.stack([as_array(hidden[row, list(indices)], "hidden states").astype(np.float32).mean(axis=0)
                     for row, indices in enumerate(rows)])


def _layout(layout: str, n_layers: int, labels: Sequence[str] | None) -> tuple[Sequence[str] | None, int, str]:
    """(layer labels, block count, last_layer) of a run's layers in ``layout``."""
    if layout not in LAYOUTS:
        raise AnalysisError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    minimum = 3 if layout == "magdash" else 2
    if n_layers < minimum:
        raise AnalysisError(f"{n_layers} layer(s) for the {layout!r} layout: it needs the embeddings and a block at least")
    if layout == "magdash":
        return labels or magdash_layer_labels(n_layers - 2, True), n_layers - 2, "block"
    if layout == "hidden_states":
        return labels, n_layers - 1, "post-norm"
    return labels or magdash_layer_labels(n_layers - 1, False), n_layers - 1, "block"


def _transformer_lens_model_name(cache: Any) -> str | None:
    config = getattr(getattr(cache, "model", None), "cfg", None)
    name = getattr(config, "model_name", None)
    return name if isinstance(name, str) and name else None
