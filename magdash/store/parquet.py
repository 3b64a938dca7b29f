"""A model's vectors as a folder of Parquet files: readable as they are by DuckDB
(``read_parquet('DIR/layer-*.parquet')``), pandas and pyarrow, and imported back bit for bit.

Layout (``FORMAT_VERSION`` 1)::

    DIR/layer-000.parquet ... one file per layer l (0 = the embeddings), uncompressed, rows in
                              (magnitude, carrier) order, columns
                                magnitude  int64    the number
                                carrier    int32    the carrier's index (0-based)
                                sentence   string   the sentence the vector was read from
                                vector     fixed_size_list<float32>[d]
    DIR/magdash.json          written last, so its presence marks a complete export: the format
                              and version, the stimulus set (name, carriers, magnitudes) and the
                              model's stored record (identity, layer labels, block count)

An import of a folder with ``magdash.json`` keeps the model's identity: the vectors are the same
model's, so extracting that model into the importing store afterwards finds them stored (a GPU
server's extraction moved to a laptop). Another tool's folder needs only the layer files with
``magnitude``, ``carrier`` and ``vector`` (``sentence`` is optional); it is imported like an npz
(:func:`magdash.store.npz.import_arrays`), the carriers and layer labels given by the user or
numbered.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from magdash.errors import StoreError
from magdash.stimuli import StimulusSet
from magdash.store.npz import validate_import_arrays, write_per_carrier
from magdash.store.records import ModelRecord

if TYPE_CHECKING:
    from magdash.store.database import Store

FORMAT = "magdash-parquet"
FORMAT_VERSION = 1
MANIFEST = "magdash.json"
_LAYER_FILE = re.compile(r"layer-(\d+)\.parquet")


def layer_file(layer: int) -> str:
    return f"layer-{layer:03d}.parquet"


def export_parquet(store: Store, name: str, stimuli: str, folder: str | os.PathLike) -> list[Path]:
    """Write ``name``'s vectors on ``stimuli`` to ``folder`` (new or empty), a layer at a time.

    Each file is written under a temporary name and renamed when complete; the manifest comes
    last. Returns the files written.
    """
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise StoreError(f"{str(folder)!r} exists and is not an empty folder: choose a new folder for the export")
    record = store.model_record(name)
    stimulus_set = store.stimulus_set(stimuli)
    # The item columns are the same in every layer's file: built once, in the layers' row order.
    sentences = {(item.magnitude, item.carrier_index): item.sentence for item in stimulus_set.items}
    order = [(m, c) for m in stimulus_set.magnitudes for c in range(len(stimulus_set.carriers))]
    items = {
        "magnitude": pa.array([m for m, _ in order], pa.int64()),
        "carrier": pa.array([c for _, c in order], pa.int32()),
        "sentence": pa.array([sentences[key] for key in order], pa.string()),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for data in store.read_layers(name, stimuli):
            dim = data.vectors.shape[2]
            vectors = pa.FixedSizeListArray.from_arrays(pa.array(data.vectors.reshape(-1)), dim)
            del data
            table = pa.table({**items, "vector": vectors})
            written.append(_write_atomically(folder / layer_file(len(written)), table))
        manifest = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "stimuli": {"name": stimulus_set.name, "carriers": list(stimulus_set.carriers),
                        "magnitudes": [int(m) for m in stimulus_set.magnitudes]},
            "model": {**asdict(record), "layer_labels": list(record.layer_labels)},
        }
        temporary = folder / f".{MANIFEST}.partial"
        temporary.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        os.replace(temporary, folder / MANIFEST)
    except OSError as error:
        raise StoreError(f"cannot write the export to {str(folder)!r}: {error.strerror or error}") from None
    return [*written, folder / MANIFEST]


def _write_atomically(path: Path, table: pa.Table) -> Path:
    temporary = path.with_name(f".{path.name}.partial")
    pq.write_table(table, temporary, compression="none")
    os.replace(temporary, path)
    return path


@dataclass(frozen=True)
class ParquetFolder:
    """A folder's vectors as :func:`read_parquet_folder` reads them.

    ``per_carrier`` has shape (n_magnitudes, n_carriers, n_layers, d), magnitudes ascending;
    ``record`` and ``stimuli`` come from the manifest (None without one).
    """

    path: Path
    per_carrier: np.ndarray
    magnitudes: list[int]
    carriers: list[str] | None
    record: ModelRecord | None
    stimuli: str | None


def read_parquet_folder(folder: str | os.PathLike) -> ParquetFolder:
    """Read and check every layer file of ``folder`` (and its manifest, when it has one)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise StoreError(f"{str(folder)!r} is not a folder of Parquet layer files")
    numbered = {}
    for path in folder.iterdir():
        match = _LAYER_FILE.fullmatch(path.name)
        if match:
            numbered[int(match[1])] = path
    if not numbered:
        raise StoreError(f"{str(folder)!r} holds no layer files (layer-000.parquet, layer-001.parquet, ...)")
    if sorted(numbered) != list(range(len(numbered))):
        missing = sorted(set(range(max(numbered) + 1)) - set(numbered))
        raise StoreError(f"{str(folder)!r} lacks layer files for layers {missing[:10]}: layers must run from 0 without gaps")
    manifest = _read_manifest(folder)
    magnitudes, first = _read_layer(numbered[0])
    n_carriers, dim = first.shape[1], first.shape[2]
    # Filled layer by layer: memory holds the model's vectors and one layer file, not two copies.
    per_carrier = np.empty((len(magnitudes), n_carriers, len(numbered), dim), dtype=np.float32)
    per_carrier[:, :, 0] = first
    del first
    for layer in range(1, len(numbered)):
        layer_magnitudes, vectors = _read_layer(numbered[layer])
        if layer_magnitudes != magnitudes or vectors.shape[1] != n_carriers:
            raise StoreError(f"{numbered[layer].name} holds other magnitudes or carriers than {numbered[0].name}")
        if vectors.shape[2] != dim:
            raise StoreError(f"{numbered[layer].name} has vectors of {vectors.shape[2]} dimensions, "
                             f"{numbered[0].name} of {dim}")
        per_carrier[:, :, layer] = vectors
    if manifest is None:
        return ParquetFolder(folder, per_carrier, magnitudes, None, None, None)
    record, stimuli = manifest
    if stimuli.magnitudes != tuple(magnitudes) or len(stimuli.carriers) != n_carriers:
        raise StoreError(f"{MANIFEST} in {str(folder)!r} names other magnitudes or carriers than its layer files hold")
    if record.n_layers != per_carrier.shape[2] or record.hidden_size != per_carrier.shape[3]:
        raise StoreError(
            f"{MANIFEST} in {str(folder)!r} describes {record.n_layers} layers of d={record.hidden_size}, "
            f"the files hold {per_carrier.shape[2]} of d={per_carrier.shape[3]}"
        )
    return ParquetFolder(folder, per_carrier, magnitudes, list(stimuli.carriers), record, stimuli.name)


def _read_layer(path: Path) -> tuple[list[int], np.ndarray]:
    """(magnitudes ascending, vectors (n_magnitudes, n_carriers, d) float32) of one layer file."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as error:
        raise StoreError(f"{path.name} is not a readable Parquet file ({error})") from None
    missing = {"magnitude", "carrier", "vector"} - set(table.column_names)
    if missing:
        raise StoreError(f"{path.name} lacks the columns {sorted(missing)} (it has {table.column_names})")
    vector_type = table.schema.field("vector").type
    if not (pa.types.is_list(vector_type) or pa.types.is_large_list(vector_type)
            or pa.types.is_fixed_size_list(vector_type)) or not pa.types.is_floating(vector_type.value_type):
        raise StoreError(f"{path.name}: 'vector' must be a list of floats, not {vector_type}")
    column = table.column("vector").combine_chunks()
    if column.null_count:
        raise StoreError(f"{path.name}: 'vector' has {column.null_count} missing rows")
    lengths = np.asarray(column.value_lengths()) if not pa.types.is_fixed_size_list(vector_type) else None
    dim = vector_type.list_size if lengths is None else int(lengths[0]) if len(lengths) else 0
    if dim < 1 or (lengths is not None and np.any(lengths != dim)):
        raise StoreError(f"{path.name}: every vector must have the same, non-zero length")
    values = np.asarray(column.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(-1, dim)
    try:
        magnitude = np.asarray(table.column("magnitude").to_numpy(), dtype=np.float64)
        carrier = np.asarray(table.column("carrier").to_numpy(), dtype=np.float64)
    except (pa.ArrowException, ValueError, TypeError):
        raise StoreError(f"{path.name}: 'magnitude' and 'carrier' must be numbers without missing values") from None
    if not (np.all(np.isfinite(magnitude)) and np.all(magnitude == np.round(magnitude)) and np.all(magnitude > 0)):
        raise StoreError(f"{path.name}: magnitudes must be positive whole numbers")
    if not (np.all(carrier == np.round(carrier)) and np.all(carrier >= 0)):
        raise StoreError(f"{path.name}: carriers must be indices 0, 1, 2, ...")
    order = np.lexsort((carrier, magnitude))
    magnitude, carrier, values = magnitude[order].astype(np.int64), carrier[order].astype(np.int64), values[order]
    unique = np.unique(magnitude)
    n_carriers = len(magnitude) // max(len(unique), 1)
    expected_carriers = np.tile(np.arange(n_carriers), len(unique))
    if len(magnitude) != len(unique) * n_carriers or not np.array_equal(carrier, expected_carriers):
        raise StoreError(
            f"{path.name}: every magnitude needs exactly one row per carrier 0..n-1 (found {len(magnitude)} rows "
            f"for {len(unique)} magnitudes)"
        )
    return [int(m) for m in unique], values.reshape(len(unique), n_carriers, dim)


def _read_manifest(folder: Path) -> tuple[ModelRecord, StimulusSet] | None:
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT:
            raise StoreError(f"{path} is not a magdash export manifest (format {document.get('format')!r})")
        if document.get("version") != FORMAT_VERSION:
            raise StoreError(f"{path} has version {document.get('version')!r}; this magdash reads {FORMAT_VERSION}")
        model = document["model"]
        names = {f.name for f in fields(ModelRecord)}
        record = ModelRecord(**{key: model[key] for key in names if key in model})
        _check_record(record)
        stimuli = document["stimuli"]
        stimulus_set = StimulusSet(str(stimuli["name"]), tuple(map(str, stimuli["carriers"])),
                                   tuple(int(m) for m in stimuli["magnitudes"]))
    except StoreError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise StoreError(f"{path} is not a readable manifest ({type(error).__name__}: {error})") from None
    return record, stimulus_set


def _check_record(record: ModelRecord) -> None:
    kinds = {"name": str, "model_id": str, "source": str, "fingerprint": str, "dtype": str,
             "transformers_version": str, "architecture": str, "n_blocks": int, "hidden_size": int,
             "position": str, "is_random": bool}
    for name, kind in kinds.items():
        if not isinstance(getattr(record, name), kind):
            raise TypeError(f"model field {name!r} must be {kind.__name__}")
    if not isinstance(record.layer_labels, (list, tuple)) or not all(isinstance(x, str) for x in record.layer_labels):
        raise TypeError("model field 'layer_labels' must be a list of names")
    if not 1 <= record.n_blocks < len(record.layer_labels):
        raise ValueError(f"n_blocks {record.n_blocks} does not fit {len(record.layer_labels)} layers")


def import_parquet_folder(
    store: Store,
    folder: ParquetFolder | str | os.PathLike,
    name: str,
    *,
    stimuli: str | None = None,
    carriers: list[str] | None = None,
    magnitudes: list[int] | None = None,
    last_layer: str = "block",
) -> tuple[ModelRecord, str]:
    """Store a folder's vectors (or those :func:`read_parquet_folder` read from it) as model
    ``name``; returns the record and the stimulus set's name.

    With a manifest the model keeps its stored identity and layers (``carriers`` and
    ``last_layer`` are the manifest's and may not be given); without one it is imported as an
    npz would be. ``magnitudes``, when given, must be those the files hold.
    """
    from magdash.store.npz import import_arrays

    data = folder if isinstance(folder, ParquetFolder) else read_parquet_folder(folder)
    if magnitudes is not None and list(magnitudes) != data.magnitudes:
        raise StoreError("the folder's magnitudes differ from those given: leave out magnitudes= or fix the files",
                         parameters=("magnitudes",))
    if data.record is None:
        return import_arrays(store, name, data.per_carrier, data.magnitudes, carriers=carriers,
                             stimuli=stimuli, source=f"import:{data.path.name}", last_layer=last_layer)
    if carriers is not None and list(carriers) != data.carriers:
        raise StoreError(f"the folder's {MANIFEST} names its carriers: leave out carriers=", parameters=("carriers",))
    if last_layer != "block":
        raise StoreError(f"the folder's {MANIFEST} gives its layers: leave out last_layer=", parameters=("last_layer",))
    per_carrier, _, _, _ = validate_import_arrays(data.per_carrier, data.magnitudes, data.carriers,
                                                  data.record.layer_labels)
    record = ModelRecord(**{**asdict(data.record), "name": name, "layer_labels": tuple(data.record.layer_labels)})
    stimulus_set = StimulusSet(stimuli or data.stimuli, tuple(data.carriers), tuple(data.magnitudes))
    set_name = store.register(stimulus_set, record, join_stored=stimuli is None)
    write_per_carrier(store, record.model_id, stimulus_set, per_carrier)
    return record, set_name
