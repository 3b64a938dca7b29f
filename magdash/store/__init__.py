"""The DuckDB store: one :class:`Store` that owns every SQL statement on a store file.

- :mod:`~magdash.store.database`: the :class:`Store` and its queries;
- :mod:`~magdash.store.connection`: opening the file, DuckDB's lock, retry, storage failures;
- :mod:`~magdash.store.schema`: tables, schema version, migrations;
- :mod:`~magdash.store.shards`: the vectors, as Parquet shards beside the file that is their catalog;
- :mod:`~magdash.store.codec`: the vector tables of stores before schema 5, read by the migration;
- :mod:`~magdash.store.metrics`: every computed result as tidy tables, written with its cache entry;
- :mod:`~magdash.store.npz`: npz files in and out;
- :mod:`~magdash.store.activations`: hidden states held in memory (:class:`Activations`), and
  :meth:`Store.put` storing them;
- :mod:`~magdash.store.parquet`: a model's vectors as a folder of Parquet files, in and out;
- :mod:`~magdash.store.vectors`: the :class:`VectorSource` every analysis reads, a stored model
  (:class:`StoredVectors`, :meth:`Store.vectors`) or :class:`Activations`;
- :mod:`~magdash.store.records`: what the store hands out (:class:`ModelRecord`, :class:`LayerData`).
"""

from magdash.store.activations import Activations
from magdash.store.connection import DEFAULT_STORE, STORE_ENV, default_store_path
from magdash.store.database import Store, nonfinite_counts_in
from magdash.store.npz import import_inputs, read_npz, validate_import_arrays
from magdash.store.records import LayerData, ModelRecord
from magdash.store.schema import SCHEMA_VERSION
from magdash.store.vectors import StoredVectors, VectorSource

__all__ = [
    "DEFAULT_STORE", "SCHEMA_VERSION", "Activations", "STORE_ENV", "LayerData", "ModelRecord", "Store", "StoredVectors",
    "VectorSource", "default_store_path",
    "import_inputs", "nonfinite_counts_in", "read_npz", "validate_import_arrays",
]
