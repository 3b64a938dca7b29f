"""How a model's stored layers are named: the one rule shared by extraction, imports and the store.

Layer 0 is the input to the first block (the embeddings as the blocks see them), layer l the
output of block l. A model with a final norm has its last block's output captured before that
norm (the residual stream "before RMSNorm" of Cacioli 2026, arXiv 2604.04469) and the norm's
output kept as one more layer, :data:`POST_NORM_LABEL` (transformers' ``hidden_states[-1]``).
"""

from __future__ import annotations

POST_NORM_LABEL = "final norm (post-norm)"
"""The label of a layer holding the output of the final norm (transformers' ``hidden_states[-1]``)."""
LAST_LAYER_CHOICES = ("block", "post-norm")
"""What the last layer of imported hidden states is: a block's output, or the final norm's."""


def layer_labels(n_blocks: int, has_final_norm: bool) -> tuple[str, ...]:
    """The labels of a model's ``n_blocks + 1`` layers, one more after a final norm.

    Args:
        n_blocks: the model's transformer blocks L.
        has_final_norm: whether a norm follows the last block (decoders: yes).
    """
    labels = ["embeddings"] + [f"block {i}" for i in range(1, n_blocks + 1)]
    if has_final_norm:
        labels[-1] = f"block {n_blocks} (pre-norm residual)"
        labels.append(POST_NORM_LABEL)
    return tuple(labels)
