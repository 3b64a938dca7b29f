"""Hidden states as npz files: reading one safely, checking its arrays, and the import/export
layout shared with the paper's scripts (``per_carrier`` of shape (n_magnitudes, n_carriers,
n_layers, d), and optional ``magnitudes``, ``carriers``, ``layer_labels`` and ``n_blocks``:
the paper's own files hold only ``per_carrier``, and the user says what the rest is).

Files are read without pickle. An import is stored through :class:`~magdash.store.Store`
like an extraction, under a model identity hashed from the arrays, so importing the same file
twice is a no-op. ``per_carrier`` saved uncompressed (``numpy.savez``) is memory-mapped rather
than read, so an import holds one write batch in memory whatever the file's size.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import struct
import zipfile
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from magdash.errors import StoreError
from magdash.layers import LAST_LAYER_CHOICES, POST_NORM_LABEL
from magdash.stimuli import (
    MAX_CARRIER_CHARS,
    MAX_SET_NAME_CHARS,
    PAPER_CARRIERS,
    PAPER_MAGNITUDES,
    PAPER_SET_NAME,
    PLACEHOLDER,
    StimulusSet,
)
from magdash.store import shards
from magdash.store.records import ModelRecord

if TYPE_CHECKING:
    from magdash.store.database import Store

log = logging.getLogger(__name__)


def import_arrays(
    store: Store,
    name: str,
    per_carrier: np.ndarray,
    magnitudes: Sequence[float] | None,
    *,
    carriers: Sequence[str] | None = None,
    layer_labels: Sequence[str] | None = None,
    stimuli: str | None = None,
    source: str = "import",
    n_blocks: int | None = None,
    last_layer: str = "block",
) -> tuple[ModelRecord, str]:
    """Store hidden states extracted elsewhere as model ``name``.

    ``per_carrier`` has shape (n_magnitudes, n_carriers, n_layers, d). Carriers that are
    templates with ``{n}`` keep their sentences (and so match a stimulus set extracted here,
    such as the paper's); other labels become templates ``"<label> {n}"``. Without a
    ``stimuli`` name the set takes the name its sentences are already stored under, else
    'paper' for the paper's, else ``<name>-stimuli``. ``last_layer="post-norm"`` says the
    last stored layer is the output of the final norm with no pre-norm copy before it (the
    paper's files: transformers' ``hidden_states[-1]``): it is labelled so, and the model
    has one block fewer than layers past the embeddings, which keeps it out of the default
    core band. ``n_blocks`` gives the block count otherwise read from the labels. The
    model's identity is a hash of the arrays, so importing the same file twice is a no-op.
    Returns the stored record and the stimulus set's name.
    """
    per_carrier, magnitudes, carriers, layer_labels = validate_import_arrays(
        per_carrier, magnitudes, carriers, layer_labels
    )
    dim = per_carrier.shape[3]
    layer_labels, n_blocks = imported_layers(layer_labels, n_blocks, last_layer)
    digest = hashlib.sha256()
    digest.update(memoryview(np.ascontiguousarray(per_carrier)).cast("B"))  # hashed in place, not copied
    digest.update(json.dumps([magnitudes, carriers, layer_labels, n_blocks]).encode())
    fingerprint = f"sha256:{digest.hexdigest()[:32]}"
    model_id = hashlib.sha1(f"{fingerprint}|import".encode()).hexdigest()[:20]
    set_name = stimuli if stimuli is not None else _import_set_name(name, carriers, magnitudes, fingerprint)
    stimulus_set = StimulusSet(set_name, tuple(carriers), tuple(magnitudes))
    record = ModelRecord(
        name=name, model_id=model_id, source=source, fingerprint=fingerprint, dtype="float32",
        transformers_version="", architecture="imported", n_blocks=n_blocks,
        hidden_size=dim, layer_labels=tuple(layer_labels), position="imported", is_random=False,
    )
    set_name = store.register(stimulus_set, record, join_stored=stimuli is None)
    rows = per_carrier if magnitudes == sorted(magnitudes) else per_carrier[np.argsort(magnitudes, kind="stable")]
    write_per_carrier(store, model_id, stimulus_set, rows)
    return record, set_name


def write_per_carrier(store: Store, model_id: str, stimuli: StimulusSet, per_carrier: np.ndarray) -> None:
    """Write ``per_carrier`` (rows in ``stimuli.magnitudes`` order, ascending) under each item's key,
    one shard (and one transaction) per :data:`~magdash.store.shards.WRITE_BATCH_BYTES`."""
    n_magnitudes, n_carriers, n_layers, dim = per_carrier.shape
    index = {(item.magnitude, item.carrier_index): item.key for item in stimuli.items}
    keys = [index[(m, c)] for m in stimuli.magnitudes for c in range(n_carriers)]
    flat = per_carrier.reshape(n_magnitudes * n_carriers, n_layers, dim)
    chunk = shards.items_per_batch(n_layers, dim)
    for start in range(0, len(keys), chunk):
        store.write_vectors(model_id, keys[start:start + chunk], flat[start:start + chunk])


def export_arrays(store: Store, name: str, stimuli: str) -> dict[str, np.ndarray]:
    """The reference layout: per_carrier (n_magnitudes, n_carriers, n_layers, d), labels and
    the block count (so that an import gives back the same core band)."""
    record = store.model_record(name)
    layers = list(store.read_layers(name, stimuli))
    return {
        "per_carrier": np.stack([layer.vectors for layer in layers], axis=2).astype(np.float32),
        "magnitudes": layers[0].magnitudes,
        "carriers": np.asarray(layers[0].carriers, dtype=str),
        "layer_labels": np.asarray(record.layer_labels, dtype=str),
        "n_blocks": np.asarray(record.n_blocks),
    }


def imported_layers(
    layer_labels: Sequence[str], n_blocks: int | None, last_layer: str
) -> tuple[list[str], int]:
    """The labels and block count of imported layers.

    ``last_layer="post-norm"``: the last layer is the final norm's output of the last block,
    L = n_layers - 1. Else ``n_blocks`` when given, else read from the labels: all layers but
    the embeddings, and but a trailing post-norm layer (a magdash export: L+1 is post-norm).
    """
    labels = list(layer_labels)
    n_layers = len(labels)
    if last_layer not in LAST_LAYER_CHOICES:
        raise StoreError(f"last layer must be one of {', '.join(LAST_LAYER_CHOICES)}, got {last_layer!r}")
    if last_layer == "post-norm":
        if n_layers < 3:
            raise StoreError(f"{n_layers} layers cannot end in a post-norm layer: it needs the embeddings and two more")
        if n_blocks is not None and int(n_blocks) != n_layers - 1:
            raise StoreError(
                f"the file says {int(n_blocks)} blocks, but a post-norm last layer after {n_layers - 1} layers "
                f"means {n_layers - 1}: leave out the post-norm option or fix n_blocks"
            )
        labels[-1] = POST_NORM_LABEL
        return labels, n_layers - 1
    if n_blocks is not None:
        # one layer alone is read as one block, as the labels' default below reads it
        most = max(n_layers - 1, 1)
        if not 1 <= int(n_blocks) <= most:
            raise StoreError(f"n_blocks is {int(n_blocks)}: with {n_layers} layers it must be 1..{most}")
        return labels, int(n_blocks)
    extra = 2 if n_layers > 2 and "post-norm" in labels[-1].lower() else 1
    return labels, max(n_layers - extra, 1)


def _import_set_name(name: str, carriers: Sequence[str], magnitudes: Sequence[int], fingerprint: str) -> str:
    if tuple(carriers) == PAPER_CARRIERS and tuple(sorted(magnitudes)) == PAPER_MAGNITUDES:
        return PAPER_SET_NAME
    derived = f"{name}-stimuli"
    # A model name too long to carry a set name must not be refused for a name the user never gave.
    return derived if len(derived) <= MAX_SET_NAME_CHARS else f"import-{fingerprint.removeprefix('sha256:')[:16]}"


def _has_finite(array: np.ndarray) -> bool:
    """Whether any value is finite, looking at a million at a time: a real array answers at its
    first slice, where ``np.isfinite(array).any()`` would build a mask as large as the array."""
    flat = array.reshape(-1)
    return any(np.isfinite(flat[start:start + (1 << 20)]).any() for start in range(0, flat.size, 1 << 20))


def validate_import_arrays(
    per_carrier: np.ndarray,
    magnitudes: Sequence[float] | None,
    carriers: Sequence[str] | None,
    layer_labels: Sequence[str] | None,
) -> tuple[np.ndarray, list[int], list[str], list[str]]:
    """Check an imported array set and fill in optional labels; raise StoreError saying what to fix."""
    array = np.asarray(per_carrier)
    if array.dtype.kind not in "fiu":
        raise StoreError(f"per_carrier holds {array.dtype} values: it must be a float array")
    if array.ndim != 4:
        raise StoreError(
            f"per_carrier has shape {array.shape}: it must be (n_magnitudes, n_carriers, n_layers, d)"
        )
    if min(array.shape) < 1:
        raise StoreError(f"per_carrier has an empty axis {array.shape}")
    array = array.astype(np.float32, copy=False)
    if not _has_finite(array):
        raise StoreError("per_carrier holds no finite values (all NaN or infinite)")
    if magnitudes is None:
        raise StoreError(
            "the file has no 'magnitudes' array: say which magnitude each row of per_carrier is "
            "(e.g. magnitudes='paper' for the paper's files)",
            parameters=("magnitudes",),
        )
    magnitude_array = np.asarray(magnitudes).ravel()
    if magnitude_array.dtype.kind not in "fiu":
        raise StoreError("magnitudes must be numbers")
    if len(magnitude_array) != array.shape[0]:
        raise StoreError(
            f"{len(magnitude_array)} magnitudes for {array.shape[0]} rows of per_carrier: they must match"
        )
    if not np.all(np.isfinite(magnitude_array)) or np.any(magnitude_array <= 0):
        raise StoreError("magnitudes must be positive numbers")
    if np.any(magnitude_array != np.round(magnitude_array)):
        raise StoreError("magnitudes must be whole numbers")
    magnitude_list = [int(m) for m in magnitude_array]
    if len(set(magnitude_list)) != len(magnitude_list):
        raise StoreError("magnitudes repeat: each row of per_carrier needs its own magnitude")
    n_carriers, n_layers = array.shape[1], array.shape[2]
    if carriers is None:
        labels = [f"carrier {i + 1}" for i in range(n_carriers)]
    else:
        labels = [str(c) for c in np.asarray(carriers).ravel()]
        if len(labels) != n_carriers:
            raise StoreError(f"{len(labels)} carriers for {n_carriers} columns of per_carrier: they must match")
    if not all(label.count(PLACEHOLDER) == 1 for label in labels):
        labels = [f"{label} {PLACEHOLDER}" if PLACEHOLDER not in label else label for label in labels]
    if len(set(labels)) != len(labels):
        raise StoreError("carrier labels repeat: give each carrier its own label")
    if layer_labels is None:
        layer_names = ["embeddings"] + [f"layer {i}" for i in range(1, n_layers)]
    else:
        layer_names = [str(label) for label in np.asarray(layer_labels).ravel()]
        if len(layer_names) != n_layers:
            raise StoreError(f"{len(layer_names)} layer labels for {n_layers} layers: they must match")
    return array, magnitude_list, labels, layer_names


FORMAT_MEMBERS = ("per_carrier", "magnitudes", "carriers", "layer_labels", "n_blocks")
"""The arrays of the npz layout; a file's other members are never read."""
_MOST_ITEM_BYTES = {"magnitudes": 16, "n_blocks": 16, "carriers": 4 * (MAX_CARRIER_CHARS + 4),
                    "layer_labels": 4 * MAX_CARRIER_CHARS}
"""The most bytes one value of each small member may take (a number; a text as numpy stores it, 4 per character)."""
_DEFLATE_MOST_EXPANSION = 1032
"""Deflate's largest ratio of output to input bytes: a member claiming more lies about its size."""


def read_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load an npz without pickle; StoreError for unreadable files or a missing per_carrier.

    Only the members of the layout (:data:`FORMAT_MEMBERS`) are read. Before any is
    decompressed, each one's size as its zip entry declares it is checked against its ``.npy``
    header (dtype and shape) and against what deflate can give from its compressed bytes, and
    each small member's size against what per_carrier's shape needs (a magnitude per row, a
    carrier per column, a label per layer): a file whose payload would exceed what its shapes
    need is refused, so a small file cannot ask for gigabytes of memory.
    """
    shown = repr(str(path))
    try:
        with open(path, "rb") as handle:
            signature = handle.read(6)
    except FileNotFoundError:
        raise StoreError(f"no file {shown}") from None
    except (OSError, ValueError) as error:
        raise StoreError(f"cannot read {shown}: {getattr(error, 'strerror', None) or error}") from None
    if signature.startswith(b"\x93NUMPY"):
        raise StoreError(f"{shown} is a single .npy array; save the arrays together with numpy.savez")
    if signature[:4] not in (b"PK\x03\x04", b"PK\x05\x06"):  # a zip archive, as every .npz is
        raise StoreError(f"{shown} is not an .npz file (not a zip archive); save it with numpy.savez")
    try:
        with zipfile.ZipFile(path) as archive:
            members = {name: info for name in FORMAT_MEMBERS if (info := _member(archive, name)) is not None}
            if "per_carrier" not in members:
                names = ", ".join(name.removesuffix(".npy") for name in archive.namelist()[:20])
                raise StoreError(f"{shown} has no 'per_carrier' array (it has: {names or 'nothing'})")
            headers = {name: _checked_header(archive, info, name, shown) for name, info in members.items()}
            _check_against_per_carrier(headers, shown)
            others = [name for name in archive.namelist() if name.removesuffix(".npy") not in members]
            if others:
                log.info("%s: not reading %d member(s) outside the npz layout (%s)", shown, len(others),
                         ", ".join(others[:5]))
            arrays = {}
            for name, info in members.items():
                mapped = _mapped_npz_member(path, info) if name == "per_carrier" else None
                if mapped is None:
                    with archive.open(info) as stream:
                        mapped = np.lib.format.read_array(stream, allow_pickle=False)
                arrays[name] = mapped
    except StoreError:
        raise
    except FileNotFoundError:
        raise StoreError(f"no file {shown}") from None
    except ValueError as error:
        raise StoreError(f"cannot read {shown} without pickle ({error}); save plain arrays") from None
    except (OSError, EOFError) as error:
        raise StoreError(f"{shown} is not a readable .npz file ({error})") from None
    except Exception as error:  # noqa: BLE001 - zipfile raises many kinds for corrupt archives
        raise StoreError(f"{shown} is not a readable .npz file ({type(error).__name__})") from None
    return arrays


def _member(archive: zipfile.ZipFile, name: str) -> zipfile.ZipInfo | None:
    for member in (f"{name}.npy", name):  # numpy.savez writes NAME.npy; numpy.load reads either
        try:
            return archive.getinfo(member)
        except KeyError:
            continue
    return None


def _checked_header(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, shown: str) -> tuple:
    """(shape, dtype) of member ``name`` from its ``.npy`` header, after checking that the size its
    zip entry declares is what they need and what its compressed bytes can give."""
    if info.flag_bits & 0x1:
        raise StoreError(f"{shown}: {name} is encrypted; save the arrays with numpy.savez")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise StoreError(f"{shown}: {name} is compressed in a way numpy.savez never writes; save it with "
                         "numpy.savez or numpy.savez_compressed")
    most = info.compress_size if info.compress_type == zipfile.ZIP_STORED else (
        info.compress_size * _DEFLATE_MOST_EXPANSION + 1024)
    if info.file_size > most:
        raise StoreError(f"{shown}: {name} declares {info.file_size:,} bytes, more than its {info.compress_size:,} "
                         "stored bytes can hold; the file is damaged")
    with archive.open(info) as stream:
        header = _npy_header(stream)
        if header is None:
            raise StoreError(f"{shown}: {name} is not in .npy format 1.0 or 2.0; save it with numpy.savez")
        shape, _fortran_order, dtype = header
        header_bytes = stream.tell()
    if dtype.hasobject:
        raise StoreError(f"cannot read {shown} without pickle ({name} holds Python objects); save plain arrays")
    needed = header_bytes + math.prod(shape) * dtype.itemsize
    if info.file_size != needed:
        raise StoreError(f"{shown}: {name} declares {info.file_size:,} bytes but its shape {shape} of {dtype} "
                         f"needs {needed:,}; the file is damaged or not numpy's")
    return shape, dtype


def _npy_header(stream) -> tuple | None:
    """(shape, fortran_order, dtype) from the ``.npy`` header at the stream's position (format 1.0
    or 2.0, as numpy.savez writes them); None for another format."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(stream)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(stream)
    return None


def _check_against_per_carrier(headers: dict[str, tuple], shown: str) -> None:
    """Refuse a small member larger than per_carrier's shape needs (a value per magnitude row,
    carrier column or layer, one block count), before it is read."""
    shape = headers["per_carrier"][0]
    if len(shape) != 4:
        return  # refused with its shape once read (validate_import_arrays)
    counts = {"magnitudes": shape[0], "carriers": shape[1], "layer_labels": shape[2], "n_blocks": 1}
    for name, (member_shape, dtype) in headers.items():
        if name == "per_carrier":
            continue
        most = counts[name] * _MOST_ITEM_BYTES[name]
        size = math.prod(member_shape) * dtype.itemsize
        if size > most:
            raise StoreError(f"{shown}: {name} holds {size:,} bytes ({member_shape} of {dtype}), more than "
                             f"per_carrier's shape {shape} needs (at most {most:,}); the file is not magdash's npz layout")


_ZIP_LOCAL_HEADER = struct.Struct("<4s5H3L2H")  # signature ... file name length, extra field length


def _mapped_npz_member(path: str | os.PathLike, info: zipfile.ZipInfo) -> np.memmap | None:
    """The array of member ``info`` of an npz memory-mapped in place, or None where it cannot be:
    it is compressed (``numpy.savez_compressed``), encrypted, or holds objects. An npz is a zip
    archive of ``.npy`` files; a stored (uncompressed) member's bytes lie in the archive as they
    are, after its local header, and the ``.npy`` header says their dtype, shape and order. The
    member's CRC is checked first (one pass, a chunk at a time), as zipfile checks it on a read."""
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        return None
    with open(path, "rb") as handle:
        handle.seek(info.header_offset)
        header = _ZIP_LOCAL_HEADER.unpack(handle.read(_ZIP_LOCAL_HEADER.size))
        if header[0] != b"PK\x03\x04":
            return None
        start = handle.seek(header[-2] + header[-1], os.SEEK_CUR)
        # A damaged file must not import as other numbers.
        checksum, left = 0, info.file_size
        while left > 0:
            chunk = handle.read(min(left, 1 << 20))
            if not chunk:
                break
            checksum, left = zlib.crc32(chunk, checksum), left - len(chunk)
        if left or checksum != info.CRC:
            raise zipfile.BadZipFile(f"{info.filename} fails its CRC check")
        handle.seek(start)
        header = _npy_header(handle)
        if header is None:
            return None
        shape, fortran_order, dtype = header
        offset = handle.tell()
    if dtype.hasobject or 0 in shape:
        return None
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran_order else "C")


def import_inputs(
    arrays: dict[str, np.ndarray], magnitudes: Sequence[int] | None = None, carriers: Sequence[str] | None = None
) -> tuple[np.ndarray | None, np.ndarray | list[str] | None, int | None]:
    """(magnitudes, carriers, n_blocks) for an import of ``arrays`` (as :func:`read_npz` gives them).

    ``magnitudes`` and ``carriers`` given by the user fill in what the file lacks (the paper's
    files hold neither) and must agree with what it has.
    """
    stored_magnitudes = arrays.get("magnitudes")
    if (
        magnitudes is not None
        and stored_magnitudes is not None
        and np.asarray(stored_magnitudes).ravel().tolist() != list(magnitudes)
    ):
        raise StoreError("the file's magnitudes differ from those given: leave out magnitudes= or fix the file",
                         parameters=("magnitudes",))
    stored_carriers = arrays.get("carriers")
    if (
        carriers is not None
        and stored_carriers is not None
        and [str(c) for c in np.asarray(stored_carriers).ravel()] != list(carriers)
    ):
        raise StoreError("the file's carriers differ from those given: leave out carriers= or fix the file",
                         parameters=("carriers",))
    n_blocks = arrays.get("n_blocks")
    if n_blocks is not None:
        n_blocks_array = np.asarray(n_blocks)
        if n_blocks_array.shape != () or n_blocks_array.dtype.kind not in "iu":
            raise StoreError("n_blocks in the file must be a single whole number")
        n_blocks = int(n_blocks_array)
    return (
        stored_magnitudes if stored_magnitudes is not None else (None if magnitudes is None else np.asarray(magnitudes)),
        stored_carriers if stored_carriers is not None else (None if carriers is None else list(carriers)),
        n_blocks,
    )
