"""Hidden states held in memory, in the import layout: :class:`Activations`.

The layout is the npz import's (:mod:`magdash.store.npz`): ``per_carrier`` of shape
(n_magnitudes, n_carriers, n_layers, d), the magnitude of each row, the carrier of each column and
the label of each layer. An :class:`Activations` is checked once, when it is made, and holds what
the store would hold: float32 vectors with their rows in ascending magnitude, carriers as
templates with ``{n}``, layer labels and the block count that fixes the default core band. So an
analysis of it (:mod:`magdash.api`) reads the same vectors, in the same order, as the analysis
of the same array put into a store (:meth:`magdash.store.Store.put`), and gives the same numbers.

NumPy arrays and torch tensors are both accepted; a tensor is converted through its own
``detach().cpu()`` (torch is never imported here).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from magdash.errors import AnalysisError, StoreError
from magdash.layers import LAST_LAYER_CHOICES
from magdash.overflow import count_nonfinite
from magdash.stimuli import MAX_SET_NAME_CHARS, PAPER_CARRIERS, PAPER_MAGNITUDES, PAPER_SET_NAME, StimulusSet
from magdash.store.npz import import_arrays, imported_layers, validate_import_arrays
from magdash.store.records import ModelRecord

if TYPE_CHECKING:
    from magdash.store.database import Store

MIN_CARRIERS = 2
"""V is a spread over carriers: one carrier has none."""
LAYOUT = "(n_magnitudes, n_carriers, n_layers, d)"


def as_array(data: Any, what: str) -> np.ndarray:
    """``data`` as a NumPy array: a torch tensor through ``detach().cpu()`` (bfloat16 as float32,
    which NumPy lacks), anything else through :func:`numpy.asarray`.

    Args:
        data: a NumPy array, a torch tensor, or anything NumPy can read (nested lists).
        what: the argument's name, for the error.
    """
    if hasattr(data, "detach") and hasattr(data, "cpu"):  # a torch tensor, duck-typed so torch stays unimported
        tensor = data.detach().cpu()
        if getattr(tensor, "is_floating_point", lambda: False)() and str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()
        data = tensor.numpy()
    try:
        return np.asarray(data)
    except (TypeError, ValueError) as error:
        raise AnalysisError(f"{what} is not an array ({error}): pass a NumPy array or a torch tensor") from None


@dataclass(frozen=True, eq=False)
class Activations:
    """Number-token hidden states of one model, in memory: a :class:`~magdash.store.vectors.VectorSource`,
    so the analyses take them as they take a stored model, through the same run (:mod:`magdash.runs`),
    and :meth:`magdash.store.Store.put` stores them.

    Made from the arrays, checked and normalised: ``per_carrier`` becomes float32 with its rows
    in ascending magnitude, ``magnitudes`` a tuple of ints, ``carriers`` templates with ``{n}``
    (a label without one becomes ``"<label> {n}"``, as an npz import makes it), ``layer_labels``
    and ``n_blocks`` filled in. Anything unusable raises :class:`~magdash.errors.AnalysisError`
    saying what to fix.

    Attributes:
        per_carrier: the vectors, shape (n_magnitudes, n_carriers, n_layers, d): NumPy or torch.
        magnitudes: the magnitude of each row of ``per_carrier`` (whole positive numbers, each once).
        carriers: the carrier of each column: sentences with ``{n}`` where the number goes, or
            labels; default ``carrier 1`` .. ``carrier c``.
        layer_labels: the name of each layer; default ``embeddings``, ``layer 1``, ...
        n_blocks: the model's transformer blocks L (the default core band is floor(L/2) .. L-1);
            default read from the labels, as an npz import reads it: every layer after the
            embeddings, less a last layer labelled post-norm.
        last_layer: ``"post-norm"`` when the last layer is the final norm's output with no
            pre-norm copy of the last block before it (transformers' ``hidden_states``);
            ``"block"`` (default) otherwise.
        name: the model's name in results and charts.
        source: where the vectors come from (``transformer_lens:gpt2``); kept in the store's
            record of the model by :meth:`~magdash.store.Store.put`.
        stimuli: the stimulus set's name in results; default 'paper' for the paper's grid, else
            ``<name>-stimuli``. A store names its sets itself (:meth:`~magdash.store.Store.put`).
        allow_nonfinite: accept vectors holding Inf or NaN (float16 overflow); the analyses then
            leave their layers out, as they leave out flagged stored layers. Refused by default.
    """

    per_carrier: Any
    magnitudes: Sequence[int]
    carriers: Sequence[str] | None = None
    layer_labels: Sequence[str] | None = None
    n_blocks: int | None = None
    last_layer: str = "block"
    name: str = "activations"
    source: str = "array"
    stimuli: str | None = None
    allow_nonfinite: bool = False

    def __post_init__(self) -> None:
        array = _checked_array(as_array(self.per_carrier, "per_carrier"))
        magnitudes = _checked_magnitudes(self.magnitudes, array.shape[0])
        if self.carriers is not None:
            carriers = [str(c) for c in as_array(self.carriers, "carriers").ravel()]
            if len(carriers) != array.shape[1]:
                raise AnalysisError(
                    f"{len(carriers)} carriers for the {array.shape[1]} columns (axis 1) of per_carrier: "
                    "give one carrier per column"
                )
        if self.layer_labels is not None and len(self.layer_labels) != array.shape[2]:
            raise AnalysisError(
                f"{len(self.layer_labels)} layer labels for the {array.shape[2]} layers (axis 2) of per_carrier: "
                "give one label per layer"
            )
        if self.last_layer not in LAST_LAYER_CHOICES:
            raise AnalysisError(f"last_layer must be one of {', '.join(LAST_LAYER_CHOICES)}, got {self.last_layer!r}")
        if not isinstance(self.name, str) or not self.name.strip():
            raise AnalysisError("name must be a non-empty string: the model's name in results and charts")
        if not self.allow_nonfinite:
            _refuse_nonfinite(array)
        try:
            array, magnitude_list, carrier_list, labels = validate_import_arrays(
                array, magnitudes, self.carriers, self.layer_labels)
            labels, n_blocks = imported_layers(labels, self.n_blocks, self.last_layer)
        except StoreError as error:
            raise AnalysisError(str(error)) from None
        if magnitude_list != sorted(magnitude_list):
            array = array[np.argsort(magnitude_list, kind="stable")]
            magnitude_list = sorted(magnitude_list)
        set_attribute = object.__setattr__  # frozen: the normalised values are set once, here
        set_attribute(self, "per_carrier", array)
        set_attribute(self, "magnitudes", tuple(magnitude_list))
        set_attribute(self, "carriers", tuple(carrier_list))
        set_attribute(self, "layer_labels", tuple(labels))
        set_attribute(self, "n_blocks", n_blocks)

    def __repr__(self) -> str:
        return (f"Activations(name={self.name!r}, source={self.source!r}, shape={self.shape}, "
                f"magnitudes={self.magnitudes[0]}..{self.magnitudes[-1]}, n_blocks={self.n_blocks})")

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(n_magnitudes, n_carriers, n_layers, d)."""
        return tuple(self.per_carrier.shape)

    @property
    def n_layers(self) -> int:
        """The layers, embeddings included."""
        return self.per_carrier.shape[2]

    @property
    def hidden_size(self) -> int:
        """d, the width of a vector."""
        return self.per_carrier.shape[3]

    @property
    def stimuli_name(self) -> str:
        """The stimulus set's name in results: ``stimuli``, else as an import names it."""
        if self.stimuli is not None:
            return self.stimuli
        if self.carriers == PAPER_CARRIERS and self.magnitudes == PAPER_MAGNITUDES:
            return PAPER_SET_NAME
        derived = f"{self.name}-stimuli"
        return derived if len(derived) <= MAX_SET_NAME_CHARS else "activations-stimuli"

    @property
    def store(self) -> None:
        """No store: results of arrays are not cached (:class:`~magdash.store.vectors.VectorSource`)."""
        return None

    def number_tokens(self) -> None:
        """Arrays carry no tokenizer, so no token facts: the analyses leave the tokenization fits out."""
        return None

    def digit_splitting(self) -> None:
        """Arrays carry no tokenizer: whether it splits digits is not known."""
        return None

    def stimulus_set(self) -> StimulusSet:
        """The magnitudes and carriers as a :class:`~magdash.stimuli.StimulusSet`."""
        # __post_init__ has replaced the optional carriers with a tuple of templates.
        return StimulusSet(self.stimuli_name, cast(tuple[str, ...], self.carriers), tuple(self.magnitudes))

    def layer(self, index: int) -> np.ndarray:
        """Layer ``index``'s vectors, (n_magnitudes, n_carriers, d), contiguous as a store hands them out.

        Args:
            index: the layer, 0 (embeddings) .. n_layers - 1.
        """
        if not 0 <= index < self.n_layers:
            raise AnalysisError(f"no layer {index}: {self.name} has layers 0..{self.n_layers - 1}")
        return np.ascontiguousarray(self.per_carrier[:, :, index, :])

    def layers(self, indices: Sequence[int] | None = None) -> Iterator[tuple[int, str, np.ndarray]]:
        """(layer, label, vectors) for ``indices`` (default every layer), one layer at a time.

        Args:
            indices: the layers to give, in order.
        """
        for index in range(self.n_layers) if indices is None else indices:
            yield index, cast(tuple[str, ...], self.layer_labels)[index], self.layer(index)


def _checked_array(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind not in "fiu":
        raise AnalysisError(f"per_carrier holds {array.dtype} values: give a float array of hidden states")
    if array.ndim != 4:
        raise AnalysisError(
            f"per_carrier has shape {array.shape}: it must be {LAYOUT}; a (batch, layers, d) or per-layer "
            "(batch, tokens, d) run becomes that layout through magdash.from_hidden_states"
        )
    if min(array.shape) < 1:
        raise AnalysisError(f"per_carrier has an empty axis {array.shape}: every axis of {LAYOUT} needs an entry")
    if array.shape[1] < MIN_CARRIERS:
        raise AnalysisError(
            f"per_carrier has {array.shape[1]} carrier (axis 1 of {LAYOUT}): variability is a spread over "
            f"carrier sentences, so give at least {MIN_CARRIERS} (the paper has 5)"
        )
    return array.astype(np.float32, copy=False)


def _checked_magnitudes(magnitudes: Any, n_rows: int) -> list[int]:
    if magnitudes is None:
        raise AnalysisError("say which magnitude each row of per_carrier is: magnitudes=[...]")
    values = as_array(magnitudes, "magnitudes").ravel()
    if values.dtype.kind not in "fiu":
        raise AnalysisError(f"magnitudes must be numbers, got {values.dtype} values")
    if len(values) != n_rows:
        raise AnalysisError(
            f"{len(values)} magnitudes for the {n_rows} rows (axis 0) of per_carrier: give one magnitude per row"
        )
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise AnalysisError("magnitudes must be positive numbers (log n is fitted)")
    if np.any(values != np.round(values)):
        raise AnalysisError("magnitudes must be whole numbers")
    listed = [int(m) for m in values]
    if len(set(listed)) != len(listed):
        repeated = sorted({m for m in listed if listed.count(m) > 1})
        raise AnalysisError(f"magnitudes {repeated} repeat: each row of per_carrier needs its own magnitude")
    return listed


def _refuse_nonfinite(array: np.ndarray) -> None:
    counts = {layer: count_nonfinite(array[:, :, layer, :]) for layer in range(array.shape[2])}
    flagged = {layer: count for layer, count in counts.items() if count}
    if flagged:
        listed = ", ".join(f"{layer} ({count})" for layer, count in flagged.items())
        raise AnalysisError(
            f"per_carrier holds Inf or NaN vectors at layers {listed}: fix the run that made them (float16 "
            "overflows: use bfloat16 or float32), or pass allow_nonfinite=True to leave those layers out of "
            "every fit, as magdash leaves out such stored layers"
        )


def put_activations(
    store: Store,
    name: str,
    data: Activations | Any,
    magnitudes: Sequence[int] | None = None,
    *,
    carriers: Sequence[str] | None = None,
    layer_labels: Sequence[str] | None = None,
    n_blocks: int | None = None,
    last_layer: str = "block",
    stimuli: str | None = None,
    source: str | None = None,
    allow_nonfinite: bool = False,
) -> tuple[ModelRecord, str]:
    """Store hidden states held in memory as model ``name``, as an npz import stores a file's.

    The model's record keeps where they came from (``source``: ``transformer_lens:gpt2``, or the
    :class:`Activations`' own); its identity is a hash of the vectors and their labels, so
    putting the same vectors twice is a no-op. The store then analyses them as any stored model,
    with the same numbers as the analyses of the arrays themselves.

    Args:
        store: the store written to.
        name: the model's name in the store.
        data: an :class:`Activations`, or the array (n_magnitudes, n_carriers, n_layers, d),
            NumPy or torch, described by the arguments below.
        magnitudes: the magnitude of each row (an array only).
        carriers: the carrier of each column, sentences with ``{n}`` or labels (an array only).
        layer_labels: the name of each layer (an array only).
        n_blocks: the model's transformer blocks (an array only; default read from the labels).
        last_layer: ``"post-norm"`` when the last layer is the final norm's output (an array only).
        stimuli: the stimulus set's name in the store; default the name its sentences are stored
            under, else 'paper' for the paper's, else ``<name>-stimuli`` (an :class:`Activations`'
            own ``stimuli`` names results of the arrays, not the stored set).
        source: where the vectors come from; default the :class:`Activations`' source, else "array".
        allow_nonfinite: store vectors holding Inf or NaN (flagged, and left out of the analyses).

    Returns:
        The stored :class:`~magdash.store.records.ModelRecord` and the stimulus set's name.
    """
    if isinstance(data, Activations):
        given = {"magnitudes": magnitudes, "carriers": carriers, "layer_labels": layer_labels, "n_blocks": n_blocks}
        extra = [key for key, value in given.items() if value is not None]
        if extra:
            raise AnalysisError(f"{', '.join(extra)} describe an array; Activations carry their own: leave them out")
        activations = data
    else:
        # Activations refuses magnitudes=None with the message saying what to give.
        activations = Activations(data, cast(Sequence[int], magnitudes), carriers=carriers, layer_labels=layer_labels, n_blocks=n_blocks,
                                  last_layer=last_layer, name=name, allow_nonfinite=allow_nonfinite)
    return import_arrays(
        store, name, activations.per_carrier, list(activations.magnitudes),
        carriers=list(cast(tuple[str, ...], activations.carriers)),
        layer_labels=list(cast(tuple[str, ...], activations.layer_labels)), stimuli=stimuli,
        source=source or activations.source, n_blocks=activations.n_blocks,
    )
