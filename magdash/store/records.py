"""What the store hands out: a stored model's identity and one layer's vectors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magdash.overflow import count_nonfinite
from magdash.stimuli import DEFAULT_POSITION


@dataclass(frozen=True)
class ModelRecord:
    """A model as stored: its user-facing name and everything that identifies its vectors.

    Attributes:
        name: the name the user gave the model in the store.
        model_id: the identity of its vectors: a hash of the weights' fingerprint, dtype, transformers version, token
            position and a prepended BOS (:meth:`magdash.sources.ModelSource.model_id`).
        source: where the model came from (a built-in name, a folder, a GGUF file, a Hugging Face repo id, an import).
        fingerprint: what identifies the weights (a commit, a SHA-256 of the files, a GGUF hash and quantization, or a
            random seed).
        dtype: the dtype the model ran in.
        transformers_version: the transformers version that ran it.
        architecture: the model's architecture (``LlamaForCausalLM``, ``BertModel``, ...).
        n_blocks: its number of blocks L.
        hidden_size: the width d of its hidden states.
        layer_labels: the label of each stored layer (``embeddings``, ``block 1``, ..., ``final norm (post-norm)``).
        position: which of the number's tokens was kept: ``last``, ``first`` or ``mean``.
        is_random: whether the weights are a seeded random initialisation (an ``@random`` control).
    """

    name: str
    model_id: str
    source: str
    fingerprint: str
    dtype: str
    transformers_version: str
    architecture: str
    n_blocks: int
    hidden_size: int
    layer_labels: tuple[str, ...]
    position: str = DEFAULT_POSITION
    is_random: bool = False
    sequence_start: str = ""
    """How each sentence began before its first word: "tokenizer" (the tokenizer's own special
    tokens), "bos:<id>" (magdash prepended the model's BOS token), "none" (the model has no BOS;
    the first word is at position 0), or "" (not recorded: imported, or stored before magdash
    recorded it). See :func:`magdash.sources.base.sequence_start_rule`."""

    @property
    def n_layers(self) -> int:
        return len(self.layer_labels)


@dataclass(frozen=True)
class LayerData:
    """One layer's number-token vectors for a stimulus set.

    Attributes:
        layer: the layer index (0 = embeddings).
        label: the layer's label.
        magnitudes: the stimulus set's magnitudes, as the vectors' first axis.
        carriers: the carrier templates, as the vectors' second axis.
        vectors: (n_magnitudes, n_carriers, d) float32 number-token vectors.
    """

    layer: int
    label: str
    magnitudes: np.ndarray
    carriers: list[str]
    vectors: np.ndarray  # (n_magnitudes, n_carriers, d) float32

    @property
    def n_nonfinite(self) -> int:
        """How many vectors hold Inf or NaN (magdash.overflow). Counted when asked, not on every
        read: the analysis checks the arrays it is given itself."""
        return count_nonfinite(self.vectors)
