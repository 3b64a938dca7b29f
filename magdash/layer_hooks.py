"""The one place where magdash attaches forward hooks to a model's residual stream.

Layers are numbered as the extraction labels them (:func:`magdash.layers.layer_labels`): layer 0 is
the input to the first block (the embeddings as the blocks see them), layer l the output of block
l. For models with a final norm the last block's output is reached through a forward pre-hook on
that norm — the residual stream "before RMSNorm" of Cacioli (2026, arXiv 2604.04469) — and the
norm's output is one more layer, labelled post-norm. Every hook is attached inside a context
manager and removed in ``finally``: a forward pass that raises leaves no hook behind.

:func:`capture_layers` keeps a reduction of every layer (the extraction's number vectors);
:func:`add_at_positions` adds a vector to one layer at one token per row (activation steering).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from magdash.errors import StimulusError
from magdash.sources import LoadedModel

if TYPE_CHECKING:
    import torch


class LayerCapture:
    """What :func:`capture_layers`' hooks kept of one forward pass, on its way to the host.

    On CUDA each layer's reduced hidden state is copied without waiting (``non_blocking``) into its
    slice of one pinned, layer-major host array, so the hooks never stop the pass: a copy that
    waited would drain the device's queue at every layer, leaving it idle while Python launches the
    next block's kernels (at Llama-3-8B's shape on an H200 that cost about 100 ms a batch, most of a
    batch's time), and stacking the layers on the host would be one more pass over them there.
    :meth:`stacked` computes the vectors' norms on the device, where they cost a kernel rather than
    a pass of the store's writers through host memory (a pass that slowed the forward passes beside
    it), and waits once, after the pass, for every device a layer ran on. Without ``pinned`` (the
    all-token capture, whose layers hold every token: page-locking gigabytes a batch would cost more
    than the waits) each layer is copied with ``.cpu()``.

    Args:
        n_layers: how many layers the pass captures.
        pinned: copy each CUDA layer into pinned memory without waiting (else with ``.cpu()``).
    """

    def __init__(self, n_layers: int, pinned: bool = True) -> None:
        self._n_layers = n_layers
        self._pinned = pinned
        self._layers: dict[int, torch.Tensor] = {}
        self._on_device: dict[int, torch.Tensor] = {}
        self._host: torch.Tensor | None = None

    def keep(self, layer: int, reduced: torch.Tensor) -> None:
        """Start copying ``reduced`` to the host as layer ``layer``.

        Args:
            layer: the layer's index (0: the embeddings as the first block sees them).
            reduced: what the hook kept of the layer's hidden state, on the layer's device.
        """
        import torch

        if not self._pinned or reduced.device.type != "cuda":
            self._layers[layer] = reduced.cpu()
            return
        if self._host is None:
            self._host = torch.empty((self._n_layers, *reduced.shape), dtype=reduced.dtype, pin_memory=True)
        self._host[layer].copy_(reduced, non_blocking=True)
        self._layers[layer] = self._host[layer]
        self._on_device[layer] = reduced

    def missing(self) -> list[int]:
        """The layers no hook saw."""
        return [layer for layer in range(self._n_layers) if layer not in self._layers]

    def on_host(self) -> list[torch.Tensor]:
        """Every layer as a host tensor, once its copy has arrived."""
        import torch

        for device in {tensor.device for tensor in self._on_device.values()}:
            torch.cuda.synchronize(device)
        return [self._layers[layer] for layer in range(self._n_layers)]

    def stacked(self) -> tuple[torch.Tensor, np.ndarray | None]:
        """(n_layers, ...) host tensor of every layer, and its float64 L2 norms over the last axis
        where the layers were on a GPU (None otherwise)."""
        import torch

        if not self._on_device:
            return torch.stack(self.on_host()), None
        first = self._on_device[0].device
        on_one = torch.stack([self._on_device[layer].to(first) for layer in range(self._n_layers)])
        # float64 squares of float32 values cannot overflow: a norm is finite exactly when every
        # value is, the store's rule for flagging a vector (magdash.store.shards).
        norms = torch.linalg.vector_norm(on_one, dim=-1, dtype=torch.float64)
        self.on_host()
        # Set by the first kept layer that was on a GPU: there was one, or _on_device would be empty.
        assert self._host is not None
        return self._host, norms.cpu().numpy()


@contextmanager
def capture_layers(
    loaded: LoadedModel, reduce: Callable[[torch.Tensor], torch.Tensor], *, pinned: bool = True
) -> Iterator[LayerCapture]:
    """Attach hooks that keep ``reduce(hidden)`` of every layer in the yielded :class:`LayerCapture`.

    ``reduce`` maps a (batch, tokens, d) hidden state to what is kept, on the hidden state's
    device; the capture takes it to the host. One capture serves one forward pass.

    Args:
        loaded: the loaded model (:class:`~magdash.sources.LoadedModel`).
        reduce: maps a (batch, tokens, d) hidden state to what is kept.
        pinned: copy each layer into pinned memory without waiting (:class:`LayerCapture`).
    """
    captured = LayerCapture(len(loaded.layer_labels), pinned)
    handles = []

    def first_block_input(_module, args, kwargs):
        hidden = args[0] if args else kwargs["hidden_states"]
        captured.keep(0, reduce(hidden))

    def block_output(index: int):
        def hook(_module, _args, output):
            hidden = output[0] if isinstance(output, tuple) else output
            captured.keep(index, reduce(hidden))

        return hook

    def norm_input(_module, args, kwargs):
        hidden = args[0] if args else kwargs["hidden_states"]
        captured.keep(loaded.n_blocks, reduce(hidden))

    def norm_output(_module, _args, output):
        captured.keep(loaded.n_blocks + 1, reduce(output))

    try:
        handles.append(loaded.blocks[0].register_forward_pre_hook(first_block_input, with_kwargs=True))
        last = loaded.n_blocks if loaded.final_norm is None else loaded.n_blocks - 1
        for index, block in enumerate(loaded.blocks[:last], start=1):
            handles.append(block.register_forward_hook(block_output(index)))
        if loaded.final_norm is not None:
            handles.append(loaded.final_norm.register_forward_pre_hook(norm_input, with_kwargs=True))
            handles.append(loaded.final_norm.register_forward_hook(norm_output))
        yield captured
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def add_at_positions(
    loaded: LoadedModel, layer: int, vectors: torch.Tensor, positions: Sequence[int]
) -> Iterator[None]:
    """Add ``vectors[i]`` to the residual stream of layer ``layer`` at token ``positions[i]`` of batch row i,
    in every forward pass run inside the ``with`` block.

    The layer is numbered as the extraction's labels (0: the embeddings, block 0's input; l: the
    output of block l; with a final norm, ``n_blocks + 1``: the norm's output). The sum is taken in
    the hidden state's dtype on its device, out of place (the unpatched tensor is left as it was),
    and adding zeros gives the unpatched pass bit for bit. The hook is removed in ``finally``.

    Args:
        loaded: the loaded model (:class:`~magdash.sources.LoadedModel`).
        layer: the layer to add to, ``0 <= layer < len(loaded.layer_labels)``.
        vectors: (batch, d) what to add, one row per batch row.
        positions: per batch row, the index of the token (in the padded batch) that gets its vector.
    """
    n_layers = len(loaded.layer_labels)
    if not 0 <= layer < n_layers:
        raise StimulusError(
            f"layer={layer} is not a layer of {loaded.source.spec!r} (0 to {n_layers - 1})", parameters=("layer",)
        )
    if vectors.ndim != 2 or vectors.shape[0] != len(positions) or vectors.shape[1] != loaded.hidden_size:
        raise StimulusError(
            f"vectors= of shape {tuple(vectors.shape)} do not match {len(positions)} positions= of a "
            f"model of width {loaded.hidden_size}: give one (d,) row per position",
            parameters=("vectors", "positions"),
        )
    rows = np.arange(len(positions))
    columns = np.asarray(positions, dtype=np.int64)
    on_device: dict[tuple[object, object], tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def added(hidden: torch.Tensor) -> torch.Tensor:
        import torch

        key = (hidden.device, hidden.dtype)
        if key not in on_device:  # moved once per device and dtype, not at every pass
            on_device[key] = (
                torch.as_tensor(rows, device=hidden.device),
                torch.as_tensor(columns, device=hidden.device),
                vectors.to(device=hidden.device, dtype=hidden.dtype),
            )
        row_index, column_index, values = on_device[key]
        if hidden.shape[0] != len(rows):
            raise StimulusError(
                f"a forward pass of {hidden.shape[0]} rows met {len(rows)} positions=: give one per row of the batch",
                parameters=("positions",),
            )
        return hidden.index_put((row_index, column_index), values, accumulate=True)

    def pre_hook(_module, args, kwargs):
        if args:
            return (added(args[0]), *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": added(kwargs["hidden_states"])}

    def post_hook(_module, _args, output):
        if isinstance(output, tuple):
            return (added(output[0]), *output[1:])
        return added(output)

    with_norm = loaded.final_norm is not None
    if layer == 0:
        handle = loaded.blocks[0].register_forward_pre_hook(pre_hook, with_kwargs=True)
    elif layer < loaded.n_blocks or (layer == loaded.n_blocks and not with_norm):
        handle = loaded.blocks[layer - 1].register_forward_hook(post_hook)
    elif layer == loaded.n_blocks:  # the last block's output as the final norm receives it, as the capture reads it
        assert loaded.final_norm is not None
        handle = loaded.final_norm.register_forward_pre_hook(pre_hook, with_kwargs=True)
    else:
        assert loaded.final_norm is not None
        handle = loaded.final_norm.register_forward_hook(post_hook)
    try:
        yield
    finally:
        handle.remove()
