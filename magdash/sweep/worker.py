"""An extraction cut in two: the job a worker runs without the catalog, and the driver's registration.

On a cluster only the driver holds the store's catalog (DuckDB takes one writer). The driver
works out what is missing (:func:`extract_job`); a worker loads the model, runs the forward
passes (:func:`run_extract_job`) and writes the vectors as shards straight into the store's
shard folder (:func:`magdash.store.shards.write_shard`; a file system every node shares), each
of up to ``shards.WRITE_BATCH_BYTES``, and hands back only their descriptions; the driver
registers them (:func:`register_output`) in the store's transactions, which skip items already done.
A worker killed mid-job leaves only unregistered shards, which no reader ever sees: Ray runs
the job again, only a finished job's shards are registered, and the sweep removes the others
once their grace period is over. The batches are :func:`magdash.extraction.number_vector_batches`,
the same as an in-process extraction's, so both store the same vectors; the worker also works out
the token facts of the items the store lacks them for (:func:`magdash.extraction.token_facts`), which
the driver records with the shards.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from magdash.errors import ModelLoadError
from magdash.params import ProgressCallback
from magdash.stimuli import StimulusItem, StimulusSet
from magdash.store import ModelRecord, Store, shards
from magdash.sweep.plan import Cell, SweepPlan
from magdash.tokenization import DigitSplitting, NumberTokens


@dataclass(frozen=True)
class ExtractJob:
    """What a worker needs to extract a cell's missing sentences: no store, no connection."""

    spec: str
    name: str
    model_id: str
    dtype: str
    position: str
    device: str
    device_map: str | None
    batch_size: int
    padding_side: str
    trust_remote_code: bool
    allow_pickle: bool
    model_cache: str | None
    items: tuple[StimulusItem, ...]
    shard_folder: str
    token_items: tuple[StimulusItem, ...] = ()  # the set's items whose token facts the store lacks
    with_splitting: bool = False  # the store lacks the model's digit splitting


@dataclass(frozen=True)
class ExtractOutput:
    """A finished job's model record and the shards it wrote, in its items' order."""

    record: ModelRecord
    shards: tuple[shards.Shard, ...]
    token_facts: tuple[NumberTokens, ...] = ()  # of the job's token_items, in their order
    token_keys: tuple[str, ...] = ()
    digit_splitting: DigitSplitting | None = None


def model_identity(cell: Cell, model_cache: str | None = None) -> str:
    """The ``model_id`` a cell's vectors are stored under, from the weights' fingerprint (no load)."""
    from magdash.environment import transformers_version
    from magdash.sources import resolve_model

    source = resolve_model(cell.model.spec, allow_pickle=cell.model.allow_pickle, model_cache=model_cache)
    return source.model_id(cell.dtype, cell.position, transformers_version())


def extract_job(store: Store, plan: SweepPlan, cell: Cell, stimuli: StimulusSet, model_id: str) -> ExtractJob | None:
    """The cell's missing sentences as a job; None when none is missing and the model is stored,
    so there is nothing for a worker (the in-process extraction then only records the name)."""
    missing = store.missing_item_keys(model_id, stimuli.name)
    if not missing and store.find_model_by_id(model_id) is not None:
        return None
    untokenized, without_splitting = store.missing_token_facts(model_id, stimuli.name)
    return ExtractJob(
        spec=cell.model.spec, name=cell.store_name, model_id=model_id, dtype=cell.dtype, position=cell.position,
        device=plan.device, device_map=cell.model.device_map, batch_size=plan.batch_size,
        padding_side=plan.padding_side, trust_remote_code=cell.model.trust_remote_code,
        allow_pickle=cell.model.allow_pickle, model_cache=plan.model_cache,
        items=tuple(item for item in stimuli.items if item.key in missing),
        shard_folder=str(store.shards.absolute()),  # a worker's working folder is not the driver's
        token_items=tuple(item for item in stimuli.items if item.key in untokenized),
        with_splitting=without_splitting,
    )


def run_extract_job(job: ExtractJob, progress: ProgressCallback | None = None) -> ExtractOutput:
    """Load the model, extract the job's items and write them as shards; ``progress(done, total)``
    after each batch."""
    from magdash.extraction import NumberVectors, model_record_for, number_vector_batches, shard_parts, token_facts
    from magdash.sources import load_model

    loaded = load_model(
        job.spec, dtype=job.dtype, device=job.device, device_map=job.device_map,
        trust_remote_code=job.trust_remote_code, allow_pickle=job.allow_pickle, model_cache=job.model_cache,
    )
    record = model_record_for(loaded, job.name, job.position)
    if record.model_id != job.model_id:
        raise ModelLoadError(
            f"the worker's {job.spec!r} is not the driver's (other weights or another transformers "
            "version): install the same environment on every node"
        )
    facts, splitting = token_facts(loaded.tokenizer, job.token_items, job.position, with_splitting=job.with_splitting)
    folder = Path(job.shard_folder)
    written: list[shards.Shard] = []
    pending: list[NumberVectors] = []
    done = pending_bytes = 0

    def flush() -> None:
        nonlocal pending_bytes
        if pending:
            keys, vectors, norms = shard_parts(pending)
            written.append(shards.write_shard(folder, job.model_id, keys, vectors, for_worker=True, norms=norms))
            pending.clear()
            pending_bytes = 0

    batches = number_vector_batches(
        loaded, job.items, position=job.position, batch_size=job.batch_size, padding_side=job.padding_side
    )
    for batch in batches:
        pending.append(batch)
        pending_bytes += batch.vectors.nbytes
        done += len(batch.keys)
        if pending_bytes >= shards.WRITE_BATCH_BYTES:
            flush()
        if progress:
            progress(done, len(job.items))
    flush()
    return ExtractOutput(record, tuple(written), tuple(facts), tuple(item.key for item in job.token_items), splitting)


def register_output(store: Store, output: ExtractOutput) -> int:
    """Register a finished job's model and shards; items another run stored first are skipped.

    Returns how many sentences were written.
    """
    store.register_model(output.record)
    store.write_token_facts(output.record.model_id, output.token_keys, output.token_facts, output.digit_splitting)
    return sum(store.register_worker_shard(output.record.model_id, shard) for shard in output.shards)
