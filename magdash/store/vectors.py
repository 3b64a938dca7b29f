"""Where an analysis reads its vectors: a :class:`VectorSource`, a stored model or arrays in memory.

Every analysis (:mod:`magdash.runs`) reads one model's number-token vectors through this
protocol, one layer at a time, so an analysis of arrays and of a store take one path:

- :class:`StoredVectors` (made by :meth:`magdash.store.Store.vectors`): a model's vectors on a stimulus
  set in a store, with the items' token facts; its ``store`` caches the results;
- :class:`~magdash.store.activations.Activations`: arrays held in memory, in the store's order and
  layout; its ``store`` is None, so nothing is cached.

:func:`renamed` gives a source another model name in results (arrays compared with a variant or a
control under the name the caller gives them).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from magdash.store.records import ModelRecord
from magdash.tokenization import DigitSplitting, NumberTokens

if TYPE_CHECKING:
    from magdash.store.database import Store

log = logging.getLogger(__name__)


@runtime_checkable
class VectorSource(Protocol):
    """One model's number-token vectors on one stimulus set, as every analysis reads them.

    Attributes:
        name: the model's name in results (and, for a stored source, in the store).
        stimuli_name: the stimulus set's name in results.
        magnitudes: the magnitude of each row of a layer, ascending.
        carriers: the carrier template of each column of a layer.
        n_blocks: the model's transformer blocks L (the default core band is floor(L/2) .. L-1).
        n_layers: the layers, embeddings included.
        store: the :class:`~magdash.store.Store` caching results of these vectors; None for arrays.
    """

    # Read-only properties, not plain attributes: a frozen dataclass's fields and a property both
    # satisfy a read-only member, and no analysis writes to its source.
    @property
    def name(self) -> str: ...

    @property
    def stimuli_name(self) -> str: ...

    @property
    def magnitudes(self) -> Sequence[int]: ...

    @property
    def carriers(self) -> Sequence[str]: ...

    @property
    def n_blocks(self) -> int: ...

    @property
    def n_layers(self) -> int: ...

    @property
    def store(self) -> Store | None: ...

    def layer(self, index: int) -> np.ndarray:
        """Layer ``index``'s vectors, (n_magnitudes, n_carriers, d) float32.

        Args:
            index: the layer, 0 (embeddings) .. n_layers - 1.
        """
        ...

    def layers(self, indices: Sequence[int] | None = None) -> Iterator[tuple[int, str, np.ndarray]]:
        """(layer, label, vectors) for ``indices`` (default every layer), one layer at a time.

        Args:
            indices: the layers to give, in order.
        """
        ...

    def number_tokens(self) -> list[NumberTokens] | None:
        """How the model's tokenizer cut each item's number; None where not recorded."""
        ...

    def digit_splitting(self) -> DigitSplitting | None:
        """Whether the model's tokenizer splits digits; None where not recorded."""
        ...


@dataclass(frozen=True, eq=False)
class StoredVectors:
    """A stored model's vectors on one of its complete stimulus sets (:meth:`magdash.store.Store.vectors`).

    Attributes:
        store: the store holding the vectors and caching the results of them.
        record: the model's stored record.
        stimuli_name: the stimulus set, complete for the model.
        magnitudes: the set's magnitudes, ascending as the vectors' rows.
        carriers: the set's carrier templates, as the vectors' columns.
        name: the model's name in the store (the record's).
        n_blocks: the model's transformer blocks (the record's).
        n_layers: the model's layers, embeddings included (the record's).
    """

    store: Store
    record: ModelRecord
    stimuli_name: str
    magnitudes: tuple[int, ...]
    carriers: tuple[str, ...]
    name: str = field(init=False)
    n_blocks: int = field(init=False)
    n_layers: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.record.name)
        object.__setattr__(self, "n_blocks", self.record.n_blocks)
        object.__setattr__(self, "n_layers", self.record.n_layers)

    def __repr__(self) -> str:
        return f"StoredVectors(name={self.name!r}, stimuli={self.stimuli_name!r}, store={str(self.store.path)!r})"

    def layer(self, index: int) -> np.ndarray:
        """Layer ``index``'s stored vectors, (n_magnitudes, n_carriers, d) float32.

        Args:
            index: the layer, 0 (embeddings) .. n_layers - 1.
        """
        return self.store.read_layer(self.name, self.stimuli_name, index).vectors

    def layers(self, indices: Sequence[int] | None = None) -> Iterator[tuple[int, str, np.ndarray]]:
        """(layer, label, vectors) for ``indices`` (default every layer), read one layer at a time;
        no layer is kept here once handed out.

        Args:
            indices: the layers to read, in order.
        """
        for data in self.store.read_layers(self.name, self.stimuli_name, indices):
            log.info("reading %s layer %d (%s)", self.name, data.layer, data.label)
            layer, label, vectors = data.layer, data.label, data.vectors
            del data
            yield layer, label, vectors
            # Drop this layer before reading the next, so two layers never coexist.
            del vectors

    def number_tokens(self) -> list[NumberTokens] | None:
        """The items' token facts recorded by the extraction; None where they are not."""
        return self.store.number_tokens(self.name, self.stimuli_name)

    def digit_splitting(self) -> DigitSplitting | None:
        """Whether the model's tokenizer splits digits, as recorded; None where it is not."""
        return self.store.digit_splitting(self.name)


@dataclass(frozen=True, eq=False)
class _Renamed:
    """A source under another model name; everything else is the source's."""

    source: VectorSource
    name: str

    # The protocol's members spelt out, so a type checker sees a VectorSource; anything else
    # (a stored source's record, an array's labels) still comes from the source.
    @property
    def stimuli_name(self) -> str:
        return self.source.stimuli_name

    @property
    def magnitudes(self) -> Sequence[int]:
        return self.source.magnitudes

    @property
    def carriers(self) -> Sequence[str]:
        return self.source.carriers

    @property
    def n_blocks(self) -> int:
        return self.source.n_blocks

    @property
    def n_layers(self) -> int:
        return self.source.n_layers

    @property
    def store(self) -> Store | None:
        return self.source.store

    def layer(self, index: int) -> np.ndarray:
        return self.source.layer(index)

    def layers(self, indices: Sequence[int] | None = None) -> Iterator[tuple[int, str, np.ndarray]]:
        return self.source.layers(indices)

    def number_tokens(self) -> list[NumberTokens] | None:
        return self.source.number_tokens()

    def digit_splitting(self) -> DigitSplitting | None:
        return self.source.digit_splitting()

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.source, attribute)


def renamed(source: VectorSource, name: str) -> VectorSource:
    """``source`` under the model name ``name`` in results (itself when it has that name already).

    Args:
        source: the vectors.
        name: the model's name in results.
    """
    return source if source.name == name else _Renamed(source, name)


def labelled_layers(source: VectorSource, indices: Sequence[int] | None = None) -> Iterator[tuple[str, np.ndarray]]:
    """(label, vectors) of each layer of ``source``, one at a time, holding none once handed out.

    Args:
        source: the vectors.
        indices: the layers, in order (default every layer).
    """
    for _, label, vectors in source.layers(indices):
        yield label, vectors
        del vectors


def numbered_layers(source: VectorSource, indices: Sequence[int] | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """(layer, vectors) of each layer of ``source``, one at a time, holding none once handed out.

    Args:
        source: the vectors.
        indices: the layers, in order (default every layer).
    """
    for layer, _, vectors in source.layers(indices):
        yield layer, vectors
        del vectors


def layer_arrays(source: VectorSource, indices: Sequence[int] | None = None) -> Iterator[np.ndarray]:
    """The vectors of each layer of ``source``, one at a time, holding none once handed out.

    Args:
        source: the vectors.
        indices: the layers, in order (default every layer).
    """
    for _, _, vectors in source.layers(indices):
        yield vectors
        del vectors
