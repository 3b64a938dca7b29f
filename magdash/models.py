"""Resolving model names, fingerprinting weights, and loading models safely.

A model spec is one of:

* a built-in name (:mod:`magdash.builtin_models`): ``minilm``, ``smollm2``, ``gemma3-270m``;
* a local folder holding a Hugging Face model (``config.json`` plus ``*.safetensors``);
* a GGUF file, or a folder holding exactly one (:mod:`magdash.gguf`), converted once to a cached
  safetensors folder;
* ``ollama:NAME[:TAG]``, a model pulled with Ollama (:mod:`magdash.ollama`);
* the repo id of a model already in the Hugging Face cache (``meta-llama/Meta-Llama-3-8B``);
* any of those followed by ``@random`` (or ``@random:SEED``): the same architecture with seeded
  random weights, the untrained control.

Nothing is ever downloaded: every load is ``local_files_only``. Only safetensors weights are
loaded unless the caller explicitly allows pickle checkpoints, and ``trust_remote_code`` stays
off unless asked for. Resolution (:func:`resolve_model`) imports neither torch nor transformers,
so checking whether a model is already stored costs no model load.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from magdash.builtin_models import BUILTIN_MODELS, builtin_model_path
from magdash.errors import ModelLoadError
from magdash.gguf import (
    CONVERSION_VERSION,
    GGUFInfo,
    converted_folder,
    find_converted,
    find_gguf,
    gguf_info,
    model_cache_dir,
)
from magdash.stimuli import POSITIONS

log = logging.getLogger(__name__)

RANDOM_SUFFIX = "@random"
DTYPES = ("float32", "float16", "bfloat16")
SAMPLED_HASH_LIMIT = 512 * 1024 * 1024
_SAMPLE_BYTES = 1 << 20
_PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "model.ckpt.index")


@dataclass(frozen=True)
class ModelSource:
    """Where a model's files are and what identifies its weights, resolved without loading it."""

    spec: str
    path: Path
    source: str
    fingerprint: str
    architecture: str
    is_random: bool = False
    seed: int = 0
    uses_pickle: bool = False
    gguf: GGUFInfo | None = None
    """The GGUF file the weights come from (converted on load), or None."""
    model_cache: Path | None = None
    """Where a GGUF model's conversion is kept (default: :func:`magdash.gguf.model_cache_dir`)."""

    def model_id(self, dtype: str, position: str, transformers_version: str) -> str:
        """Identity of the vectors this model produces: weights, dtype, library version, position,
        and a prepended BOS token (:attr:`sequence_start`) where magdash adds one: such vectors
        differ from those of the same sentences without it."""
        payload = f"{self.fingerprint}|{dtype}|{transformers_version}|{position}"
        if self.sequence_start.startswith("bos:"):
            payload += f"|start={self.sequence_start}"
        return hashlib.sha1(payload.encode()).hexdigest()[:20]

    @functools.cached_property
    def sequence_start(self) -> str:
        """How a sentence starts before its first word (:func:`sequence_start_rule`), read from
        the GGUF header or the tokenizer and config, without loading the weights."""
        if self.gguf is not None:
            return self.gguf.sequence_start
        return sequence_start_rule(load_tokenizer(self), _read_config(self.path).get("bos_token_id"))


def sequence_start_rule(tokenizer, config_bos_token_id: object = None) -> str:
    """How every sentence starts before its first word, so that no number lands at position 0.

    A sequence's first position is an attention sink in decoders: the model writes a vector of
    a very large norm there whatever the token (Xiao et al. 2023, arXiv 2309.17453; SmolLM2's
    norm there is about a hundred times that of the same token later), so a number at position 0
    would be measured in the sink, not as a number. Returns

    - ``"tokenizer"`` when the tokenizer puts special tokens before the text itself (BERT's
      ``[CLS]``, Llama's and Gemma's ``<bos>``): nothing to add;
    - ``"bos:<id>"`` when it does not but the model has a BOS token (the tokenizer's, else the
      config's ``bos_token_id``): magdash prepends it, and it is part of the model's identity;
    - ``"none"`` when the model has no BOS token: carriers that put the number first are refused
      unless the user allows them (``--allow-number-first``).

    Args:
        tokenizer: the model's fast tokenizer.
        config_bos_token_id: the model config's ``bos_token_id``, if any.
    """
    probe = "7 items"
    with_specials = list(tokenizer(probe, add_special_tokens=True)["input_ids"])
    plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    if plain and with_specials[:1] != plain[:1] and any(
            with_specials[i:i + len(plain)] == plain for i in range(1, len(with_specials) - len(plain) + 1)):
        return "tokenizer"
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None and isinstance(config_bos_token_id, int) and not isinstance(config_bos_token_id, bool):
        bos = config_bos_token_id
    return f"bos:{int(bos)}" if bos is not None else "none"


def transformers_version() -> str:
    from importlib.metadata import version

    return version("transformers")


def cached_repo_ids() -> list[str]:
    """Model repo ids present in the local Hugging Face cache."""
    try:
        from huggingface_hub import scan_cache_dir

        info = scan_cache_dir()
    except Exception as error:  # noqa: BLE001 - a missing or unreadable cache just lists nothing
        log.info("no usable Hugging Face cache: %s", error)
        return []
    return sorted(repo.repo_id for repo in info.repos if repo.repo_type == "model")


def _cached_snapshot(repo_id: str) -> Path | None:
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception as error:  # noqa: BLE001 - any failure means "not in the cache"
        log.info("%s is not in the Hugging Face cache: %s", repo_id, error)
        return None


def split_random_suffix(spec: str) -> tuple[str, bool, int]:
    """``name@random:7`` -> (``name``, True, 7); anything else -> (spec, False, 0)."""
    base, marker, seed_text = spec.partition(RANDOM_SUFFIX)
    if not marker:
        return spec, False, 0
    if seed_text and not seed_text.startswith(":"):
        raise ModelLoadError(f"cannot read {spec!r}: write NAME@random or NAME@random:SEED")
    seed_text = seed_text[1:]
    if seed_text and not seed_text.isdigit():
        raise ModelLoadError(f"random seed {seed_text!r} in {spec!r} is not a whole number")
    return base, True, int(seed_text or 0)


def resolve_model(spec: str, *, allow_pickle: bool = False, model_cache: str | Path | None = None) -> ModelSource:
    """Find a model's files and fingerprint them, without loading any weights.

    ``model_cache`` is where GGUF models are converted (and gemma3-270m assembled); by default
    ``$MAGDASH_MODEL_CACHE`` or ``cache/models``.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ModelLoadError("no model given: use 'minilm', a model folder, or a Hugging Face repo id")
    spec = spec.strip()
    cache = model_cache_dir(model_cache)
    base, is_random, seed = split_random_suffix(spec)
    if base.lower() in BUILTIN_MODELS:
        path, source, revision = builtin_model_path(base.lower(), cache), f"builtin:{base.lower()}", None
    elif base.startswith(OLLAMA_PREFIX):
        from magdash.ollama import resolve_ollama

        # Ollama's blobs are GGUF files named by their digest, without the .gguf suffix.
        blob = resolve_ollama(base.removeprefix(OLLAMA_PREFIX))
        return _gguf_source(spec, blob, base, is_random, seed, cache)
    elif Path(base).expanduser().exists():
        path = Path(base).expanduser().resolve()
        source, revision = f"folder:{path}", None
    elif (snapshot := _cached_snapshot(base)) is not None:
        path, source, revision = snapshot, f"hf-cache:{base}", snapshot.name
    else:
        cached = cached_repo_ids()
        hint = f" Models in your Hugging Face cache: {', '.join(cached[:10])}." if cached else ""
        raise ModelLoadError(
            f"no model {base!r}: give a built-in name ({', '.join(BUILTIN_MODELS)}), a folder holding "
            "config.json and *.safetensors, a .gguf file, ollama:NAME, or the id of a model already "
            f"in your Hugging Face cache (nothing is downloaded).{hint}"
        )
    if (gguf_file := find_gguf(path)) is not None:
        return _gguf_source(spec, gguf_file, source, is_random, seed, cache)
    if path.is_file():
        raise ModelLoadError(f"{str(path)!r} is a file: give a .gguf file or a model folder")
    config = _read_config(path)
    architecture = ",".join(config.get("architectures") or [config.get("model_type", "unknown")])
    if is_random:
        config_digest = hashlib.sha1(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
        fingerprint = f"random:seed={seed}:config={config_digest}"
        return ModelSource(spec, path, source, fingerprint, architecture, True, seed, False)
    weights, uses_pickle = _weight_files(path, allow_pickle)
    fingerprint = f"commit:{revision}" if revision else f"sha256:{fingerprint_files(weights)}"
    return ModelSource(spec, path, source, fingerprint, architecture, False, 0, uses_pickle)


OLLAMA_PREFIX = "ollama:"


def _gguf_source(spec: str, file: Path, source: str, is_random: bool, seed: int, cache: Path) -> ModelSource:
    """A GGUF model is identified by its file's SHA-256 and quantization type, read without loading it."""
    info = gguf_info(file)
    if source.startswith("folder:"):
        source = f"gguf:{info.path}"
    architecture = f"{info.architecture} (GGUF)"
    if is_random:
        fingerprint = f"random:seed={seed}:gguf-config={info.config_digest}"
        return ModelSource(spec, info.path, source, fingerprint, architecture, True, seed, gguf=info, model_cache=cache)
    # The conversion's version is part of the identity: vectors from an older conversion are not
    # the same model's (version 1 left tied embeddings to random initialisation).
    fingerprint = f"gguf:{info.quantization}:sha256:{info.sha256[:32]}:conversion-v{CONVERSION_VERSION}"
    return ModelSource(spec, info.path, source, fingerprint, architecture, gguf=info, model_cache=cache)


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


def _read_config(path: Path) -> dict:
    config_file = path / "config.json"
    try:
        return json.loads(config_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelLoadError(f"{str(path)!r} has no config.json: point at a Hugging Face model folder") from None
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"cannot read {str(config_file)!r}: {error}") from None


def _weight_files(path: Path, allow_pickle: bool) -> tuple[list[Path], bool]:
    safetensors = sorted(path.glob("*.safetensors"))
    if safetensors:
        return safetensors, False
    pickles = [path / name for name in _PICKLE_WEIGHTS if (path / name).exists()]
    pickles += sorted(path.glob("pytorch_model-*.bin"))
    if pickles and allow_pickle:
        log.warning("loading pickle weights from %s: only do this for files you trust", path)
        return pickles, True
    if pickles:
        raise ModelLoadError(
            f"{str(path)!r} holds only pickle weights ({pickles[0].name}), which can run code when "
            "loaded; convert them to safetensors, or pass --allow-pickle if you trust the files"
        )
    raise ModelLoadError(f"{str(path)!r} holds no *.safetensors weights")


def fingerprint_files(files: list[Path]) -> str:
    """SHA-256 over the weight files: whole files up to 512 MB in total, else sampled.

    Hashing 16 GB of Llama weights on every run would cost minutes, so large checkpoints are
    fingerprinted by their names, sizes, safetensors headers and sixteen 1 MB samples spread
    over each file. Two different checkpoints (fine-tunes change every tensor) never collide.
    """
    digest = hashlib.sha256()
    total = sum(f.stat().st_size for f in files)
    for file in files:
        size = file.stat().st_size
        digest.update(f"{file.name}:{size}".encode())
        with open(file, "rb") as handle:
            if total <= SAMPLED_HASH_LIMIT:
                for chunk in iter(lambda: handle.read(1 << 22), b""):
                    digest.update(chunk)
                continue
            header = handle.read(8)
            digest.update(header)
            if len(header) == 8:
                digest.update(handle.read(min(int.from_bytes(header, "little"), 100 << 20)))
            for index in range(16):
                handle.seek(max(0, (size - _SAMPLE_BYTES) * index // 15))
                digest.update(handle.read(_SAMPLE_BYTES))
    return digest.hexdigest()[:32]


def default_name(spec: str, dtype: str, position: str) -> str:
    """Store name of an extraction: the spec, with non-default dtype and position appended."""
    name = spec.strip()
    if dtype != "float32":
        name += f":{dtype}"
    if position != "last":
        name += f":{position}"
    return name


def control_name(name: str) -> str:
    """Store name of the ``@random`` control of the model stored as ``name``.

    The suffixes :func:`default_name` appends (a dtype, then a token position) stay after the
    marker, as extracting the control with the same options names it: ``minilm:float16`` ->
    ``minilm@random:float16``. A control's own name is returned unchanged.
    """
    spec, suffix = name, ""
    for options in (POSITIONS, DTYPES):
        for option in options:
            if spec.endswith(f":{option}") and len(spec) > len(option) + 1:
                spec, suffix = spec[: -len(option) - 1], f":{option}{suffix}"
                break
    return name if RANDOM_SUFFIX in spec else f"{spec}{RANDOM_SUFFIX}{suffix}"


def pick_device(device: str = "auto") -> str:
    import torch

    if device != "auto":
        try:
            torch.device(device)
        except (RuntimeError, TypeError):
            raise ModelLoadError(f"unknown device {device!r}: use auto, cpu, cuda, cuda:N or mps") from None
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ModelLoadError(f"device {device!r} asked for but CUDA is not available: use --device cpu")
        if device == "mps" and not torch.backends.mps.is_available():
            raise ModelLoadError("device 'mps' asked for but MPS is not available: use --device cpu")
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
    model: object
    tokenizer: object
    dtype: str
    device: str
    blocks: list
    final_norm: object | None
    n_blocks: int
    hidden_size: int
    max_length: int
    is_causal: bool = False

    @property
    def sequence_start(self) -> str:
        """How each sentence starts before its first word (:func:`sequence_start_rule`)."""
        return self.source.sequence_start

    @property
    def layer_labels(self) -> tuple[str, ...]:
        return layer_labels(self.n_blocks, self.final_norm is not None)


POST_NORM_LABEL = "final norm (post-norm)"
"""The label of a layer holding the output of the final norm (transformers' ``hidden_states[-1]``)."""
LAST_LAYER_CHOICES = ("block", "post-norm")
"""What the last layer of imported hidden states is: a block's output, or the final norm's."""


def layer_labels(n_blocks: int, has_final_norm: bool) -> tuple[str, ...]:
    labels = ["embeddings"] + [f"block {i}" for i in range(1, n_blocks + 1)]
    if has_final_norm:
        labels[-1] = f"block {n_blocks} (pre-norm residual)"
        labels.append(POST_NORM_LABEL)
    return tuple(labels)


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
    except (OSError, ValueError) as error:
        raise ModelLoadError(f"cannot load the tokenizer of {source.spec!r}: {str(error).splitlines()[0]}") from None
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"the tokenizer of {source.spec!r} has no offset mapping (not a 'fast' tokenizer); "
            "magdash needs offsets to find the number's tokens: add a tokenizer.json"
        )
    return tokenizer


def load_model(
    spec: str | ModelSource,
    *,
    dtype: str = "float32",
    device: str = "auto",
    device_map: str | None = None,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
    model_cache: str | Path | None = None,
) -> LoadedModel:
    """Load a model and its fast tokenizer, offline, safetensors only by default.

    A GGUF model is loaded from its converted folder, converting it first if needed.
    """
    if dtype not in DTYPES:
        raise ModelLoadError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    source = spec if isinstance(spec, ModelSource) else resolve_model(
        spec, allow_pickle=allow_pickle, model_cache=model_cache
    )
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    previous_verbosity = hf_logging.get_verbosity()
    # The load report lists the unused LM head of causal checkpoints; it is expected here.
    hf_logging.set_verbosity_error()
    torch_dtype = getattr(torch, dtype)
    common = {"local_files_only": True, "trust_remote_code": trust_remote_code}
    path = source.path
    if source.gguf is not None:
        path = converted_folder(source.gguf, dtype, source.model_cache or model_cache_dir())
    try:
        config = AutoConfig.from_pretrained(path, **common)
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True, **common)
        if source.is_random:
            torch.manual_seed(source.seed)
            model = AutoModel.from_config(config, dtype=torch_dtype, trust_remote_code=trust_remote_code)
        else:
            model, loading = AutoModel.from_pretrained(
                path, config=config, dtype=torch_dtype, use_safetensors=not source.uses_pickle,
                device_map=device_map, output_loading_info=True, **common,
            )
            refuse_missing_weights(source.spec, loading["missing_keys"])
    except ValueError as error:
        message = str(error).splitlines()[0]
        if "trust_remote_code" in str(error) or "contains custom code" in str(error):
            raise ModelLoadError(
                f"{source.spec!r} needs code shipped with the model; pass --trust-remote-code only if you trust it"
            ) from None
        raise ModelLoadError(f"cannot load {source.spec!r}: {message}") from None
    except (OSError, KeyError, RuntimeError) as error:
        raise ModelLoadError(f"cannot load {source.spec!r}: {str(error).splitlines()[0]}") from None
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


def describe_environment() -> dict:
    """Library versions that go into a run manifest."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in ("magdash", "torch", "transformers", "duckdb", "numpy", "scipy", "streamlit"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            continue
    versions["python"] = sys.version.split()[0]
    return versions
