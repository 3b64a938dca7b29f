"""Batched forward passes that keep only the number-token vector of every layer.

Layer 0 is the input to the first block (the embeddings as the blocks see them, scaled where the
architecture scales them), layer l the output of block l. For models with a final norm the
last block's output is captured by a forward pre-hook on that norm — the residual stream
"before RMSNorm" of Cacioli (2026, arXiv 2604.04469) — and the norm's output is kept as an
extra layer labelled post-norm. Hooks reduce each (batch, tokens, d) hidden state to what is
kept as soon as it exists, so whole sequences are never held, and are always removed in
``finally``.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from magdash.environment import transformers_version
from magdash.errors import MagdashError, ModelLoadError, StimulusError
from magdash.extract_params import DEFAULT_BATCH_SIZE, DEFAULT_PADDING_SIDE, TEXT_BATCH_SIZE, ExtractParams
from magdash.layer_hooks import capture_layers
from magdash.names import default_name
from magdash.params import ProgressCallback
from magdash.sources import LoadedModel, ModelSource, load_model, load_tokenizer, pick_device, resolve_model
from magdash.stimuli import DEFAULT_POSITION, StimulusItem, StimulusSet, token_indices_for_span
from magdash.store import ModelRecord, Store, shards
from magdash.tokenization import DigitSplitting, NumberTokens, digit_splitting, tokenize_numbers

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

FLUSH_SECONDS = 2.0
"""A running extraction stores what it has at least this often (a kill loses at most this much
work), and at the latest when it holds ``shards.WRITE_BATCH_BYTES`` of vectors: a fast device
then writes few large shards instead of paying a registration every few sentences."""


@dataclass(frozen=True)
class ExtractionResult:
    """What an extraction did: how many of the set's sentences were stored before, how many now, and how long it
    took.

    Attributes:
        name: the model's name in the store.
        stimuli: the stimulus set's name.
        model_id: the identity of the vectors.
        total: the set's sentences.
        already_stored: those stored before this run.
        extracted: those this run stored.
        seconds: the run's wall time.
        cancelled: whether ``should_stop`` ended it early (what it had is stored).
        store_seconds: of ``seconds``, the time spent waiting for the store (catalog, writes the forward passes did not
            hide).
        waited: whether it waited for another extraction of the model into the store, whose vectors it then used.
    """
    name: str
    stimuli: str
    model_id: str
    total: int
    already_stored: int
    extracted: int
    seconds: float
    cancelled: bool = False
    store_seconds: float = 0.0  # of ``seconds``, spent waiting for the store (catalog, writes not hidden)
    waited: bool = False


@dataclass
class TokenizedBatch:
    """A padded batch as the model takes it (:func:`build_batch`).

    Attributes:
        input_ids: (batch, tokens) token ids, padded.
        attention_mask: (batch, tokens) 1 on real tokens.
        position_ids: (batch, tokens) each token's count of real tokens before it.
        weights: (batch, tokens) the weights that reduce each row to its number's vector.
    """
    input_ids: object
    attention_mask: object
    position_ids: object
    weights: object  # (batch, tokens) reduction weights of the number's tokens


@dataclass(frozen=True)
class NumberVectors:
    """One forward pass's number-token vectors.

    Attributes:
        keys: the stimulus items' keys, one per row.
        vectors: (batch, n_layers, d) float32, a transposed view of a layer-major array
            (``np.ascontiguousarray`` gives a row-major copy where one is needed).
        norms: (batch, n_layers) float64 L2 norms, computed on the GPU that made the vectors;
            None where the vectors were made on the host (the store computes them).
    """

    keys: list[str]
    vectors: np.ndarray
    norms: np.ndarray | None


def _input_device(loaded: LoadedModel) -> torch.device:
    import torch

    embeddings = loaded.model.get_input_embeddings()
    weight = getattr(embeddings, "weight", None)
    return weight.device if isinstance(weight, torch.Tensor) else torch.device(loaded.device)


def tokenize_texts(
    tokenizer, texts: Sequence[str], max_length: int | None = None, sequence_start: str = "tokenizer"
) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """Token ids and character offsets of every text, unpadded; with ``sequence_start``
    "bos:<id>" (:func:`magdash.sources.base.sequence_start_rule`) the BOS token is put in front, with
    the empty character span of a special token.

    Args:
        tokenizer: the model's fast tokenizer.
        texts: the texts.
        max_length: the longest sequence in tokens (the BOS included); None: no truncation.
        sequence_start: how a sequence starts (:func:`magdash.sources.base.sequence_start_rule`).
    """
    prepend = [int(sequence_start.removeprefix("bos:"))] if sequence_start.startswith("bos:") else []
    limit = None if max_length is None else max_length - len(prepend)
    encoded = tokenizer(
        list(texts),
        return_offsets_mapping=True,
        add_special_tokens=True,
        truncation=limit is not None,
        max_length=limit,
    )
    return [(prepend + list(ids), [(0, 0)] * len(prepend) + list(offsets))
            for ids, offsets in zip(encoded["input_ids"], encoded["offset_mapping"], strict=True)]


def build_batch(
    token_ids: Sequence[Sequence[int]],
    number_tokens: Sequence[Sequence[int]],
    *,
    pad_id: int,
    padding_side: str,
    device,
) -> TokenizedBatch:
    """Pad a batch on either side; number-token indices move with the padding.

    Position ids are given explicitly as the count of real tokens before each one, so left
    padding cannot shift absolute positions (GPT-2, BERT) and every sequence is encoded as if
    alone.

    Args:
        token_ids: each sentence's token ids, unpadded.
        number_tokens: each sentence's number-token indices.
        pad_id: the tokenizer's padding id.
        padding_side: ``right`` or ``left``.
        device: where the batch's tensors go.
    """
    import torch

    width = max(len(ids) for ids in token_ids)
    batch = len(token_ids)
    input_ids = torch.full((batch, width), pad_id, dtype=torch.long)
    attention = torch.zeros((batch, width), dtype=torch.long)
    weights = torch.zeros((batch, width), dtype=torch.float32)
    for row, (ids, numbers) in enumerate(zip(token_ids, number_tokens, strict=True)):
        shift = width - len(ids) if padding_side == "left" else 0
        input_ids[row, shift:shift + len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention[row, shift:shift + len(ids)] = 1
        weights[row, [shift + i for i in numbers]] = 1.0 / len(numbers)
    positions = (attention.cumsum(dim=1) - 1).clamp(min=0)
    return TokenizedBatch(input_ids.to(device), attention.to(device), positions.to(device), weights.to(device))


def _weighted_reducer(weights) -> Callable[[torch.Tensor], torch.Tensor]:
    """The weighted sum over tokens of a (batch, tokens, d) hidden state, in float32 on its device;
    ``weights`` is moved to another device only where ``device_map`` put a block there."""
    import torch

    on_device = {weights.device: weights}

    def reduce(hidden):
        if hidden.device not in on_device:
            on_device[hidden.device] = weights.to(hidden.device)
        return torch.einsum("bt,btd->bd", on_device[hidden.device], hidden.to(torch.float32))

    return reduce


def _accepts_position_ids(model) -> bool:
    return _forward_takes_position_ids(type(model))


@functools.cache
def _forward_takes_position_ids(model_class: type) -> bool:
    """Read once per model class: inspecting the signature on every batch is wasted work."""
    import inspect

    return "position_ids" in inspect.signature(model_class.forward).parameters


def forward_number_vectors(
    loaded: LoadedModel,
    token_ids: Sequence[Sequence[int]],
    number_tokens: Sequence[Sequence[int]],
    *,
    padding_side: str = DEFAULT_PADDING_SIDE,
) -> np.ndarray:
    """One batched forward pass; returns (batch, n_layers, d) float32 number-token vectors, a transposed
    view of a layer-major array (``np.ascontiguousarray`` gives a row-major copy where one is needed).

    Args:
        loaded: the loaded model (:class:`~magdash.sources.LoadedModel`).
        token_ids: each sentence's token ids, unpadded.
        number_tokens: each sentence's number-token indices.
        padding_side: ``right`` or ``left``.
    """
    return _forward_with_norms(loaded, token_ids, number_tokens, padding_side=padding_side)[0]


def _forward_with_norms(
    loaded: LoadedModel,
    token_ids: Sequence[Sequence[int]],
    number_tokens: Sequence[Sequence[int]],
    *,
    padding_side: str,
) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`forward_number_vectors` and the vectors' (batch, n_layers) norms where a GPU computed them."""
    import torch

    batch = build_batch(
        token_ids, number_tokens, pad_id=loaded.pad_id,
        padding_side=padding_side, device=_input_device(loaded),
    )
    kwargs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
    if _accepts_position_ids(loaded.model):
        kwargs["position_ids"] = batch.position_ids
    with capture_layers(loaded, _weighted_reducer(batch.weights)) as captured, torch.inference_mode():
        try:
            loaded.model(**kwargs)
        except (torch.OutOfMemoryError, MemoryError, RuntimeError) as error:
            if not _is_out_of_memory(error):
                raise
            raise MagdashError(out_of_memory_message(len(token_ids), loaded.dtype)) from None
        missing = captured.missing()
        if missing:
            raise ModelLoadError(
                f"the hooks did not see layers {missing} of {type(loaded.model).__name__}; "
                "this architecture is not supported yet"
            )
        # Layer-major underneath (a transposed view): a shard stores each layer's vectors side by
        # side, so the writer finds them in place instead of copying every batch once more.
        layers, norms = captured.stacked()
        return layers.numpy().transpose(1, 0, 2), None if norms is None else norms.T


def out_of_memory_message(batch_size: int, dtype: str) -> str:
    """What to do when a forward pass of ``batch_size`` sentences ran out of memory: a smaller
    batch always helps; a half-precision dtype only when the model is not in one already.

    Args:
        batch_size: sentences in the pass that failed.
        dtype: the dtype the model was loaded in.
    """
    remedy = "lower batch_size=" + (" or use dtype='bfloat16'" if dtype == "float32" else "")
    return (f"out of memory in the forward pass of a batch of {batch_size} sentences ({dtype}): {remedy}; "
            "everything stored so far is kept and the next run carries on from there")


def _is_out_of_memory(error: BaseException) -> bool:
    """CUDA and MPS raise torch.OutOfMemoryError; the CPU allocator raises a RuntimeError."""
    import torch

    if isinstance(error, (torch.OutOfMemoryError, MemoryError)):
        return True
    text = str(error).lower()
    return "can't allocate memory" in text or "out of memory" in text


def locate_numbers(
    model: LoadedModel | object, items: Sequence[StimulusItem], position: str, sequence_start: str = "tokenizer"
) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids and number-token indices of each item (by default the last token overlapping the number,
    as in Cacioli 2026, arXiv 2604.04469; docs/science.md).

    ``model`` is a loaded model (whose own ``sequence_start`` applies) or just its fast tokenizer
    (enough for a tokenization preview; give ``sequence_start``).

    Args:
        model: a loaded model, or its fast tokenizer alone.
        items: the stimulus items.
        position: which of the number's tokens are kept: ``last``, ``first`` or ``mean``.
        sequence_start: how a sequence starts, for a tokenizer alone (a loaded model brings its own).
    """
    return numbers_in(items, encode_items(model, items, sequence_start), position)


def encode_items(
    model: LoadedModel | object, items: Sequence[StimulusItem], sequence_start: str = "tokenizer"
) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """:func:`tokenize_texts` of the items' sentences as ``model`` reads them (``model`` and
    ``sequence_start`` as for :func:`locate_numbers`).

    Args:
        model: a loaded model, or its fast tokenizer alone.
        items: the stimulus items.
        sequence_start: how a sequence starts, for a tokenizer alone (a loaded model brings its own).
    """
    if isinstance(model, LoadedModel):
        tokenizer, max_length, sequence_start = model.tokenizer, model.max_length, model.sequence_start
    else:
        tokenizer, max_length = model, None
    return tokenize_texts(tokenizer, [item.sentence for item in items], max_length, sequence_start)


def numbers_in(
    items: Sequence[StimulusItem], encoded: Sequence[tuple[list[int], list[tuple[int, int]]]], position: str
) -> tuple[list[list[int]], list[list[int]]]:
    """:func:`locate_numbers` from the items' encoding (:func:`encode_items`).

    Args:
        items: the stimulus items.
        encoded: each item's token ids and character offsets.
        position: which of the number's tokens are kept: ``last``, ``first`` or ``mean``.
    """
    token_ids, number_tokens = [], []
    for item, (ids, offsets) in zip(items, encoded, strict=True):
        token_ids.append(list(ids))
        number_tokens.append(token_indices_for_span(offsets, item.start, item.end, position))
    return token_ids, number_tokens


def numbers_at_the_first_position(
    items: Sequence[StimulusItem], number_tokens: Sequence[Sequence[int]]
) -> list[str]:
    """The carriers (as templates) whose number's kept tokens include position 0, the attention sink.

    Args:
        items: the stimulus items.
        number_tokens: each item's kept number-token indices.
    """
    return sorted({f"{item.sentence[:item.start]}{{n}}{item.sentence[item.end:]}"
                   for item, numbers in zip(items, number_tokens, strict=True) if 0 in numbers})


def check_number_positions(loaded: LoadedModel, items: Sequence[StimulusItem], position: str,
                           allow_number_first: bool, number_tokens: Sequence[Sequence[int]] | None = None) -> None:
    """Refuse, before anything is stored, carriers that would put a number at position 0: only a
    model with no BOS token can (:func:`magdash.sources.base.sequence_start_rule`).

    Args:
        loaded: the loaded model (:class:`~magdash.sources.LoadedModel`).
        items: the stimulus items.
        position: which of the number's tokens are kept.
        allow_number_first: measure such carriers anyway.
        number_tokens: each item's kept number-token indices where the caller located them
            already (:func:`locate_numbers`); None: located here.
    """
    if allow_number_first:
        return
    if number_tokens is None:
        number_tokens = locate_numbers(loaded, items, position)[1]
    first = numbers_at_the_first_position(items, number_tokens)
    if first:
        listed = "; ".join(repr(carrier) for carrier in first[:5]) + (" ..." if len(first) > 5 else "")
        raise StimulusError(
            f"{loaded.source.spec!r} has no BOS token, so these carriers put the number at the sequence's "
            f"first position, where decoders build an attention-sink vector rather than the number's: {listed}. "
            "Put a word before {n}, or pass allow_number_first=True to measure them anyway",
            parameters=("allow_number_first",),
        )


def drop_tokens_after_number(
    token_ids: Sequence[Sequence[int]], number_tokens: Sequence[Sequence[int]]
) -> list[list[int]]:
    """Cut each sentence after its number's last kept token.

    In a causal LM no position attends to later tokens, so the number's vectors at every layer
    are the same without the rest of the sentence; the words after it only cost compute
    (about 40% of the paper's carriers' tokens).

    Args:
        token_ids: each sentence's token ids.
        number_tokens: each sentence's number-token indices.
    """
    return [list(ids[: max(numbers) + 1]) for ids, numbers in zip(token_ids, number_tokens, strict=True)]


def model_record_for(loaded: LoadedModel, name: str, position: str) -> ModelRecord:
    """The store's record of a loaded model: its name and the identity of the vectors it gives.

    Args:
        loaded: the loaded model (:class:`~magdash.sources.LoadedModel`).
        name: the name it is stored under.
        position: which of the number's tokens are kept.
    """
    return ModelRecord(
        name=name,
        model_id=loaded.source.model_id(loaded.dtype, position, transformers_version()),
        source=loaded.source.source,
        fingerprint=loaded.source.fingerprint,
        dtype=loaded.dtype,
        transformers_version=transformers_version(),
        architecture=loaded.source.architecture,
        n_blocks=loaded.n_blocks,
        hidden_size=loaded.hidden_size,
        layer_labels=loaded.layer_labels,
        position=position,
        is_random=loaded.source.is_random,
        sequence_start=loaded.sequence_start,
    )


def token_facts(
    tokenizer, items: Sequence[StimulusItem], position: str, *, with_splitting: bool = True,
    encoded: Sequence[tuple[list[int], list[tuple[int, int]]]] | None = None,
) -> tuple[list[NumberTokens], DigitSplitting | None]:
    """How ``tokenizer`` cuts the number of each item (:func:`magdash.tokenization.tokenize_numbers`)
    and, with ``with_splitting``, whether it splits digits (None when that cannot be told: a
    tokenizer none of whose tokens covers a number written in digits).

    Args:
        tokenizer: the model's Hugging Face tokenizer.
        items: the stimulus items whose numbers are cut.
        position: the token position stored (``last``, ``first`` or ``mean``), which sets the kept tokens.
        with_splitting: also tell whether the tokenizer splits digits.
        encoded: each item's encoding where the caller has it (:func:`encode_items`); None: encoded here.
    """
    facts = tokenize_numbers(tokenizer, items, position, encoded) if items else []
    splitting = None
    if with_splitting:
        try:
            splitting = digit_splitting(tokenizer)
        except StimulusError as error:
            log.warning("cannot tell how this tokenizer splits digits: %s", error)
    return facts, splitting


def record_token_facts(
    store: Store, model_id: str, tokenizer, stimuli: StimulusSet, position: str,
    missing: set[str], without_splitting: bool,
    encoded: Mapping[str, tuple[list[int], list[tuple[int, int]]]] | None = None,
) -> int:
    """Record the token facts the store lacks for ``stimuli`` (the items of ``missing``, and the digit
    splitting when ``without_splitting``); returns how many items got theirs.

    Args:
        store: the :class:`~magdash.store.Store` recording them.
        model_id: the model's stored identity.
        tokenizer: the model's Hugging Face tokenizer.
        stimuli: the stimulus set extracted.
        position: the token position stored (``last``, ``first`` or ``mean``).
        missing: the keys of the items without token facts.
        without_splitting: whether the model's digit splitting is unrecorded.
        encoded: the items' encodings by key where the caller has them (an extraction's); the
            items are encoded here unless every one of them is there.
    """
    if not missing and not without_splitting:
        return 0
    items = [item for item in stimuli.items if item.key in missing]
    known = None
    if encoded is not None and all(item.key in encoded for item in items):
        known = [encoded[item.key] for item in items]
    facts, splitting = token_facts(tokenizer, items, position, with_splitting=without_splitting, encoded=known)
    return store.write_token_facts(model_id, [item.key for item in items], facts, splitting)


def _record_from_tokenizer_alone(
    store: Store, source, params: ExtractParams, model_id: str, stimuli: StimulusSet,
    missing: set[str], without_splitting: bool,
) -> None:
    """Vectors stored before the token facts were recorded (schema 8) get them from the tokenizer
    alone, without loading the weights; a tokenizer not at hand leaves them unrecorded (the analysis
    then says so) rather than failing an extraction that has nothing else to do."""
    if not missing and not without_splitting:
        return
    try:
        tokenizer = load_tokenizer(source, trust_remote_code=params.trust_remote_code)
        added = record_token_facts(store, model_id, tokenizer, stimuli, params.position, missing, without_splitting)
    except MagdashError as error:
        log.warning("the token facts of %s are not recorded (%s): its analyses give no alpha adjusted for "
                    "tokenization", source.spec, error)
        return
    log.info("recorded the token facts of %d stored sentences of %s", added, source.spec)


def number_vector_batches(
    loaded: LoadedModel,
    items: Sequence[StimulusItem],
    *,
    position: str = DEFAULT_POSITION,
    batch_size: int = DEFAULT_BATCH_SIZE,
    padding_side: str = DEFAULT_PADDING_SIDE,
    should_stop: Callable[[], bool] | None = None,
    allow_number_first: bool = False,
    located: tuple[list[list[int]], list[list[int]]] | None = None,
) -> Iterator[NumberVectors]:
    """The number-token vectors of ``items``, one batch at a time (:class:`NumberVectors`).

    Sentences are sorted by token length so batches carry little padding; the same items, batch
    size and padding side give the same batches wherever they run (in-process or a sweep's
    worker), hence the same vectors. ``should_stop`` is polled before each batch; the batches
    simply end when it says so. Carriers that put a number at position 0 are refused unless
    ``allow_number_first`` (:func:`check_number_positions`).

    Args:
        loaded: the loaded model (:class:`~magdash.sources.LoadedModel`).
        items: the stimulus items to run.
        position: which of the number's tokens are kept: ``last``, ``first`` or ``mean``.
        batch_size: sentences per forward pass.
        padding_side: ``right`` or ``left``.
        should_stop: polled before each batch; True ends the batches.
        allow_number_first: measure carriers that put the number at position 0.
        located: :func:`locate_numbers` of ``items`` where the caller has it (tokenizing a large
            set takes seconds); None: located here.
    """
    token_ids, number_tokens = located or locate_numbers(loaded, items, position)
    check_number_positions(loaded, items, position, allow_number_first, number_tokens)
    if loaded.is_causal:
        token_ids = drop_tokens_after_number(token_ids, number_tokens)
    order = np.argsort([len(ids) for ids in token_ids], kind="stable")
    for start in range(0, len(order), batch_size):
        if should_stop is not None and should_stop():
            return
        chosen = order[start:start + batch_size]
        vectors, norms = _forward_with_norms(
            loaded, [token_ids[i] for i in chosen], [number_tokens[i] for i in chosen], padding_side=padding_side,
        )
        yield NumberVectors([items[i].key for i in chosen], vectors, norms)


class _Stopwatch:
    """Adds up the time spent inside its ``with`` blocks."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, *exc_info: object) -> None:
        self.seconds += time.perf_counter() - self._started


WRITES_IN_FLIGHT = min(4, max(1, (os.cpu_count() or 1) // 4))
"""Shards an extraction writes at once: one on a small machine, up to four where there are cores to
spare. A GPU outruns one writer: at Llama-3-8B's shape an H200 makes about 1 GB of float32
vectors a second at batch 256, and one thread writes a few hundred MB/s (copy, norms, Parquet,
fsync), so the forward passes waited for the store."""


class _WritesInFlight:
    """Writes an extraction's batches on background threads, at most ``limit`` at a time, so the
    next forward passes run while batches become shards (torch, numpy, pyarrow and DuckDB all
    work outside the GIL; the catalog takes one registration at a time). Memory holds at most the
    batches being written and the one being filled; a kill finds at most ``limit`` writes under
    way, whose unregistered shards the next opening of the store deletes. A failed write raises
    from a later ``submit`` or from ``close``, which waits for every write."""

    def __init__(self, write: Callable[..., object], limit: int | None = None):
        self._write = write
        self._limit = max(1, WRITES_IN_FLIGHT if limit is None else limit)
        self._executor = ThreadPoolExecutor(max_workers=self._limit, thread_name_prefix="magdash-write")
        self._pending: deque[Future] = deque()

    def submit(self, *args: object) -> None:
        while len(self._pending) >= self._limit:
            self._pending.popleft().result()
        self._pending.append(self._executor.submit(self._write, *args))

    def close(self) -> None:
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._executor.shutdown(wait=True, cancel_futures=True)


def extract(
    model: str | LoadedModel,
    stimuli: StimulusSet,
    store: Store,
    params: ExtractParams | None = None,
    *,
    name: str | None = None,
    progress: ProgressCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    **options,
) -> ExtractionResult:
    """Extract every missing number-token vector of ``stimuli`` into ``store``.

    A model whose tokenizer adds no BOS token gets its BOS prepended; one that has none refuses
    carriers putting the number first unless ``allow_number_first``
    (:func:`magdash.sources.base.sequence_start_rule`), before anything is stored.

    What is already stored is skipped before any weights are loaded, so a repeated call is a
    no-op and a killed run resumes with what is missing. The token facts of every item (how the
    tokenizer cut its number: :mod:`magdash.tokenization`) and whether the tokenizer splits
    digits are recorded with the vectors; vectors stored without them (before schema 8) get them
    from the tokenizer alone, whose files are then loaded but not the weights. Batches come from
    :func:`number_vector_batches`; results are flushed in transactions every couple of
    seconds.

    Args:
        model: a model spec (:mod:`magdash.sources`) or a model already loaded.
        stimuli: the sentences.
        store: where the vectors go.
        params: how the model is loaded and run (:class:`~magdash.extract_params.ExtractParams`).
        name: the model's name in the store (default: the spec with a non-default dtype and
            position appended, :func:`magdash.names.default_name`).
        progress: called as ``progress(done, total)`` sentences.
        should_stop: polled between batches: the run then stores what it has and returns with
            ``cancelled=True``.
        options: fields of :class:`~magdash.extract_params.ExtractParams` replacing those of
            ``params`` (``dtype="float16"``).
    """
    started = time.perf_counter()
    # Every option is checked before anything is stored, so a refused call leaves no trace.
    params = dataclasses.replace(params or ExtractParams(), **options)
    store.check_writable()  # before a model is loaded for nothing
    dtype, device, position = params.dtype, params.device, params.position
    if not isinstance(model, LoadedModel):
        pick_device(device)
    source = model.source if isinstance(model, LoadedModel) else resolve_model(
        model, allow_pickle=params.allow_pickle, model_cache=params.model_cache
    )
    if isinstance(model, LoadedModel):
        dtype = model.dtype
    name = name or default_name(source.spec, dtype, position)
    model_id = source.model_id(dtype, position, transformers_version())
    # Extractions of one model into one store take turns: a second one waits, then extracts only what
    # the first did not store (and says so), instead of both doing the whole work.
    with store.extraction_turn(model_id) as waited:
        return _extract_in_turn(model, source, stimuli, store, params, name=name, model_id=model_id, dtype=dtype,
                                progress=progress, should_stop=should_stop, started=started, waited=waited)


def load_for_extraction(model: str, params: ExtractParams | None = None) -> LoadedModel:
    """``model`` resolved and loaded as :func:`extract` loads it for ``params``: for a caller that must
    know the model loads before it writes anything (the command line creates a new store only then).

    Args:
        model: the model's spec (a built-in name, a folder, a GGUF file, ...).
        params: the extraction's choices (dtype, device, device map, pickle and remote code).
    """
    params = params or ExtractParams()
    pick_device(params.device)
    return _load(resolve_model(model, allow_pickle=params.allow_pickle, model_cache=params.model_cache), params)


def _load(source: ModelSource, params: ExtractParams) -> LoadedModel:
    return load_model(
        source, dtype=params.dtype, device=params.device, device_map=params.device_map,
        trust_remote_code=params.trust_remote_code, allow_pickle=params.allow_pickle,
    )


def _extract_in_turn(
    model: str | LoadedModel, source: ModelSource, stimuli: StimulusSet, store: Store, params: ExtractParams, *, name: str,
    model_id: str, dtype: str, progress: ProgressCallback | None, should_stop: Callable[[], bool] | None,
    started: float, waited: bool,
) -> ExtractionResult:
    """:func:`extract` once its turn is held (``waited``: whether another extraction of the model held it first)."""
    position = params.position
    waiting_for_store = _Stopwatch()
    with waiting_for_store:
        unstored = store.unstored_among(model_id, [item.key for item in stimuli.items])
        known = store.find_model_by_id(model_id) is not None
    # A model that will run is loaded (and so checked) before anything is written: one that fails to
    # load (a bad GGUF, a broken folder) leaves the store as it was, without the stimulus set.
    loaded = model if isinstance(model, LoadedModel) else None
    if loaded is None and (unstored or not known):
        loaded = _load(source, params)
    todo = [item for item in stimuli.items if item.key in unstored]
    encoded, located = [], ([], [])  # no model loaded: every item is stored, and nothing is encoded
    if loaded is not None:
        # One encoding serves the number tokens, the refusal of numbers first (before anything is
        # written, like a model that fails to load) and the token facts.
        encoded = encode_items(loaded, todo)
        located = numbers_in(todo, encoded, position)
        check_number_positions(loaded, todo, position, params.allow_number_first, located[1])
    with waiting_for_store:
        missing, stored_as = store.start_extraction(stimuli, model_id)
        untokenized, without_splitting = store.missing_token_facts(model_id, stimuli.name)
    total = len(stimuli.items)
    already = total - len(missing)
    if progress:
        progress(already, total)
    if not missing and stored_as is not None:
        if stored_as != name:
            # The same vectors under one more name: nothing to run, but the name must exist.
            store.register_model(dataclasses.replace(store.model_record(stored_as), name=name))
        if loaded is not None:
            record_token_facts(store, model_id, loaded.tokenizer, stimuli, position, untokenized, without_splitting)
        else:
            _record_from_tokenizer_alone(store, source, params, model_id, stimuli, untokenized, without_splitting)
        return ExtractionResult(name, stimuli.name, model_id, total, already, 0, time.perf_counter() - started,
                                waited=waited)
    # Loaded above: what was stored when asked stays stored, so something is missing only if it was then.
    assert loaded is not None
    if len(missing) < len(todo):  # some stored meanwhile by a writer that takes no turn (an import)
        kept = [index for index, item in enumerate(todo) if item.key in missing]
        todo, encoded = [todo[index] for index in kept], [encoded[index] for index in kept]
        located = ([located[0][index] for index in kept], [located[1][index] for index in kept])
    with waiting_for_store:
        store.register_model(model_record_for(loaded, name, position))
    record_token_facts(store, model_id, loaded.tokenizer, stimuli, position, untokenized, without_splitting,
                       dict(zip((item.key for item in todo), encoded, strict=True)))
    done, pending, pending_bytes = already, [], 0
    last_flush = time.perf_counter()
    writer = _WritesInFlight(functools.partial(_write_batches, store, model_id))

    def flush() -> None:
        nonlocal pending, pending_bytes, last_flush
        # Taken out first: after a failed write the ``finally`` below must not try it again.
        batches, pending, pending_bytes = pending, [], 0
        if batches:
            with waiting_for_store:
                writer.submit(batches)
        last_flush = time.perf_counter()

    batches = number_vector_batches(
        loaded, todo, position=position, batch_size=params.batch_size, padding_side=params.padding_side,
        should_stop=should_stop,
        allow_number_first=True,  # checked above, before the model was registered
        located=located,
    )
    try:
        for batch in batches:
            pending.append(batch)
            pending_bytes += batch.vectors.nbytes
            done += len(batch.keys)
            if pending_bytes >= shards.WRITE_BATCH_BYTES or time.perf_counter() - last_flush > FLUSH_SECONDS:
                flush()
            if progress:
                progress(done, total)
    finally:
        try:
            flush()
        finally:
            with waiting_for_store:
                writer.close()
    cancelled = done - already < len(todo)
    return ExtractionResult(
        name, stimuli.name, model_id, total, already, done - already, time.perf_counter() - started, cancelled,
        waiting_for_store.seconds, waited,
    )


def shard_parts(batches: Sequence[NumberVectors]) -> tuple[list[str], list[np.ndarray], np.ndarray | None]:
    """``batches`` as one shard's item keys, vectors (the batches' layer-major arrays, written
    where they lie rather than joined) and norms (None unless every batch brought them).

    Args:
        batches: consecutive batches of :func:`number_vector_batches`.
    """
    norms = [batch.norms for batch in batches if batch.norms is not None]
    return ([key for batch in batches for key in batch.keys], [batch.vectors for batch in batches],
            np.concatenate(norms) if len(norms) == len(batches) else None)


def _write_batches(store: Store, model_id: str, batches: Sequence[NumberVectors]) -> int:
    keys, vectors, norms = shard_parts(batches)
    return store.write_vectors(model_id, keys, vectors, norms)


def _token_selector(rows: torch.Tensor, columns: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """The hidden states at (``rows``, ``columns``) of a (batch, tokens, d) hidden state, in float32
    on its device. Indices rather than a boolean mask: a mask's result has a data-dependent size,
    and finding it waits for the device at every layer."""
    import torch

    on_device = {rows.device: (rows, columns)}

    def reduce(hidden):
        if hidden.device not in on_device:
            on_device[hidden.device] = (rows.to(hidden.device), columns.to(hidden.device))
        at_rows, at_columns = on_device[hidden.device]
        return hidden[at_rows, at_columns].to(torch.float32)

    return reduce


def capture_all_tokens(
    loaded: LoadedModel,
    texts: Sequence[str],
    on_batch: Callable[[int, np.ndarray], None],
    *,
    batch_size: int = TEXT_BATCH_SIZE,
    max_length: int | None = None,
    progress: ProgressCallback | None = None,
    keep_first_position: bool = False,
    on_rows: Callable[[np.ndarray], None] | None = None,
) -> tuple[int, int]:
    """Stream the vectors of every real token of ``texts``, layer by layer, to ``on_batch``.

    Each text starts as an extraction's sentences do (the model's BOS prepended where its
    tokenizer adds none: :func:`magdash.sources.base.sequence_start_rule`). A sequence's first
    position is the attention sink: its vector's norm can be a hundred times the others' and
    would decide the spectra alone, so it is left out, whether it holds the BOS or, in a model
    without one, the first word; ``keep_first_position`` keeps a first word. Pad and special
    tokens (empty character span) are always left out. Nothing is accumulated here: the
    consumer keeps what it needs (online covariances, Omega values). Returns the number of
    tokens seen per layer and the number of sequences whose first position was left out.

    Args:
        loaded: the loaded model (:class:`~magdash.sources.LoadedModel`).
        texts: the texts, each run as one sequence.
        on_batch: called as ``on_batch(layer, vectors)`` with a batch's (tokens, d) vectors of each layer.
        batch_size: texts per forward pass.
        max_length: the longest sequence in tokens; None: the model's context.
        progress: called as ``progress(done, total)`` texts after each batch.
        keep_first_position: keep a first word at position 0 (a BOS there is always left out).
        on_rows: called before a batch's ``on_batch`` calls with the index in ``texts`` of the text each of
            its rows comes from (the rows are in the same order at every layer).
    """
    import torch

    tokenizer = loaded.tokenizer
    limit = min(max_length or loaded.max_length, loaded.max_length)
    encoded = tokenize_texts(tokenizer, texts, limit, loaded.sequence_start)
    order = np.argsort([len(ids) for ids, _ in encoded], kind="stable")
    seen = left_out = 0
    device = _input_device(loaded)
    for start in range(0, len(order), batch_size):
        chosen = order[start:start + batch_size]
        ids = [encoded[i][0] for i in chosen]
        real = [[k for k, (s, e) in enumerate(encoded[i][1]) if e > s and (keep_first_position or k > 0)]
                for i in chosen]
        left_out += sum(1 for i, positions in zip(chosen, real, strict=True) if encoded[i][0] and
                        (not positions or positions[0] != 0))
        batch = build_batch(ids, [r or [0] for r in real], pad_id=loaded.pad_id,
                            padding_side="right", device=device)
        rows = torch.tensor([row for row, positions in enumerate(real) for _ in positions], dtype=torch.long)
        if on_rows is not None:
            on_rows(np.asarray(chosen)[rows.numpy()])
        columns = torch.tensor([k for positions in real for k in positions], dtype=torch.long)
        # On the input device before the pass: a copy from host memory inside a hook would wait.
        reduce = _token_selector(rows.to(device), columns.to(device))
        kwargs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
        if _accepts_position_ids(loaded.model):
            kwargs["position_ids"] = batch.position_ids
        with capture_layers(loaded, reduce, pinned=False) as captured, torch.inference_mode():
            loaded.model(**kwargs)
            for layer, vectors in enumerate(captured.on_host()):
                on_batch(layer, vectors.numpy())
        seen += len(rows)
        if progress:
            progress(min(start + batch_size, len(order)), len(order))
    return seen, left_out
