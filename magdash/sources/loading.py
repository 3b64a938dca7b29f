"""Loading a resolved model safely: offline, safetensors only unless pickle is allowed, no
remote code unless asked for, and every weight of the base model present.

:func:`load_model` gives a :class:`LoadedModel`: the model on its device, its fast tokenizer, and
the blocks and final norm that extraction's hooks attach to (:mod:`magdash.extraction`). torch and
transformers are imported only inside the functions that need them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magdash.environment import transformers_version
from magdash.errors import ModelLoadError
from magdash.layers import layer_labels
from magdash.params import DEFAULT_DEVICE, DEFAULT_DTYPE, DTYPES
from magdash.sources.base import ModelSource, sequence_start_rule
from magdash.sources.gguf import converted_folder, find_converted, is_converted, model_cache_dir
from magdash.sources.resolve import resolve_model

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)


def pick_device(device: str = DEFAULT_DEVICE) -> str:
    import torch

    if device != "auto":
        try:
            torch.device(device)
        except (RuntimeError, TypeError):
            raise ModelLoadError(f"unknown device {device!r}: use auto, cpu, cuda, cuda:N or mps") from None
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ModelLoadError(f"device {device!r} asked for but CUDA is not available: use device='cpu'",
                                 parameters=("device",))
        if device == "mps" and not torch.backends.mps.is_available():
            raise ModelLoadError("device 'mps' asked for but MPS is not available: use device='cpu'",
                                 parameters=("device",))
        return device
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


@dataclass
class LoadedModel:
    """A model ready for extraction, with the blocks and final norm the hooks attach to."""

    source: ModelSource
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    dtype: str
    device: str
    blocks: list[torch.nn.Module]
    final_norm: torch.nn.Module | None
    n_blocks: int
    hidden_size: int
    max_length: int
    is_causal: bool = False

    @property
    def sequence_start(self) -> str:
        """How each sentence starts before its first word (:func:`sequence_start_rule`)."""
        return self.source.sequence_start

    @property
    def pad_id(self) -> int:
        """The token id that pads a batch (the loader gives a tokenizer without one its EOS or UNK)."""
        pad = self.tokenizer.pad_token_id
        if not isinstance(pad, int):
            raise ModelLoadError(f"the tokenizer of {self.source.spec!r} has no padding token (pad_token_id={pad!r})")
        return pad

    @property
    def layer_labels(self) -> tuple[str, ...]:
        return layer_labels(self.n_blocks, self.final_norm is not None)


_FINAL_NORM_NAMES = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "final_norm")


def find_blocks(model, n_blocks: int) -> list:
    """The transformer blocks: the outermost ModuleList holding ``n_blocks`` modules."""
    import torch

    for _, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == n_blocks:
            return list(module)
    raise ModelLoadError(f"cannot find the {n_blocks} transformer blocks of {type(model).__name__}")


def find_final_norm(model):
    """The norm applied after the last block, if the architecture has one (decoders do)."""
    for owner in (model, getattr(model, "decoder", None), getattr(model, "model", None)):
        if owner is None:
            continue
        for name in _FINAL_NORM_NAMES:
            module = getattr(owner, name, None)
            if module is not None and hasattr(module, "register_forward_pre_hook"):
                return module
    return None


def loading_words(source: ModelSource, dtype: str) -> str:
    """What loading ``source`` in ``dtype`` does before its first forward pass, for a progress
    line: "converting <spec>'s GGUF file (first time only)" when its conversion is not cached yet
    (tens of seconds), else "loading <spec>".

    Args:
        source: the resolved model.
        dtype: the dtype it is loaded in.
    """
    if source.gguf is not None and not is_converted(source.gguf, dtype, source.model_cache or model_cache_dir()):
        return f"converting {source.spec}'s GGUF file to {dtype} (first time only)"
    return f"loading {source.spec}"


def load_tokenizer(spec: str | ModelSource, *, trust_remote_code: bool = False):
    """A model's fast tokenizer alone, offline: enough to preview where numbers fall."""
    source = spec if isinstance(spec, ModelSource) else resolve_model(spec)
    from transformers import AutoTokenizer

    where = {"pretrained_model_name_or_path": source.path}
    if source.gguf is not None:
        # A finished conversion holds the tokenizer; else it is read from the GGUF (seconds),
        # without converting the weights just for a preview.
        converted = find_converted(source.gguf, source.model_cache or model_cache_dir(), transformers_version())
        where = {"pretrained_model_name_or_path": converted} if converted else {
            "pretrained_model_name_or_path": source.path.parent, "gguf_file": source.path.name}
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            **where, use_fast=True, local_files_only=True, trust_remote_code=trust_remote_code
        )
    except (OSError, ValueError, KeyError, IndexError, TypeError, OverflowError, RecursionError, struct.error) as error:
        # a GGUF file's tokenizer is read by the gguf package, which meets a damaged file with any of these
        first_line = (str(error).splitlines() or [type(error).__name__])[0]
        raise ModelLoadError(f"cannot load the tokenizer of {source.spec!r}: {first_line}") from None
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"the tokenizer of {source.spec!r} has no offset mapping (not a 'fast' tokenizer); "
            "magdash needs offsets to find the number's tokens: add a tokenizer.json"
        )
    return tokenizer


def load_model(
    spec: str | ModelSource,
    *,
    dtype: str = DEFAULT_DTYPE,
    device: str = DEFAULT_DEVICE,
    device_map: str | None = None,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
    model_cache: str | Path | None = None,
    with_head: bool = False,
) -> LoadedModel:
    """Load a model and its fast tokenizer, offline, safetensors only by default.

    A GGUF model is loaded from its converted folder, converting it first if needed. With
    ``with_head`` the causal LM is loaded with its language-model head (``AutoModelForCausalLM``,
    for next-token logits: :mod:`magdash.trial_extraction`); a model that is not a decoder-only
    causal LM is then refused before its weights are read.
    """
    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    source = spec if isinstance(spec, ModelSource) else resolve_model(
        spec, allow_pickle=allow_pickle, model_cache=model_cache
    )
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    previous_verbosity = hf_logging.get_verbosity()
    # The load report lists the unused LM head of causal checkpoints; it is expected here.
    hf_logging.set_verbosity_error()
    torch_dtype = getattr(torch, dtype)
    common: dict[str, Any] = {"local_files_only": True, "trust_remote_code": trust_remote_code}
    path = source.path
    if source.gguf is not None:
        path = converted_folder(source.gguf, dtype, source.model_cache or model_cache_dir())
    if not source.is_random and not source.uses_pickle:
        for file in sorted(Path(path).glob("*.safetensors")):
            check_safetensors(file)
    from safetensors import SafetensorError

    try:
        config = AutoConfig.from_pretrained(path, **common)
        if with_head and not is_causal_lm(config):
            raise ModelLoadError(f"{source.spec!r} is not a causal language model ({', '.join(config.architectures or [])}): "
                                 "next-token logits need a decoder with its language-model head")
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True, **common)
        # Typed as Any: with output_loading_info the loaders return (model, info), which their stubs do not say.
        auto_class: Any = AutoModelForCausalLM if with_head else AutoModel
        if source.is_random:
            torch.manual_seed(source.seed)
            model = auto_class.from_config(config, dtype=torch_dtype, trust_remote_code=trust_remote_code)
        else:
            model, loading = auto_class.from_pretrained(
                path, config=config, dtype=torch_dtype, use_safetensors=not source.uses_pickle,
                device_map=device_map, output_loading_info=True, **common,
            )
            refuse_missing_weights(source.spec, loading["missing_keys"])
    except ValueError as error:
        message = str(error).splitlines()[0]
        if "trust_remote_code" in str(error) or "contains custom code" in str(error):
            raise ModelLoadError(
                f"{source.spec!r} needs code shipped with the model; pass trust_remote_code=True only if you trust it",
                parameters=("trust_remote_code",),
            ) from None
        raise ModelLoadError(f"cannot load {source.spec!r}: {message}") from None
    except (OSError, KeyError, RuntimeError, SafetensorError) as error:
        raise ModelLoadError(f"cannot load {source.spec!r}: {(str(error).splitlines() or [type(error).__name__])[0]}") from None
    finally:
        hf_logging.set_verbosity(previous_verbosity)
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"the tokenizer of {source.spec!r} has no offset mapping (not a 'fast' tokenizer); "
            "magdash needs offsets to find the number's tokens: add a tokenizer.json"
        )
    found = sequence_start_rule(tokenizer, getattr(config, "bos_token_id", None))
    if found != source.sequence_start:
        raise ModelLoadError(
            f"the tokenizer of {source.spec!r} starts a sentence with {found!r}, its files say "
            f"{source.sequence_start!r}; magdash cannot tell where its numbers fall"
        )
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    model.eval()
    chosen_device = "cpu"
    if device_map is None:
        chosen_device = pick_device(device)
        model.to(chosen_device)
    else:
        chosen_device = str(next(model.parameters()).device)
    n_blocks = int(
        getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None) or 0
    )
    hidden_size = int(getattr(config, "hidden_size", None) or getattr(config, "n_embd", None) or 0)
    if not n_blocks or not hidden_size:
        raise ModelLoadError(f"cannot tell the depth and width of {source.spec!r} from its config")
    max_length = int(
        getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None) or 512
    )
    if source.gguf is not None:
        # Only the converted config names the architecture class (LlamaForCausalLM).
        source = dataclasses.replace(source, architecture=",".join(config.architectures or [config.model_type]))
    return LoadedModel(
        source=source,
        model=model,
        tokenizer=tokenizer,
        dtype=dtype,
        device=chosen_device,
        blocks=find_blocks(model, n_blocks),
        final_norm=find_final_norm(model),
        n_blocks=n_blocks,
        hidden_size=hidden_size,
        max_length=max_length,
        is_causal=is_causal_lm(config),
    )


SAFETENSORS_MAX_HEADER_BYTES = 100_000_000
"""The largest safetensors header read (the safetensors library's own limit)."""
_SAFETENSORS_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8,
}


def check_safetensors(file: Path) -> None:
    """Refuse a ``.safetensors`` file whose header cannot describe its bytes, before transformers
    opens it (where the safetensors library's error would escape as a traceback): a header
    length past the file's end (or over :data:`SAFETENSORS_MAX_HEADER_BYTES`), a header that is
    not a JSON object of tensors, a tensor whose data offsets run past the end of the file or
    whose bytes do not hold its shape. A :class:`ModelLoadError` names the file (and, for a
    link, what it points to).

    Args:
        file: the weights file (a link is followed).
    """
    shown = repr(str(file))
    if file.is_symlink():
        shown += f" (a link to {str(file.resolve())!r})"

    def refuse(reason: str) -> ModelLoadError:
        return ModelLoadError(f"{shown} is not a usable safetensors file: {reason}; give the model's own weights")

    try:
        with open(file, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise refuse(f"it holds {size} bytes, fewer than a header needs")
            length = int.from_bytes(prefix, "little")
            if length > size - 8 or length > SAFETENSORS_MAX_HEADER_BYTES:
                raise refuse(f"its header says it is {length:,} bytes long, in a file of {size:,}")
            raw = handle.read(length)
    except OSError as error:
        raise ModelLoadError(f"cannot read the weights file {shown}: {error.strerror or error}") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise refuse("its header is not JSON") from None
    if not isinstance(header, dict):
        raise refuse("its header is not a JSON object of tensors")
    data_bytes = size - 8 - length
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        described = isinstance(entry, dict) and isinstance(entry.get("dtype"), str)
        shape, offsets = (entry.get("shape"), entry.get("data_offsets")) if described else (None, None)
        if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)
                and isinstance(offsets, list) and len(offsets) == 2 and all(type(n) is int for n in offsets)):
            raise refuse(f"tensor {name[:80]!r} has no dtype, shape and data offsets")
        begin, end = offsets
        if not 0 <= begin <= end <= data_bytes:
            raise refuse(f"tensor {name[:80]!r} lies at bytes {begin:,} to {end:,}, past the {data_bytes:,} it holds")
        itemsize = _SAFETENSORS_DTYPE_BYTES.get(entry["dtype"])
        if itemsize is not None and end - begin != math.prod(shape) * itemsize:
            raise refuse(f"tensor {name[:80]!r} of shape {shape} takes {end - begin:,} bytes, not "
                         f"{math.prod(shape) * itemsize:,}")


def refuse_missing_weights(spec: str, missing: set[str] | list[str]) -> None:
    """Refuse a checkpoint that lacks weights of the base model.

    transformers initialises missing weights at random and only logs it (the load report that
    magdash silences), so a folder without, say, its input embedding would give different hidden
    states on every load. A pooler that a checkpoint lacks is the one exception: it is not on the
    path of the hidden states.
    """
    lacking = sorted(name for name in missing if name.split(".")[0] != "pooler")
    if lacking:
        shown = ", ".join(lacking[:5]) + (f" and {len(lacking) - 5} more" if len(lacking) > 5 else "")
        raise ModelLoadError(
            f"{spec!r} lacks weights the model needs ({shown}); transformers would fill them with random "
            "numbers: give a complete checkpoint"
        )


_CAUSAL_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def is_causal_lm(config) -> bool:
    """Whether every position sees only itself and earlier tokens (decoder-only LMs)."""
    if getattr(config, "is_encoder_decoder", False):
        return False
    architectures = getattr(config, "architectures", None) or []
    return bool(architectures) and all(name.endswith(_CAUSAL_SUFFIXES) for name in architectures)
