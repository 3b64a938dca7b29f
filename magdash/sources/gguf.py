"""GGUF model files: their metadata, and their conversion to a cached safetensors folder.

GGUF (the file format of llama.cpp, Ollama and LM Studio) holds quantized weights, the model's
hyperparameters and its tokenizer in one file, and no code. transformers reads it with
``from_pretrained(folder, gguf_file=...)``, dequantizing every tensor and rebuilding a fast
tokenizer from the vocabulary: seconds to minutes (about 20 s for a 135M model, 80 s for a
270M one with a 262k vocabulary on two cores). magdash does that once per file, dtype and
transformers version and keeps the result as an ordinary model folder (``config.json``,
tokenizer, ``model.safetensors``) under the model cache, so every later load is a safetensors
load. The metadata is read here without torch or transformers, so resolving a GGUF model costs
no model load.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import mmap
import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from magdash.environment import transformers_version
from magdash.errors import MagdashError, ModelLoadError
from magdash.sources.base import Located, SourceKind, existing_path

log = logging.getLogger(__name__)

GGUF_SUFFIX = ".gguf"
MODEL_CACHE_ENV = "MAGDASH_MODEL_CACHE"
DEFAULT_MODEL_CACHE = Path("cache") / "models"
_COMPLETE = "magdash-conversion.json"
CONVERSION_VERSION = 2
"""Part of a converted folder's name: bumped when the conversion writes different weights.
Version 1 kept a tied embedding only as ``lm_head.weight``, so the base model loaded with
randomly initialised input embeddings."""
_GGUF_MAGIC = b"GGUF"
# GGUF metadata value types (ggml's gguf.h): scalar type -> struct format.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GGUFInfo:
    """What identifies a GGUF file's model, read from its header and bytes."""

    path: Path
    sha256: str
    architecture: str
    """``general.architecture``: llama, gemma3, qwen2, ..."""
    quantization: str
    """The file's quantization type as llama.cpp names it (Q4_1, Q4_K_M, F16, ...)."""
    config_digest: str
    """Digest of the architecture's hyperparameters: what an ``@random`` control is built from."""
    sequence_start: str = "none"
    """How the file's tokenizer starts a sentence (``tokenizer.ggml.add_bos_token`` and
    ``bos_token_id``), as :func:`magdash.sources.base.sequence_start_rule` names it."""


def model_cache_dir(cache: str | Path | None = None) -> Path:
    """Where converted models go: ``cache``, else ``$MAGDASH_MODEL_CACHE``, else ``cache/models``."""
    chosen = cache or os.environ.get(MODEL_CACHE_ENV) or DEFAULT_MODEL_CACHE
    return Path(chosen).expanduser()


def find_gguf(path: Path) -> Path | None:
    """The GGUF file ``path`` names: the file itself, or the only ``.gguf`` in a model-less folder.

    A folder with a ``config.json`` is a Hugging Face model folder (None); one with several GGUF
    files is ambiguous and refused with their names.
    """
    if path.is_file():
        return path if path.suffix.lower() == GGUF_SUFFIX else None
    if not path.is_dir() or (path / "config.json").exists():
        return None
    files = sorted(p for p in path.iterdir() if p.suffix.lower() == GGUF_SUFFIX and p.is_file())
    if len(files) > 1:
        names = ", ".join(p.name for p in files[:5])
        raise ModelLoadError(f"{str(path)!r} holds {len(files)} GGUF files ({names}): give the path of one of them")
    return files[0] if files else None


MAX_ARRAY_NESTING = 8
"""The deepest arrays of arrays a GGUF header may hold (llama.cpp's files nest none)."""
MAX_TENSOR_DIMS = 4
"""ggml's ``GGML_MAX_DIMS``: a tensor has at most four dimensions."""
_READ_VERSIONS = (2, 3)
_DEFAULT_ALIGNMENT = 32
# The fewest bytes one header entry takes: a key (name length, value type, a one-byte value),
# a tensor's description (name length, dimension count, type, offset), an array or a string in an array.
_SMALLEST_KEY, _SMALLEST_TENSOR, _SMALLEST = 8 + 4 + 1, 8 + 4 + 4 + 8, {_STRING: 8, _ARRAY: 12}


class _HeaderError(ValueError):
    """What is wrong with a GGUF header, in words (becomes a ModelLoadError naming the file)."""


def read_metadata(path: Path) -> dict[str, object]:
    """The header's key/value metadata; arrays (the tokenizer's vocabulary) become their lengths.

    Layout (ggml docs/gguf.md): magic ``GGUF``, version u32, tensor count u64, key count u64,
    then per key a string name, a u32 value type and the value, then per tensor its name, its
    dimensions, its type and the offset of its data. The whole header is checked, so that what
    reads it next (the ``gguf`` package, within transformers' conversion) meets no surprise:
    every count and length against the bytes left in the file, arrays nested at most
    :data:`MAX_ARRAY_NESTING` deep, tensors of at most :data:`MAX_TENSOR_DIMS` dimensions of a
    known type whose data lies inside the file. Anything else is a :class:`ModelLoadError`
    naming the file. (The ``gguf`` package's own reader parses every vocabulary entry into
    arrays: seconds for a small model, about 20 s for Gemma 3's 262k tokens, where this skips them.)
    """
    try:
        with open(path, "rb") as handle:
            if handle.read(4) != _GGUF_MAGIC:
                raise ModelLoadError(f"{str(path)!r} is not a GGUF file (it does not start with 'GGUF')")
            if os.fstat(handle.fileno()).st_size < 24:
                raise _HeaderError("it is too short to be a GGUF file")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return _Header(data).read()
    except ModelLoadError:
        raise
    except (OSError, ValueError, struct.error, UnicodeDecodeError, OverflowError, RecursionError, MemoryError) as error:
        reason = getattr(error, "strerror", None) if isinstance(error, OSError) else None
        raise ModelLoadError(f"cannot read the GGUF file {str(path)!r}: {reason or error}") from None


class _Header:
    """A reader of a GGUF header that never reads past the file's end, checking each length first."""

    def __init__(self, data: mmap.mmap):
        self.data, self.position, self.size = data, 0, len(data)

    def left(self) -> int:
        return self.size - self.position

    def take(self, count: int, what: str) -> int:
        """Step over ``count`` bytes of ``what``; where they began."""
        if count > self.left():
            raise _HeaderError(f"{what} needs {count:,} bytes but only {self.left():,} are left in the file")
        start, self.position = self.position, self.position + count
        return start

    def unpack(self, fmt: str, what: str) -> tuple:
        return struct.unpack_from(fmt, self.data, self.take(struct.calcsize(fmt), what))

    def string(self, what: str) -> tuple[int, int]:
        """Step over a string; where its bytes begin and how many they are."""
        (length,) = self.unpack("<Q", f"the length of {what}")
        return self.take(length, what), length

    def text(self, what: str) -> str:
        start, length = self.string(what)
        try:
            return bytes(self.data[start:start + length]).decode("utf-8")
        except UnicodeDecodeError:
            raise _HeaderError(f"{what} is not UTF-8 text") from None

    def count(self, fmt: str, smallest: int, what: str) -> int:
        """A count of entries of at least ``smallest`` bytes each, checked against the bytes left."""
        (number,) = self.unpack(fmt, f"the count of {what}")
        if number * smallest > self.left():
            raise _HeaderError(f"the file says it holds {number:,} {what}, more than its "
                               f"{self.left():,} bytes left can")
        return number

    def value(self, value_type: int, what: str, depth: int = 0) -> object:
        """A metadata value (an array as its length: a vocabulary's entries are stepped over)."""
        if value_type in _SCALARS:
            return self.unpack(_SCALARS[value_type], what)[0]
        if value_type == _STRING:
            return self.text(what)
        if value_type != _ARRAY:
            raise _HeaderError(f"{what} has an unknown value type {value_type}")
        if depth >= MAX_ARRAY_NESTING:
            raise _HeaderError(f"{what} nests arrays more than {MAX_ARRAY_NESTING} deep")
        (item_type,) = self.unpack("<I", f"the item type of {what}")
        if item_type in _SCALARS:
            size = struct.calcsize(_SCALARS[item_type])
            number = self.count("<Q", size, f"items of {what}")
            self.take(number * size, what)
            return number
        if item_type not in _SMALLEST:
            raise _HeaderError(f"{what} holds items of an unknown value type {item_type}")
        number = self.count("<Q", _SMALLEST[item_type], f"items of {what}")
        for _ in range(number):
            if item_type == _STRING:
                self.string(f"a string of {what}")
            else:
                self.value(_ARRAY, what, depth + 1)
        return number

    def read(self) -> dict[str, object]:
        from gguf.constants import GGML_QUANT_SIZES

        self.take(4, "the magic")
        (version,) = self.unpack("<I", "the version")
        if version not in _READ_VERSIONS:
            raise _HeaderError(f"it is GGUF version {version}; magdash reads versions "
                               f"{' and '.join(map(str, _READ_VERSIONS))} (save it again with a current llama.cpp)")
        (n_tensors,) = self.unpack("<Q", "the tensor count")
        n_keys = self.count("<Q", _SMALLEST_KEY, "metadata keys")
        metadata: dict[str, object] = {}
        for index in range(n_keys):
            key = self.text(f"metadata key {index}")
            if key in metadata:
                raise _HeaderError(f"metadata key {key[:80]!r} appears twice")
            (value_type,) = self.unpack("<I", f"the type of {key[:80]!r}")
            metadata[key] = self.value(value_type, repr(key[:80]))
        if n_tensors * _SMALLEST_TENSOR > self.left():
            raise _HeaderError(f"the file says it holds {n_tensors:,} tensors, more than its "
                               f"{self.left():,} bytes left can")
        alignment = metadata.get("general.alignment", _DEFAULT_ALIGNMENT)
        if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment < 1 or alignment & (alignment - 1):
            raise _HeaderError(f"general.alignment is {alignment!r}: it must be a power of two")
        names: set[str] = set()
        extents = []
        for index in range(n_tensors):
            name = self.text(f"the name of tensor {index}")
            shown = repr(name[:80])
            if name in names:
                raise _HeaderError(f"tensor {shown} appears twice")
            names.add(name)
            (n_dims,) = self.unpack("<I", f"the dimension count of tensor {shown}")
            if n_dims > MAX_TENSOR_DIMS:
                raise _HeaderError(f"tensor {shown} has {n_dims:,} dimensions; GGUF allows at most {MAX_TENSOR_DIMS}")
            dims = self.unpack(f"<{n_dims}Q", f"the dimensions of tensor {shown}")
            tensor_type, offset = self.unpack("<IQ", f"the type and offset of tensor {shown}")
            if tensor_type not in GGML_QUANT_SIZES:
                raise _HeaderError(f"tensor {shown} has an unknown type {tensor_type}")
            block, block_bytes = GGML_QUANT_SIZES[tensor_type]
            elements = math.prod(dims)
            if elements % block:
                raise _HeaderError(f"tensor {shown} has {elements:,} values, not whole blocks of {block}")
            if offset % alignment:
                raise _HeaderError(f"the data of tensor {shown} is not aligned to {alignment} bytes")
            extents.append((shown, offset, elements // block * block_bytes))
        data_start = -(-self.position // alignment) * alignment
        for shown, offset, length in extents:
            if data_start + offset + length > self.size:
                raise _HeaderError(f"the {length:,} bytes of tensor {shown} at offset {offset:,} run past the end of the file")
        return metadata


def quantization_name(file_type: object) -> str:
    """llama.cpp's name of a ``general.file_type`` (3 -> Q4_1, 15 -> Q4_K_M)."""
    from gguf.constants import LlamaFileType

    try:
        return LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_")  # pyright: ignore[reportArgumentType] - any metadata value: what int() refuses is "unknown"
    except (TypeError, ValueError):
        return "unknown"


def gguf_info(path: Path) -> GGUFInfo:
    """Hash and read a GGUF file once per process (per path, size and modification time)."""
    path = path.resolve()
    try:
        stat = path.stat()
    except OSError as error:
        raise ModelLoadError(f"cannot read the GGUF file {str(path)!r}: {error.strerror}") from None
    return _gguf_info(path, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _gguf_info(path: Path, _size: int, _mtime_ns: int) -> GGUFInfo:
    metadata = read_metadata(path)
    architecture = str(metadata.get("general.architecture", "unknown"))
    hyperparameters = {k: v for k, v in sorted(metadata.items()) if k.startswith(f"{architecture}.")}
    config_digest = hashlib.sha1(json.dumps(hyperparameters, default=str).encode()).hexdigest()[:16]
    quantization = quantization_name(metadata.get("general.file_type"))
    bos = metadata.get("tokenizer.ggml.bos_token_id")
    if metadata.get("tokenizer.ggml.add_bos_token"):
        start = "tokenizer"
    else:
        start = f"bos:{int(bos)}" if isinstance(bos, int) else "none"
    return GGUFInfo(path, sha256_file(path), architecture, quantization, config_digest, start)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def converted_name(info: GGUFInfo, dtype: str, transformers_version: str) -> str:
    return f"gguf-{info.sha256[:16]}-{dtype}-transformers-{transformers_version}-v{CONVERSION_VERSION}"


def find_converted(info: GGUFInfo, cache: Path, transformers_version: str) -> Path | None:
    """A finished conversion of this file in any dtype (enough for its tokenizer), or None."""
    for dtype in ("float32", "bfloat16", "float16"):
        folder = cache / converted_name(info, dtype, transformers_version)
        if (folder / _COMPLETE).exists():
            return folder
    return None


def is_converted(info: GGUFInfo, dtype: str, cache: Path) -> bool:
    """Whether :func:`converted_folder` has this file in ``dtype`` already (else loading it converts it first).

    Args:
        info: the GGUF file.
        dtype: the dtype it would be loaded in.
        cache: the model cache.
    """
    return (cache / converted_name(info, dtype, transformers_version()) / _COMPLETE).exists()


def converted_folder(info: GGUFInfo, dtype: str, cache: Path) -> Path:
    """The model folder of ``info`` dequantized to ``dtype``, converting it on first use.

    The conversion is written to a temporary folder beside its final place and renamed into it
    when complete, so an interrupted conversion leaves nothing that looks finished; a process
    that asks for a folder another one is converting waits for it instead of converting again.
    """
    version = transformers_version()
    folder = cache / converted_name(info, dtype, version)
    if (folder / _COMPLETE).exists():
        return folder
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ModelLoadError(f"cannot write to the model cache {str(cache)!r}: {error.strerror}") from None
    with _conversion_lock(cache / f".{folder.name}.lock"):
        if (folder / _COMPLETE).exists():  # converted by another process while this one waited
            return folder
        _convert_into(info, dtype, cache, folder, version)
    return folder


@contextmanager
def _conversion_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` while converting, so that processes converting the same
    file at once (the app and a CLI command, test workers) do it once: the others wait, then
    find the folder finished. Where locks are unavailable (Windows, some network file
    systems) each converts on its own and the rename below keeps the first finished folder.

    The lock file is removed while still held, whether the conversion finished or failed, so a
    refused model leaves nothing in the cache. A process that was waiting on it then holds a lock
    no newcomer sees; at worst both convert, and the rename keeps the first finished folder."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    try:
        handle = open(path, "a")  # noqa: SIM115 - held for the conversion, closed in finally
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("waiting for another process converting %s", path.name.removesuffix(".lock").lstrip("."))
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        with suppress(OSError):
            path.unlink()
        handle.close()


def _convert_into(info: GGUFInfo, dtype: str, cache: Path, folder: Path, version: str) -> None:
    """Convert ``info`` into a staging folder beside ``folder`` and rename it into place."""
    log.warning("converting %s to %s safetensors once (kept in %s)", info.path.name, dtype, cache)
    try:
        staging = Path(tempfile.mkdtemp(prefix=".converting-", dir=cache))
        staging.chmod(0o755)  # mkdtemp's folder is private; the cache is shared like the store
    except OSError as error:
        raise ModelLoadError(f"cannot write to the model cache {str(cache)!r}: {error.strerror}") from None
    try:
        _convert(info, dtype, staging)
        (staging / _COMPLETE).write_text(json.dumps({
            "gguf": str(info.path), "sha256": info.sha256, "quantization": info.quantization,
            "dtype": dtype, "transformers": version,
        }, indent=1))
        try:
            staging.rename(folder)
        except OSError:
            if not (folder / _COMPLETE).exists():
                raise
            log.info("%s was converted by another process meanwhile", info.path.name)
    except OSError as error:
        raise ModelLoadError(f"cannot write the converted model to {str(cache)!r}: {error}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def _parsed_once(path: Path) -> Iterator[None]:
    """Let transformers parse the GGUF file once instead of once per ``from_pretrained`` part.

    transformers builds a ``gguf.GGUFReader`` for the config, again for the tokenizer and again
    for the weights; each parses every metadata field, the vocabulary included (about 20 s for
    Gemma 3's 262k tokens on two cores, most of a conversion). The reader of ``path`` is made
    once and handed out again while this context is open; the patch is removed on exit.
    """
    import gguf

    original = gguf.GGUFReader
    readers: dict[str, object] = {}

    def reader(file, *args, **kwargs):
        if args or kwargs or Path(file).resolve() != path.resolve():
            return original(file, *args, **kwargs)
        key = str(path)
        if key not in readers:
            readers[key] = original(file)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = original


def _convert(info: GGUFInfo, dtype: str, target: Path) -> None:
    """Dequantize with transformers and save config, tokenizer and weights as safetensors.

    transformers marks a model loaded from GGUF as quantized and refuses ``save_pretrained``
    even once every tensor is dequantized, so the weights are written with safetensors'
    ``save_file`` and the config without its GGUF quantization entry. A tied LM head is left
    out, never the input embedding it shares: magdash loads the base model, which has no LM
    head, and a checkpoint holding only ``lm_head.weight`` would leave its embedding to random
    initialisation.
    """
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    where = {"pretrained_model_name_or_path": info.path.parent, "gguf_file": info.path.name}
    # Dequantized even where transformers could keep GGUF blocks (with the kernels package):
    # the folder must hold plain tensors.
    dense = GgufConfig(gguf_file=info.path.name, dequantize=True)
    try:
        with _parsed_once(info.path):
            tokenizer = AutoTokenizer.from_pretrained(**where)
            model = AutoModelForCausalLM.from_pretrained(**where, dtype=getattr(torch, dtype), quantization_config=dense)
    except Exception as error:  # noqa: BLE001 - the gguf reader meets a hostile file with any kind of error
        first_line = (str(error).splitlines() or [type(error).__name__])[0]
        raise ModelLoadError(
            f"transformers cannot read {info.path.name} ({info.architecture}, {info.quantization}): {first_line}"
        ) from None
    finally:
        hf_logging.set_verbosity(previous)
    config = model.config
    # The GGUF config names no architecture class; magdash reads causality from it.
    config.architectures = [type(model).__name__]
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.save_pretrained(target)
    tokenizer.save_pretrained(target)
    tensors = model.state_dict()
    if getattr(config, "tie_word_embeddings", False):
        tensors.pop("lm_head.weight", None)
    try:
        save_file({name: tensor.detach().contiguous() for name, tensor in tensors.items()},
                  str(target / "model.safetensors"), metadata={"format": "pt"})
    except RuntimeError as error:  # safetensors refuses tensors that share memory
        raise ModelLoadError(f"cannot save {info.path.name} as safetensors: {str(error).splitlines()[0]}") from None


def quantization(fingerprint: str) -> str | None:
    """The quantization type a stored model's weights had (``Q4_1``), None for unquantized ones."""
    kind, _, rest = fingerprint.partition(":")
    return rest.partition(":")[0] if kind == "gguf" else None


def weights_note(fingerprint: str, dtype: str) -> str:
    """What to say about a stored model's weights: empty unless they were quantized.

    Quantized weights are a lossy copy of the trained model (4-bit types keep about 4.5 bits
    per weight), so every table that shows the model says so.
    """
    kind = quantization(fingerprint)
    return f"quantized ({kind} GGUF), dequantized to {dtype}" if kind else ""


def _locate(base: str, _model_cache: Path) -> Located | None:
    path = existing_path(base)
    file = find_gguf(path) if path is not None else None
    return Located(file, f"gguf:{file}") if file is not None else None


def _spec_from_choice(value: str) -> str:
    path = Path(value).expanduser()
    try:
        is_file = path.is_file()
    except OSError as error:  # e.g. a name too long for the file system
        raise MagdashError(f"cannot use {value!r} as a GGUF file ({error.strerror})") from None
    if not is_file or path.suffix.lower() != GGUF_SUFFIX:
        raise MagdashError(f"{value!r} is not a .gguf file: give the path of a .gguf file (a folder of "
                           "safetensors is a local folder)")
    return str(path.resolve())


KIND = SourceKind(
    name="gguf",
    label="GGUF file",
    hint="a .gguf file (or a folder holding exactly one), converted once to safetensors under the model cache",
    example="~/models/Llama-3.2-1B-Q4_K_M.gguf",
    locate=_locate,
    spec_from_choice=_spec_from_choice,
    spec_from_source=lambda value: value if Path(value).is_file() else None,
)
"""The file format of llama.cpp, Ollama and LM Studio: quantized weights, hyperparameters and tokenizer."""
