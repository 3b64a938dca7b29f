"""The one :class:`Store`: every SQL statement on a magdash store file.

Vectors are content-addressed. A stored vector is keyed by the model's identity
(``model_id``: weights fingerprint, dtype, transformers version, token position, a prepended
BOS) and the stimulus item's key (sentence text plus the number's character span), so extracting
what is stored is a no-op and a killed run resumes with only what is missing. Each write batch
becomes one Parquet shard, registered with its items' completion markers in one transaction, so
a crash never leaves half a batch.

Connections, locking and retry are :mod:`magdash.store.connection`'s, the schema and its
migrations :mod:`magdash.store.schema`'s, the shards :mod:`magdash.store.shards`'s, the metric
tables :mod:`magdash.store.metrics`'s, and the npz and Parquet layouts :mod:`magdash.store.npz`'s and
:mod:`magdash.store.parquet`'s (:mod:`magdash.store.codec` reads only the vector tables of stores
before schema 5, for their migration).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from magdash.comparison_stimuli import ComparisonSet
from magdash.errors import ReadOnlyStoreError, StoreError
from magdash.norm_outliers import OUTLIER_NORM_FACTOR
from magdash.stimuli import (
    DEFAULT_NUMBER_FORMAT,
    StimulusSet,
    check_reserved_name,
    content_hash,
    default_stimulus_set,
    several_sets_message,
)
from magdash.store import activations, metrics, npz, parquet, shards, tokens, trials
from magdash.store.connection import StoreFile
from magdash.store.records import LayerData, ModelRecord
from magdash.store.schema import (
    create_tables,
    ensure_schema,
    insert_nonfinite,
    insert_vector_norms,
    result_checksum,
    schema_version,
)
from magdash.store.vectors import StoredVectors
from magdash.tokenization import DigitSplitting, NumberTokens

log = logging.getLogger(__name__)

# Store files swept of unregistered shards by this process: a sweep lists the whole folder, so
# it runs when a process first opens a store, not on every one of its short-lived Store objects.
_SWEPT: set[str] = set()
_SWEPT_GUARD = threading.Lock()


class _GroupCommit:
    """Registers the shards a store's writer threads finish in as few transactions as they allow.

    A registration is one DuckDB transaction (attach, commit, detach: a few fsyncs, 160-210 ms on
    a GPU server's disk) and the catalog takes one at a time, so an extraction writing shards on
    several threads queued for it: at Llama-3-8B's shape on an H200, 20 registrations were most of
    the time the passes waited for the store. A thread that finds the catalog free registers every
    shard waiting at that moment in one transaction (its own included); one that finds its shard
    registered meanwhile returns its count. A failed transaction fails every shard in it, each
    writer raising the error and deleting its shard, as a failed registration of one did.

    Args:
        register: registers (model id, shard) pairs in one transaction; returns each one's count.
    """

    def __init__(self, register: Callable[[Sequence[tuple[str, shards.Shard]]], list[int]]):
        self._register = register
        self._lock = threading.Lock()  # guards the queue and the outcomes
        self._turn = threading.Lock()  # one registering thread at a time
        self._waiting: list[tuple[str, shards.Shard]] = []
        self._outcomes: dict[int, int | BaseException] = {}

    def register(self, model_id: str, shard: shards.Shard) -> int:
        """Register ``shard`` of ``model_id``, alone or with others waiting; how many items it adds.

        Args:
            model_id: the identity of the shard's vectors.
            shard: a shard written and held locked by the calling thread.
        """
        with self._lock:
            self._waiting.append((model_id, shard))
        with self._turn:
            with self._lock:
                batch, self._waiting = self._waiting, []
            if batch:
                try:
                    outcomes: list[int | BaseException] = list(self._register(batch))
                except BaseException as error:  # every shard of the transaction shares its failure
                    outcomes = [error] * len(batch)
                with self._lock:
                    self._outcomes.update({id(item): outcome for (_, item), outcome in zip(batch, outcomes, strict=True)})
            with self._lock:
                outcome = self._outcomes.pop(id(shard))
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class Store:
    """A magdash store file. Cheap to create; holds no connection between calls.

    Args:
        path: the store file (default ``$MAGDASH_STORE``, else ``cache/magdash.duckdb``).
        lock_timeout_s: how long to wait for another process holding the file.
        create: create the store when nothing is at ``path`` (reading commands pass False: a
            path with no store is then a :class:`~magdash.errors.NoStoreError`, and nothing is
            created). Whatever else is at the path, if it is not a store, is refused untouched.
        read_only: attach the file read-only: results are computed but not kept, and every
            other write is a :class:`~magdash.errors.ReadOnlyStoreError`.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, lock_timeout_s: float | None = None,
                 create: bool = True, read_only: bool = False):
        self._file = StoreFile(path, lock_timeout_s=lock_timeout_s, create=create, read_only=read_only)
        if not self._file.exists:
            self._file.create(create_tables)
        self.path = self._file.path
        self.lock_timeout_s = self._file.lock_timeout_s
        self.shards = shards.shard_folder(self.path)
        # (model, stimulus set) -> where a complete set's vectors are: they never move (registered
        # shards are immutable and done rows are never removed), so a long-lived Store (the app's)
        # reads a layer without a catalog query.
        self._complete_sets: dict[tuple[str, str], _LayerPlan] = {}
        self._registrations = _GroupCommit(lambda waiting: self._register_shards(waiting))  # looked up per call
        with self._file.session():
            ensure_schema(self._file, self.shards)
            if not self.read_only:
                _sweep_once_per_process(self)

    @property
    def read_only(self) -> bool:
        """Whether the store is open read-only: asked for, or fallen back to when its file cannot be written
        (a read-only file system), in which case opening it logged a warning saying so."""
        return self._file.read_only

    def session(self):
        """A context in which this store's operations share one open file (see
        :meth:`magdash.store.connection.StoreFile.session`): for a group of quick lookups, never
        around a computation, since other processes wait for the file meanwhile."""
        return self._file.session()

    def check_writable(self) -> None:
        """Refuse, with the reason, a write to a store open read-only (asked for, or a file that cannot
        be written): a :class:`~magdash.errors.ReadOnlyStoreError`. A command that writes asks first, before
        its work."""
        self._file.check_writable()

    def schema_version(self) -> int:
        """The schema version the store file records (:data:`~magdash.store.SCHEMA_VERSION` once opened by this
        version)."""
        return schema_version(self._file)

    def compact(self) -> tuple[int, int]:
        """Rewrite the catalog file without the space DuckDB freed inside it (dropped tables, old
        results); the shards are untouched. Returns the file's size in bytes before and after
        (:meth:`magdash.store.connection.StoreFile.compact`)."""
        return self._file.compact()

    # -- models ------------------------------------------------------------------------

    def register_model(self, record: ModelRecord) -> None:
        """Add a model under its name; the same identity again is a no-op.

        A different checkpoint under a taken name is refused rather than mixed in, so two
        checkpoints never share cache entries and nothing stored is overwritten.

        Args:
            record: the model's name and identity (:class:`~magdash.store.ModelRecord`).
        """
        with self._file.transaction() as connection:
            _register_model(connection, record)

    def register(self, stimuli: StimulusSet, record: ModelRecord, *, join_stored: bool = False) -> str:
        """Register a stimulus set and a model in one transaction: if either is refused, neither is stored.

        With ``join_stored`` (for a set name magdash chose) sentences already stored under another
        name join that set. Returns the name the set is stored under.

        Args:
            stimuli: the stimulus set.
            record: the model's name and identity.
            join_stored: let sentences already stored under another name join that set (for a set name magdash chose
                itself).
        """
        with self._file.transaction() as connection:
            if join_stored:
                stimuli = _as_stored(connection, stimuli)
            _register_stimulus_set(connection, stimuli)
            _register_model(connection, record)
        return stimuli.name

    def model_record(self, name: str) -> ModelRecord:
        """The stored record of model ``name`` (a :class:`~magdash.errors.StoreError` naming the stored models when
        there is none).

        Args:
            name: the model's name in the store.
        """
        with self._file.connect() as connection:
            return _model_record(connection, name)

    def find_model_by_id(self, model_id: str) -> str | None:
        """The first name a model of this identity is stored under, or None.

        Args:
            model_id: the identity of the vectors (:meth:`magdash.sources.ModelSource.model_id`).
        """
        with self._file.connect() as connection:
            return _first_name_of(connection, model_id)

    def model_names(self) -> list[str]:
        """Every stored model's name, sorted."""
        with self._file.connect() as connection:
            rows = connection.execute("SELECT name FROM models ORDER BY name").fetchall()
        return [r[0] for r in rows]

    def list_models(self) -> pd.DataFrame:
        """Every stored model with its identity and the stimulus sets it has, complete or not."""
        with self._file.connect() as connection:
            models = connection.execute(
                "SELECT name, model_id, source, architecture, n_blocks, hidden_size, dtype, position,"
                " is_random, fingerprint, transformers_version, sequence_start, created_at FROM models ORDER BY name"
            ).df()
            progress = self._progress_query(connection)
            flagged = connection.execute(
                "SELECT model_id, list(DISTINCT layer ORDER BY layer) AS layers FROM nonfinite GROUP BY model_id"
            ).fetchall()
            splitting = dict(connection.execute("SELECT model_id, splits_digits FROM digit_splitting").fetchall())
        complete = progress[progress["done"] == progress["total"]]
        sets = complete.groupby("model_id")["set_name"].apply(lambda s: ", ".join(sorted(s)))
        models["stimulus_sets"] = models["model_id"].map(sets).fillna("")
        layers = {model_id: ", ".join(map(str, flagged_layers)) for model_id, flagged_layers in flagged}
        models["nonfinite_layers"] = models["model_id"].map(layers).fillna("")
        models["splits_digits"] = models["model_id"].map(splitting).fillna("")
        return models

    def _progress_query(self, connection: duckdb.DuckDBPyConnection) -> pd.DataFrame:
        return connection.execute(
            """
            WITH totals AS (SELECT set_name, count(*) AS total FROM stimulus_items GROUP BY set_name),
                 hits AS (
                    SELECT d.model_id, i.set_name, count(*) AS done
                    FROM done d JOIN stimulus_items i ON i.item_key = d.item_key
                    GROUP BY d.model_id, i.set_name)
            SELECT h.model_id, h.set_name, h.done, t.total
            FROM hits h JOIN totals t USING (set_name)
            """
        ).df()

    def extraction_progress(self) -> pd.DataFrame:
        """One row per (model, stimulus set) with stored and total item counts."""
        with self._file.connect() as connection:
            progress = self._progress_query(connection)
            names = connection.execute("SELECT name, model_id FROM models").df()
        merged = names.merge(progress, on="model_id")
        return merged[["name", "set_name", "done", "total"]].sort_values(["name", "set_name"], ignore_index=True)

    # -- stimulus sets -----------------------------------------------------------------

    def register_stimulus_set(self, stimuli: StimulusSet) -> None:
        """Store a stimulus set; the same content again is a no-op, a changed one is refused, and
        so is a new name for sentences stored under another (one content is one set: see
        :meth:`known_as`).

        Args:
            stimuli: the stimulus set to store.
        """
        with self._file.transaction() as connection:
            _register_stimulus_set(connection, stimuli)

    def known_as(self, stimuli: StimulusSet) -> StimulusSet:
        """``stimuli`` under the name its sentences are stored as, when that is another name.

        For names magdash chose itself (a default), so that the same sentences never become a
        second set: a model would then have both, and every analysis would ask which one.

        Args:
            stimuli: a stimulus set under a name magdash chose.
        """
        with self._file.connect() as connection:
            return _as_stored(connection, stimuli)

    def stimulus_set(self, name: str) -> StimulusSet:
        """The stored stimulus set ``name``: its carriers, magnitudes and items.

        Args:
            name: the stimulus set's name.
        """
        with self._file.connect() as connection:
            return _stimulus_set(connection, name)

    def stimulus_set_names(self) -> list[str]:
        """Every stored stimulus set's name, sorted."""
        with self._file.connect() as connection:
            rows = connection.execute("SELECT name FROM stimulus_sets ORDER BY name").fetchall()
        return [r[0] for r in rows]

    def in_number_format(self, stimuli: str, number_format: str) -> str | None:
        """The stored set holding the carriers and magnitudes of set ``stimuli`` written in
        ``number_format`` (:data:`magdash.stimuli.NUMBER_FORMATS`); None when none is stored.

        Args:
            stimuli: a stored stimulus set's name.
            number_format: the number format wanted.
        """
        with self._file.connect() as connection:
            carriers, magnitudes = _stimulus_grid(connection, stimuli)
            return _stored_name_for_content(connection, content_hash(carriers, magnitudes, number_format))

    def number_formats(self) -> dict[str, str]:
        """Every stored stimulus set's number format (:data:`magdash.stimuli.NUMBER_FORMATS`), by set name."""
        with self._file.connect() as connection:
            return dict(connection.execute("SELECT name, number_format FROM stimulus_sets ORDER BY name").fetchall())

    def set_carriers(self) -> dict[str, tuple[str, ...]]:
        """Every stored stimulus set's carrier templates, by set name."""
        with self._file.connect() as connection:
            rows = connection.execute("SELECT name, carriers FROM stimulus_sets ORDER BY name").fetchall()
        return {name: tuple(json.loads(carriers)) for name, carriers in rows}

    def stimulus_sets_for(self, name: str) -> list[str]:
        """The stimulus sets completely extracted for model ``name``.

        Args:
            name: the model's name in the store.
        """
        model_id = self.model_record(name).model_id
        with self._file.connect() as connection:
            progress = self._progress_query(connection)
        rows = progress[(progress["model_id"] == model_id) & (progress["done"] == progress["total"])]
        return sorted(rows["set_name"])

    def resolve_stimuli(self, name: str, stimuli: str | None) -> str:
        """The stimulus set to use: the one asked for, else the rule of
        :func:`magdash.stimuli.default_stimulus_set` over the model's complete sets ('paper' when
        held, else the only one).

        Args:
            name: the model's name in the store.
            stimuli: the set asked for (checked to be complete), or None for the default set.
        """
        available = self.stimulus_sets_for(name)
        if stimuli is not None:
            if stimuli not in available:
                listed = ", ".join(available) or "none"
                raise StoreError(
                    f"model {name!r} has no complete stimulus set {stimuli!r} (it has: {listed}); "
                    "extract it first"
                )
            return stimuli
        if not available:
            raise StoreError(f"model {name!r} has no complete stimulus set yet; run extract first")
        chosen = default_stimulus_set(available)
        if chosen is None:
            raise StoreError(several_sets_message(f"model {name!r} has", available), parameters=("stimuli",))
        return chosen

    def vectors(self, name: str, stimuli: str | None = None) -> StoredVectors:
        """Model ``name``'s vectors on ``stimuli`` as the analyses read them (a
        :class:`~magdash.store.vectors.VectorSource` whose results this store caches).

        Args:
            name: the model's name in the store.
            stimuli: a stimulus set complete for the model; None takes the default one (:meth:`resolve_stimuli`).
        """
        with self.session():
            record = self.model_record(name)
            stimuli = self.resolve_stimuli(name, stimuli)
            stimulus_set = self.stimulus_set(stimuli)
        return StoredVectors(self, record, stimuli, tuple(stimulus_set.magnitudes), tuple(stimulus_set.carriers))

    # -- vectors -----------------------------------------------------------------------

    def missing_item_keys(self, model_id: str, set_name: str) -> set[str]:
        """The keys of the set's items the model has no stored vectors for.

        Args:
            model_id: the identity of the model's vectors.
            set_name: the stimulus set's name.
        """
        with self._file.connect() as connection:
            return _missing_item_keys(connection, model_id, set_name)

    def unstored_among(self, model_id: str, item_keys: Sequence[str]) -> set[str]:
        """The keys among ``item_keys`` that ``model_id`` has no stored vectors for, whatever set they
        belong to (nothing is written: an extraction asks before it checks its model).

        Args:
            model_id: the identity of the model's vectors.
            item_keys: the stimulus items' keys.
        """
        with self._file.connect() as connection:
            return set(item_keys) - _done_among(connection, model_id, item_keys)

    def extraction_turn(self, model_id: str):
        """A context holding ``model_id``'s turn to extract into this store, yielding whether it waited for
        another extraction of it (:func:`magdash.store.shards.extraction_turn`); a read-only store,
        which no extraction writes to, takes none.

        Args:
            model_id: the identity of the vectors about to be extracted.
        """
        return nullcontext(False) if self.read_only else shards.extraction_turn(self.shards, model_id)

    def start_extraction(self, stimuli: StimulusSet, model_id: str) -> tuple[set[str], str | None]:
        """Register ``stimuli`` (:meth:`register_stimulus_set`) and return the keys of its items
        ``model_id`` still misses and the name the model is stored under (None: not stored), in
        one transaction: an extraction's catalog work before its forward passes.

        Args:
            stimuli: the stimulus set to extract.
            model_id: the identity of the vectors about to be extracted.
        """
        with self._file.transaction() as connection:
            _register_stimulus_set(connection, stimuli)
            return _missing_item_keys(connection, model_id, stimuli.name), _first_name_of(connection, model_id)

    # -- token facts ---------------------------------------------------------------------

    def missing_token_facts(self, model_id: str, set_name: str) -> tuple[set[str], bool]:
        """The keys of the set's items whose token facts ``model_id`` lacks, and whether its digit
        splitting lacks too (:mod:`magdash.store.tokens`): what an extraction still records.

        Args:
            model_id: the model's stored identity (``ModelRecord.model_id``).
            set_name: the stimulus set's name.
        """
        with self._file.connect() as connection:
            return tokens.items_without_tokens(connection, model_id, set_name), \
                not tokens.has_digit_splitting(connection, model_id)

    def write_token_facts(
        self, model_id: str, item_keys: Sequence[str], facts: Sequence[NumberTokens],
        splitting: DigitSplitting | None = None,
    ) -> int:
        """Record how ``model_id``'s tokenizer cut each item's number (``facts[i]`` for
        ``item_keys[i]``: :func:`magdash.tokenization.tokenize_numbers`) and whether it splits digits,
        in one transaction; what is recorded already is kept. Returns the item rows added.

        Args:
            model_id: the model's stored identity (``ModelRecord.model_id``).
            item_keys: the stimulus items' keys.
            facts: each item's token facts, in the order of ``item_keys``.
            splitting: the tokenizer's digit splitting; None records none.
        """
        with self._file.transaction() as connection:
            return tokens.insert_tokens(connection, model_id, item_keys, facts, splitting)

    def number_tokens(self, name: str, stimuli: str) -> list[NumberTokens] | None:
        """The token facts of every item of ``stimuli`` for model ``name``, in the set's item order
        (magnitude, then carrier); None when they are not all recorded (vectors stored before
        schema 8, or imported: the next ``extract`` of the model records them).

        Args:
            name: the model's name in the store.
            stimuli: the stimulus set's name.
        """
        with self._file.connect() as connection:
            record = _model_record(connection, name)
            return tokens.read_tokens(connection, record.model_id, record.position, stimuli)

    def has_number_tokens(self, name: str, stimuli: str) -> bool:
        """Whether every item of ``stimuli`` has its token facts for model ``name``.

        Args:
            name: the model's name in the store.
            stimuli: the stimulus set's name.
        """
        with self._file.connect() as connection:
            record = _model_record(connection, name)
            return not tokens.items_without_tokens(connection, record.model_id, stimuli)

    def digit_splitting(self, name: str) -> DigitSplitting | None:
        """Whether model ``name``'s tokenizer splits digits (:func:`magdash.tokenization.digit_splitting`);
        None when not recorded.

        Args:
            name: the model's name in the store.
        """
        with self._file.connect() as connection:
            return tokens.read_digit_splitting(connection, _model_record(connection, name).model_id)

    # -- vectors (continued) -------------------------------------------------------------

    def write_vectors(self, model_id: str, item_keys: Sequence[str], vectors: shards.VectorParts,
                      norms: np.ndarray | None = None) -> int:
        """Store ``vectors`` (n_items, n_layers, d) for ``item_keys`` as one shard, registered in one
        transaction with the items' completion markers (:mod:`magdash.store.shards`).

        Items already marked done (another run got there first, or the same key earlier in the
        batch) are skipped, so concurrent extractions of the same model never duplicate rows; a
        shard none of whose items is new is deleted. Returns how many items were written.

        Args:
            model_id: the identity of the vectors (the model must be registered).
            item_keys: the stimulus items' keys, one per row of ``vectors``.
            vectors: (n_items, n_layers, d) number-token vectors, or consecutive parts of their rows
                (an extraction's batches), which are written without being joined first.
            norms: (n_items, n_layers) float64 L2 norms of the vectors where the caller has them
                (computed on the GPU that made them); None: computed here.
        """
        if not len(item_keys):
            return 0
        self._file.check_writable()  # before the shard is written, not at its registration
        # Items done meanwhile are left out at registration rather than looked up first: that
        # costs a second connection per batch for what only a concurrent extraction causes.
        with shards.new_shard(self.shards, model_id, item_keys, vectors, norms) as shard:
            return self._registrations.register(model_id, shard)

    def register_worker_shard(self, model_id: str, shard: shards.Shard) -> int:
        """Register a shard a sweep worker wrote into this store's folder
        (:func:`magdash.store.shards.write_shard` with ``for_worker``); items already done are skipped.
        Returns how many items it adds.

        Args:
            model_id: the identity of the shard's vectors.
            shard: the shard the worker wrote and reported.
        """
        shards.check_worker_shard(self.shards, shard)
        return self._registrations.register(model_id, shard)

    def _register_shards(self, waiting: Sequence[tuple[str, shards.Shard]]) -> list[int]:
        """Register ``waiting`` (model id, shard) in one transaction; each shard is marked
        registered only once the commit succeeded (a failed one leaves them all to delete)."""
        with self._file.transaction() as connection:
            counts = [_register_shard(connection, model_id, shard) for model_id, shard in waiting]
        for (_, shard), count in zip(waiting, counts, strict=True):
            shard.registered = count > 0  # a shard none of whose items is new is deleted unregistered
        return counts


    def sweep_shards(self) -> list[str]:
        """Delete shard files no transaction registered (left by killed writers); returns their names."""
        return shards.sweep(self.shards, self._registered_shards)

    def _registered_shards(self) -> set[str]:
        with self._file.connect() as connection:
            return {row[0] for row in connection.execute("SELECT shard FROM shards").fetchall()}

    def nonfinite_summary(self) -> pd.DataFrame:
        """(name, set_name, layer, vectors): how many stored vectors hold Inf or NaN, where any do."""
        with self._file.connect() as connection:
            return connection.execute(
                "SELECT m.name, i.set_name, n.layer, count(*) AS vectors FROM nonfinite n "
                "JOIN models m ON m.model_id = n.model_id JOIN stimulus_items i ON i.item_key = n.item_key "
                "GROUP BY m.name, i.set_name, n.layer ORDER BY m.name, i.set_name, n.layer"
            ).df()

    def nonfinite_counts(self, name: str, stimuli: str) -> dict[int, int]:
        """Layer -> how many of the stimulus set's stored vectors hold Inf or NaN (flagged layers only).

        Args:
            name: the model's name in the store.
            stimuli: the stimulus set's name.
        """
        self.model_record(name)  # an unknown model is an error, not "nothing flagged"
        return nonfinite_counts_in(self.nonfinite_summary(), name, stimuli)

    def outlier_vectors(self, name: str, stimuli: str, factor: float = OUTLIER_NORM_FACTOR) -> pd.DataFrame:
        """The stimulus set's stored vectors whose norm, recorded as it was written, exceeds
        ``factor`` x the median norm of the set's vectors at that layer (:mod:`magdash.norm_outliers`).

        Args:
            name: the stored model.
            stimuli: the stimulus set; the median is over its stored vectors.
            factor: the multiple of the layer's median norm above which a vector is flagged.
        Returns:
            One row per flagged vector: layer, magnitude, carrier (the carrier's index), sentence,
            norm, median_norm, ratio; ordered by layer, magnitude and carrier.
        """
        model_id = self.model_record(name).model_id
        self.stimulus_set(stimuli)  # an unknown set is an error, not "nothing flagged"
        with self._file.connect() as connection:
            return connection.execute(
                "WITH stored AS (SELECT n.layer, i.magnitude, i.carrier_index AS carrier, i.sentence, n.norm"
                " FROM vector_norms n JOIN stimulus_items i ON i.item_key = n.item_key AND i.set_name = ?"
                " WHERE n.model_id = ?),"
                " medians AS (SELECT layer, median(norm) AS median_norm FROM stored WHERE isfinite(norm)"
                " GROUP BY layer)"
                " SELECT s.layer, s.magnitude, s.carrier, s.sentence, s.norm, m.median_norm,"
                " s.norm / m.median_norm AS ratio FROM stored s JOIN medians m ON m.layer = s.layer"
                " WHERE isfinite(s.norm) AND m.median_norm > 0 AND s.norm > ? * m.median_norm"
                " ORDER BY s.layer, s.magnitude, s.carrier",
                [stimuli, model_id, factor],
            ).df()

    def read_layer(self, name: str, stimuli: str, layer: int) -> LayerData:
        """One layer's vectors as a (n_magnitudes, n_carriers, d) float32 array.

        Args:
            name: the model's name in the store.
            stimuli: the stimulus set, completely extracted for the model.
            layer: the layer index (0 = embeddings).
        """
        return next(self.read_layers(name, stimuli, [layer]))

    def read_layers(self, name: str, stimuli: str, layers: Sequence[int] | None = None) -> Iterator[LayerData]:
        """Yield layers one at a time (all by default).

        The model, the stimulus set and where each item's vectors are come from the catalog on
        one short connection (once per Store object for a complete set, whose vectors never
        move); the layers are then read from the shards, which are immutable, without touching
        DuckDB, so a writer in another process never waits for a reader, nor a reader for a
        writer's extraction. This generator keeps no reference to a layer it has yielded, so
        while the next layer is read memory holds that layer and whatever the caller still keeps.

        Args:
            name: the model's name in the store.
            stimuli: the stimulus set, completely extracted for the model.
            layers: the layer indices to read, in that order; None reads every layer.
        """
        plan = self._complete_sets.get((name, stimuli)) or self._layer_plan(name, stimuli)
        record = plan.record
        layers = range(record.n_layers) if layers is None else list(layers)
        for layer in layers:
            if not 0 <= layer < record.n_layers:
                raise StoreError(f"layer {layer} does not exist for {name!r}: use 0..{record.n_layers - 1}")
        n_items = len(plan.magnitudes) * len(plan.carriers)
        if layers and plan.n_located != n_items:
            raise StoreError(
                f"model {record.name!r} has {plan.n_located} of {n_items} vectors of stimulus set "
                f"{stimuli!r}; run extract again to finish it"
            )
        for layer in layers:
            yield self._read_layer(plan, layer)

    def _layer_plan(self, name: str, stimuli: str) -> _LayerPlan:
        with self._file.connect() as connection:
            record = _model_record(connection, name)
            carriers, magnitudes = _stimulus_grid(connection, stimuli)
            located = connection.execute(
                "SELECT d.shard, d.row_index, i.magnitude, i.carrier_index FROM done d "
                "JOIN stimulus_items i USING (item_key) WHERE d.model_id = ? AND i.set_name = ?",
                [record.model_id, stimuli],
            ).fetchnumpy()
        # An item's place in the (magnitudes x carriers) grid, as StimulusSet.items orders them.
        grid = np.asarray(magnitudes, dtype=np.int64)
        by_value = np.argsort(grid, kind="stable")
        magnitude_index = by_value[np.searchsorted(grid[by_value], np.asarray(located["magnitude"], np.int64))]
        targets = magnitude_index * len(carriers) + np.asarray(located["carrier_index"], np.int64)
        names, shard_of = np.unique(np.asarray(located["shard"], dtype=object), return_inverse=True)
        rows = np.asarray(located["row_index"], np.int64)
        plan = _LayerPlan(
            record, carriers, magnitudes,
            tuple((str(shard), targets[shard_of == index], rows[shard_of == index]) for index, shard in enumerate(names)),
        )
        if plan.n_located == len(magnitudes) * len(carriers):
            self._complete_sets[(name, stimuli)] = plan
        return plan

    def _read_layer(self, plan: _LayerPlan, layer: int) -> LayerData:
        record = plan.record
        vectors = np.empty((len(plan.magnitudes), len(plan.carriers), record.hidden_size), dtype=np.float32)
        flat = vectors.reshape(-1, record.hidden_size)
        for shard, targets, rows in plan.shards:
            shards.read_layer_into(self.shards, shard, layer, flat, targets, rows)
        return LayerData(
            layer=layer,
            label=record.layer_labels[layer],
            magnitudes=np.asarray(plan.magnitudes, dtype=np.float64),
            carriers=list(plan.carriers),
            vectors=vectors,
        )

    def data_fingerprint(self, name: str, stimuli: str) -> str:
        """Changes whenever the vectors behind (model, stimulus set) can have changed.

        Args:
            name: the model's name in the store.
            stimuli: the stimulus set's name.
        """
        record = self.model_record(name)
        stimulus_set = self.stimulus_set(stimuli)
        missing = len(self.missing_item_keys(record.model_id, stimuli))
        payload = f"{record.model_id}|{stimulus_set.content_hash}|{missing}"
        return hashlib.sha1(payload.encode()).hexdigest()[:20]

    # -- analysis cache ----------------------------------------------------------------

    def get_result(self, key: str) -> bytes | None:
        """The payload cached under ``key``, or None: when none is, and when the one there does not
        match the checksum kept with it (edited, damaged or copied under another key: stores are
        shared and mailed), which is logged as a warning, so the result is computed again and
        replaces it.

        Args:
            key: the result's cache key (:func:`magdash.runs.cache.result_key`).
        """
        with self._file.connect() as connection:
            row = connection.execute("SELECT payload, checksum FROM results WHERE key = ?", [key]).fetchone()
        if row is None:
            return None
        payload, checksum = bytes(row[0]) if row[0] is not None else b"", row[1]
        if checksum != result_checksum(key, payload):
            log.warning("the cached result %s in store %s is not what magdash wrote (its checksum does not match: "
                        "edited or damaged); it is computed again", key[:24], self.path)
            return None
        return payload

    def put_result(
        self, key: str, kind: str, payload: bytes, tables: Mapping[str, pd.DataFrame] | None = None
    ) -> None:
        """Cache ``payload`` under ``key`` and, in the same transaction, replace the result's
        rows in the metric tables of ``kind`` by ``tables`` (:mod:`magdash.store.metrics`).
        A read-only store keeps nothing: the result is only returned to its caller.

        Args:
            key: the result's cache key.
            kind: the result's kind (``analysis``, ``compare``, ...), which names its metric tables.
            payload: the result as plain data (never pickle).
            tables: metric table name -> the result's rows; None or empty writes none.
        """
        if self.read_only:
            log.info("store %s is read-only: result %s is not kept", self.path, key[:12])
            return
        with _not_kept_where_unwritable(self, key), self._file.transaction() as connection:
            connection.execute("DELETE FROM results WHERE key = ?", [key])
            connection.execute("INSERT INTO results (key, kind, payload, checksum) VALUES (?, ?, ?, ?)",
                               [key, kind, payload, result_checksum(key, payload)])
            metrics.replace_rows(connection, key, kind, tables or {})

    def put_metric_rows(self, key: str, kind: str, tables: Mapping[str, pd.DataFrame]) -> None:
        """Replace the metric rows of a result computed from other cached data (phase
        diagnostics come from cached samples and their own parameters) in one transaction;
        nothing on a read-only store.

        Args:
            key: the result key the rows belong to.
            kind: the result's kind, which names its metric tables.
            tables: metric table name -> the rows.
        """
        if self.read_only:
            return
        with _not_kept_where_unwritable(self, key), self._file.transaction() as connection:
            metrics.replace_rows(connection, key, kind, tables)

    def has_metric_rows(self, key: str, kind: str) -> bool:
        """Whether result ``key`` has a row in any of the metric tables of its ``kind``.

        Args:
            key: the result's cache key.
            kind: the result's kind.
        """
        owned = _metric_tables_of(kind)
        union = " UNION ALL ".join(f"SELECT 1 FROM {table.name} WHERE result_key = ?" for table in owned)
        with self._file.connect() as connection:
            row = connection.execute(f"SELECT 1 FROM ({union}) LIMIT 1", [key] * len(owned)).fetchone()
        return row is not None

    def results_without_rows(self, kind: str) -> list[str]:
        """The keys of the cached results of ``kind`` that have no row in its metric tables
        (results cached before the tables existed).

        Args:
            kind: the result kind (``analysis``, ``compare``, ``controls``, ``e5``).
        """
        owned = _metric_tables_of(kind)
        absent = " AND ".join(f"key NOT IN (SELECT result_key FROM {table.name})" for table in owned)
        with self._file.connect() as connection:
            found = connection.execute(f"SELECT key FROM results WHERE kind = ? AND {absent} ORDER BY key", [kind])
            return [row[0] for row in found.fetchall()]

    def metric_table(self, table: str) -> pd.DataFrame:
        """Every row of one metric table (``docs/metrics.md`` lists them and their columns).

        Args:
            table: the table's name (``fits``, ``hypotheses``, ...: :data:`magdash.store.metrics.METRIC_TABLES`).
        """
        name = _metric_table_name(table)
        with self._file.connect() as connection:
            return connection.execute(f"SELECT * FROM {name} ORDER BY computed_at, result_key").df()

    # -- frequency sources -------------------------------------------------------------

    def put_frequency_source(self, name: str, counts: pd.DataFrame, provenance: dict, *, replace: bool = False) -> None:
        """Store a frequency source: ``counts`` has columns number and count. A source already
        stored under ``name`` is refused, naming it, unless ``replace`` (stored counts are never
        replaced silently).

        Args:
            name: the source's name (a non-empty string).
            counts: the counts: columns ``number`` and ``count``.
            provenance: where the counts come from (corpus, files, rule), kept as JSON.
            replace: replace a source stored under ``name``.
        """
        if not isinstance(name, str) or not name.strip():
            raise StoreError("a frequency source needs a non-empty name")
        table = pa.table({
            "source": [name] * len(counts),
            "number": pd.to_numeric(counts["number"]).astype("int64").to_numpy(),
            "count": pd.to_numeric(counts["count"]).astype("int64").to_numpy(),
        })
        with self._file.transaction() as connection:
            if not replace:
                _refuse_stored_source(connection, name)
            connection.execute("DELETE FROM frequency_counts WHERE source = ?", [name])
            connection.execute("DELETE FROM frequency_sources WHERE name = ?", [name])
            connection.execute(
                "INSERT INTO frequency_sources (name, provenance) VALUES (?, ?)", [name, json.dumps(provenance)]
            )
            connection.register("new_counts", table)
            connection.execute("INSERT INTO frequency_counts SELECT * FROM new_counts")
            connection.unregister("new_counts")

    def check_new_frequency_source(self, name: str) -> None:
        """Refuse ``name`` as :meth:`put_frequency_source` would without ``replace`` when a source is stored
        under it, before the work of counting one.

        Args:
            name: the name a new source is to be stored under.
        """
        with self._file.connect() as connection:
            _refuse_stored_source(connection, name)

    def get_frequency_source(self, name: str) -> tuple[pd.DataFrame, dict]:
        """A stored frequency source's counts (number, count) and its provenance.

        Args:
            name: the source's name.
        """
        with self._file.connect() as connection:
            row = connection.execute("SELECT provenance FROM frequency_sources WHERE name = ?", [name]).fetchone()
            if row is None:
                raise StoreError(f"no frequency source named {name!r} in the store")
            counts = connection.execute(
                "SELECT number, count FROM frequency_counts WHERE source = ? ORDER BY number", [name]
            ).df()
        return counts, json.loads(row[0])

    def list_frequency_sources(self) -> pd.DataFrame:
        """Every stored frequency source: name, n_numbers, total (a Python int, exact however large) and
        provenance (JSON)."""
        with self._file.connect() as connection:
            # DuckDB sums BIGINTs exactly (as a HUGEINT); a frame would make the sum a float.
            rows = connection.execute(
                """
                SELECT s.name, count(c.number) AS n_numbers, coalesce(sum(c.count), 0) AS total, s.provenance
                FROM frequency_sources s LEFT JOIN frequency_counts c ON c.source = s.name
                GROUP BY s.name, s.provenance ORDER BY s.name
                """
            ).fetchall()
        frame = pd.DataFrame(rows, columns=["name", "n_numbers", "total", "provenance"])
        frame["total"] = pd.Series([int(total) for total in frame["total"]], index=frame.index, dtype=object)
        return frame

    # -- trials of forced-choice comparisons (magdash.store.trials) ----------------------------

    def put_comparison_set(self, comparisons: ComparisonSet) -> None:
        """Register a comparison design under its name (again: nothing changes); a name stored with
        another design is a :class:`~magdash.errors.StoreError`.

        Args:
            comparisons: the design (:class:`~magdash.comparison_stimuli.ComparisonSet`).
        """
        with self._file.transaction() as connection:
            trials.put_set(connection, comparisons)

    def comparison_sets(self) -> pd.DataFrame:
        """Every stored comparison set: name, content_hash, imported (trials stored without a design),
        n_trials (stored over every model), created_at."""
        with self._file.connect() as connection:
            return connection.execute(
                "SELECT s.name, s.content_hash, s.definition IS NULL AS imported, count(t.trial_id) AS n_trials, "
                "s.created_at FROM comparison_sets s LEFT JOIN trials t ON t.set_hash = s.content_hash "
                "GROUP BY s.name, s.content_hash, s.definition, s.created_at ORDER BY s.name").df()

    def comparison_set(self, name: str) -> ComparisonSet | None:
        """The design stored as ``name``; None for imported trials, which have none.

        Args:
            name: the comparison set's name.
        """
        with self._file.connect() as connection:
            row = trials.first_row(connection, "SELECT definition FROM comparison_sets WHERE name = ?", [name])
        if row is None:
            raise StoreError(f"no comparison set {name!r} in the store", parameters=("comparisons",))
        return None if row[0] is None else trials.from_definition(row[0])

    def put_trials(self, model: str, set_name: str, frame: pd.DataFrame) -> int:
        """Store the trials of ``model`` on the comparison set ``set_name`` that are not stored yet
        (one transaction); returns how many were new. A set name not stored is registered as imported
        trials (published trials have no design object); a frame without ``trial_id`` gets one from
        each row's content and position.

        Args:
            model: the model's name.
            set_name: the comparison set's name (:meth:`put_comparison_set` registers a design first).
            frame: the trials frame (:data:`magdash.store.trials.REQUIRED_COLUMNS` at least).
        """
        if not isinstance(model, str) or not model.strip():
            raise StoreError("trials need a model name: give model=", parameters=("model",))
        with self._file.transaction() as connection:
            return trials.put(connection, model, trials.set_hash(connection, set_name, create_imported=True), frame)

    def trials(self, model: str, set_name: str) -> pd.DataFrame:
        """The stored trials of ``model`` on ``set_name`` (:data:`magdash.store.trials.TRIAL_COLUMNS`),
        in the order of their ids; empty when none are.

        Args:
            model: the model's name.
            set_name: the comparison set's name.
        """
        with self._file.connect() as connection:
            return trials.read(connection, model, trials.set_hash(connection, set_name))

    def missing_trials(self, model: str, comparisons: ComparisonSet, trial_ids: Sequence[str] | None = None) -> list[str]:
        """The trial ids of ``comparisons`` (or of ``trial_ids`` among them) not stored for ``model``,
        in the design's order; every one when the set is not stored yet.

        Args:
            model: the model's name.
            comparisons: the design.
            trial_ids: the ids asked about (default: every trial of the design).
        """
        asked = list(comparisons.trials()["trial_id"] if trial_ids is None else trial_ids)
        with self._file.connect() as connection:
            stored = trials.stored_ids(connection, model, comparisons.content_hash, asked)
        return [trial for trial in asked if trial not in stored]

    def put_trial_run(self, model: str, set_name: str, facts: Mapping[str, object]) -> None:
        """Record the facts of ``model``'s run on ``set_name`` (replacing earlier ones): whether the
        chat template was applied, the option tokens used, the model's identity.

        Args:
            model: the model's name.
            set_name: the comparison set's name.
            facts: JSON-writable facts.
        """
        with self._file.transaction() as connection:
            hash_ = trials.set_hash(connection, set_name)
            connection.execute("INSERT OR REPLACE INTO trial_runs (model, set_hash, facts) VALUES (?, ?, ?)",
                               [model, hash_, json.dumps(dict(facts), sort_keys=True)])

    def trial_run(self, model: str, set_name: str) -> dict | None:
        """The facts :meth:`put_trial_run` recorded, or None.

        Args:
            model: the model's name.
            set_name: the comparison set's name.
        """
        with self._file.connect() as connection:
            row = trials.first_row(connection,
                "SELECT r.facts FROM trial_runs r JOIN comparison_sets s ON s.content_hash = r.set_hash "
                "WHERE r.model = ? AND s.name = ?", [model, set_name])
        return None if row is None else json.loads(row[0])

    def trial_models(self) -> pd.DataFrame:
        """Every (model, set_name) with stored trials and how many: model, set_name, n_trials."""
        with self._file.connect() as connection:
            return connection.execute(
                "SELECT t.model, s.name AS set_name, count(*) AS n_trials FROM trials t "
                "JOIN comparison_sets s ON s.content_hash = t.set_hash GROUP BY t.model, s.name "
                "ORDER BY t.model, s.name").df()

    def delete_trials(self, model: str, set_name: str | None = None) -> int:
        """Delete ``model``'s trials (on ``set_name`` only, when given) and their run facts; returns
        how many trials went. The designs stay registered.

        Args:
            model: the model's name.
            set_name: the comparison set's name; None: every set.
        """
        with self._file.transaction() as connection:
            where, values = "model = ?", [model]
            if set_name is not None:
                where += " AND set_hash = ?"
                values.append(trials.set_hash(connection, set_name))
            row = trials.first_row(connection, f"SELECT count(*) FROM trials WHERE {where}", values)
            connection.execute(f"DELETE FROM trials WHERE {where}", values)
            connection.execute(f"DELETE FROM trial_runs WHERE {where}", values)
        return int(row[0]) if row else 0

    # -- npz import and export, arrays held in memory -------------------------------------

    # Stored through register() and write_vectors(): the npz layout speaks no SQL of its own.
    import_arrays = npz.import_arrays
    export_arrays = npz.export_arrays
    put = activations.put_activations
    export_parquet = parquet.export_parquet
    import_parquet_folder = parquet.import_parquet_folder


@dataclass(frozen=True)
class _LayerPlan:
    """Where a (model, stimulus set)'s vectors are: per shard, the grid positions and shard rows."""

    record: ModelRecord
    carriers: tuple[str, ...]
    magnitudes: tuple[int, ...]
    shards: tuple[tuple[str, np.ndarray, np.ndarray], ...]

    @property
    def n_located(self) -> int:
        return sum(len(rows) for _, _, rows in self.shards)


@contextmanager
def _not_kept_where_unwritable(store: Store, key: str) -> Iterator[None]:
    """Keep a result computed by a command that only reads as a read-only store would (not at all, with
    a warning) when its store file cannot be written after all (a writable file in a read-only folder)."""
    try:
        yield
    except ReadOnlyStoreError as error:
        log.warning("result %s is not kept: %s", key[:24], error)


def _sweep_once_per_process(store: Store) -> None:
    key = str(store.path.resolve())
    with _SWEPT_GUARD:
        if key in _SWEPT:
            return
        _SWEPT.add(key)
    swept = store.sweep_shards()
    if swept:
        log.warning("removed %d unfinished shard file(s) of %s left by an interrupted write", len(swept), store.path)


def _model_record(connection: duckdb.DuckDBPyConnection, name: str) -> ModelRecord:
    row = connection.execute(
        "SELECT name, model_id, source, fingerprint, dtype, transformers_version, architecture,"
        " n_blocks, hidden_size, layer_labels, position, is_random, sequence_start FROM models WHERE name = ?",
        [name],
    ).fetchone()
    if row is None:
        known = ", ".join(r[0] for r in connection.execute("SELECT name FROM models ORDER BY name").fetchall())
        raise StoreError(f"no model named {name!r} in the store (stored: {known or 'none yet'}); extract or import it first")
    return ModelRecord(
        name=row[0], model_id=row[1], source=row[2], fingerprint=row[3], dtype=row[4],
        transformers_version=row[5], architecture=row[6], n_blocks=int(row[7]),
        hidden_size=int(row[8]), layer_labels=tuple(json.loads(row[9])), position=row[10],
        is_random=bool(row[11]), sequence_start=row[12] or "",
    )


def _stimulus_set(connection: duckdb.DuckDBPyConnection, name: str) -> StimulusSet:
    carriers, magnitudes = _stimulus_grid(connection, name)
    row = connection.execute("SELECT number_format FROM stimulus_sets WHERE name = ?", [name]).fetchall()[0]
    return StimulusSet(name, carriers, magnitudes, row[0] or DEFAULT_NUMBER_FORMAT)


def _stimulus_grid(connection: duckdb.DuckDBPyConnection, name: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """A stored set's carriers and magnitudes, without building its items (a read needs only these)."""
    row = connection.execute("SELECT carriers, magnitudes FROM stimulus_sets WHERE name = ?", [name]).fetchone()
    if row is None:
        known = ", ".join(r[0] for r in connection.execute("SELECT name FROM stimulus_sets ORDER BY name").fetchall())
        raise StoreError(f"no stimulus set named {name!r} in the store (stored: {known or 'none yet'})")
    return tuple(json.loads(row[0])), tuple(json.loads(row[1]))


def _first_name_of(connection: duckdb.DuckDBPyConnection, model_id: str) -> str | None:
    row = connection.execute(
        "SELECT name FROM models WHERE model_id = ? ORDER BY created_at LIMIT 1", [model_id]
    ).fetchone()
    return None if row is None else row[0]


def _missing_item_keys(connection: duckdb.DuckDBPyConnection, model_id: str, set_name: str) -> set[str]:
    rows = connection.execute(
        "SELECT item_key FROM stimulus_items WHERE set_name = ? EXCEPT SELECT item_key FROM done WHERE model_id = ?",
        [set_name, model_id],
    ).fetchall()
    return {r[0] for r in rows}


def _register_shard(connection: duckdb.DuckDBPyConnection, model_id: str, shard: shards.Shard) -> int:
    """Register one shard inside the caller's transaction: its items not done yet (another run may
    have stored some meanwhile, or an earlier shard of the same transaction), their completion
    markers, Inf/NaN flags and norms. Returns how many items it adds (0: the shard is not needed)."""
    already = _done_among(connection, model_id, shard.item_keys)
    rows = []
    for row, key in enumerate(shard.item_keys):
        if key not in already:
            already.add(key)
            rows.append(row)
    if not rows:
        return 0  # another run stored all of them meanwhile: the shard is deleted unregistered
    connection.execute(
        "INSERT INTO shards (shard, model_id, n_rows, n_layers, dim, n_bytes) VALUES (?, ?, ?, ?, ?, ?)",
        [shard.name, model_id, len(shard.item_keys), shard.n_layers, shard.dim, shard.n_bytes],
    )
    connection.register("batch_done", pa.table({
        "model_id": pa.array([model_id] * len(rows), pa.string()),
        "item_key": pa.array([shard.item_keys[row] for row in rows], pa.string()),
        "shard": pa.array([shard.name] * len(rows), pa.string()),
        "row_index": pa.array(rows, pa.int32()),
    }))
    connection.execute("INSERT INTO done SELECT * FROM batch_done")
    connection.unregister("batch_done")
    wanted = set(rows)
    flags = [(row, layer) for row, layer in zip(shard.flagged_rows, shard.flagged_layers, strict=True)
             if row in wanted]
    insert_nonfinite(connection, model_id, [layer for _, layer in flags],
                     [shard.item_keys[row] for row, _ in flags])
    insert_vector_norms(connection, model_id, [shard.item_keys[row] for row in rows], shard.norms[rows])
    return len(rows)


def _done_among(connection: duckdb.DuckDBPyConnection, model_id: str, item_keys: Sequence[str]) -> set[str]:
    # No ``finally`` for the unregister: after a failed query (a damaged file) the transaction is
    # aborted, and a second error would hide the first, which says what happened.
    connection.register("batch_keys", pa.table({"item_key": pa.array(list(item_keys), pa.string())}))
    rows = connection.execute(
        "SELECT d.item_key FROM done d JOIN batch_keys b USING (item_key) WHERE d.model_id = ?", [model_id]
    ).fetchall()
    connection.unregister("batch_keys")
    return {row[0] for row in rows}


def _register_model(connection: duckdb.DuckDBPyConnection, record: ModelRecord) -> None:
    row = connection.execute(
        "SELECT model_id, fingerprint, dtype FROM models WHERE name = ?", [record.name]
    ).fetchone()
    if row is not None:
        if row[0] == record.model_id:
            return
        raise StoreError(
            f"the store already holds a different model named {record.name!r} "
            f"(fingerprint {row[1][:12]}, {row[2]}); pass name= to store this one under another name",
            parameters=("name",),
        )
    values = asdict(record)
    values["layer_labels"] = json.dumps(list(record.layer_labels))
    columns = list(values)
    connection.execute(
        f"INSERT INTO models ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        [values[c] for c in columns],
    )


def _register_stimulus_set(connection: duckdb.DuckDBPyConnection, stimuli: StimulusSet) -> None:
    check_reserved_name(stimuli)
    row = connection.execute("SELECT content_hash FROM stimulus_sets WHERE name = ?", [stimuli.name]).fetchone()
    if row is not None:
        if row[0] == stimuli.content_hash:
            return
        raise StoreError(
            f"a different stimulus set named {stimuli.name!r} is already stored; choose another name with stimuli=",
            parameters=("stimuli",),
        )
    stored = _stored_name_for_content(connection, stimuli.content_hash)
    if stored is not None:
        raise StoreError(
            f"the stored stimulus set {stored!r} holds these same sentences: use the name {stored!r} "
            "(or leave the name out) rather than a second name for them"
        )
    connection.execute(
        "INSERT INTO stimulus_sets (name, content_hash, carriers, magnitudes, number_format) VALUES (?, ?, ?, ?, ?)",
        [stimuli.name, stimuli.content_hash, json.dumps(list(stimuli.carriers)), json.dumps(list(stimuli.magnitudes)),
         stimuli.number_format],
    )
    items = pa.table({
        "set_name": [stimuli.name] * len(stimuli.items),
        "magnitude": [item.magnitude for item in stimuli.items],
        "carrier_index": [item.carrier_index for item in stimuli.items],
        "item_key": [item.key for item in stimuli.items],
        "sentence": [item.sentence for item in stimuli.items],
        "span_start": [item.start for item in stimuli.items],
        "span_end": [item.end for item in stimuli.items],
    })
    connection.register("new_items", items)
    connection.execute("INSERT INTO stimulus_items SELECT * FROM new_items")
    connection.unregister("new_items")


def _stored_name_for_content(connection: duckdb.DuckDBPyConnection, content_hash: str) -> str | None:
    row = connection.execute(
        "SELECT name FROM stimulus_sets WHERE content_hash = ? ORDER BY created_at, name LIMIT 1", [content_hash]
    ).fetchone()
    return None if row is None else row[0]


def _as_stored(connection: duckdb.DuckDBPyConnection, stimuli: StimulusSet) -> StimulusSet:
    """``stimuli`` renamed to the stored set holding the same sentences, if there is one."""
    stored = _stored_name_for_content(connection, stimuli.content_hash)
    if stored is None or stored == stimuli.name:
        return stimuli
    return StimulusSet(stored, stimuli.carriers, stimuli.magnitudes, stimuli.number_format)


def _refuse_stored_source(connection: duckdb.DuckDBPyConnection, name: str) -> None:
    """Refuse to store frequency source ``name`` over one of that name, saying what is stored."""
    stored = connection.execute(
        "SELECT count(c.number), CAST(coalesce(sum(c.count), 0) AS VARCHAR) FROM frequency_sources s "
        "LEFT JOIN frequency_counts c ON c.source = s.name WHERE s.name = ? GROUP BY s.name", [name]
    ).fetchone()
    if stored is not None:
        raise StoreError(
            f"a frequency source named {name!r} is already stored ({stored[0]:,} numbers, total count "
            f"{int(stored[1]):,}); nothing was changed: choose another name, or pass replace=True to replace it",
            parameters=("replace",),
        )


def _metric_tables_of(kind: str) -> list[metrics.MetricTable]:
    owned = metrics.tables_of(kind)
    if not owned:
        kinds = sorted({table.kind for table in metrics.METRIC_TABLES})
        raise StoreError(f"results of kind {kind!r} have no metric tables; the kinds are {', '.join(kinds)}")
    return owned


def _metric_table_name(table: str) -> str:
    if table not in metrics.TABLES_BY_NAME:
        raise StoreError(f"no metric table {table!r}; the tables are {', '.join(metrics.TABLES_BY_NAME)}")
    return table


def nonfinite_counts_in(summary: pd.DataFrame, name: str, stimuli: str) -> dict[int, int]:
    """Layer -> flagged vectors of (``name``, ``stimuli``) in a :meth:`Store.nonfinite_summary`.

    Args:
        summary: the store's :meth:`Store.nonfinite_summary`.
        name: the model's name in the store.
        stimuli: the stimulus set's name.
    """
    rows = summary[(summary["name"] == name) & (summary["set_name"] == stimuli)]
    return {int(layer): int(count) for layer, count in zip(rows["layer"], rows["vectors"], strict=True)}

