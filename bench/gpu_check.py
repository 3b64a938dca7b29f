"""The GPU check (issue 33): magdash's CUDA path proven, timed and tabled in one command.

magdash's users extract 7-8B models on GPU servers; this script runs every part of that path on
the device it is given and prints one table last (every number also goes to ``--out`` as JSON,
rewritten after each section, so a run cut short still leaves what it measured):

* **correctness**: tiny random-weight Llama, Gemma 3 and BERT-like models, built on the spot
  (config, safetensors and a word-level tokenizer in a temporary folder), extracted with
  :func:`magdash.extraction.number_vector_batches` at the last and mean token positions:
  float32 on the device equals the CPU's (relative error ``||dev - cpu||_F / ||cpu||_F`` per
  layer under 1e-4 at every layer); float16 and bfloat16 on the device within
  :data:`TOLERANCES` of the CPU's float32; one batch of all 130 sentences (right and left
  padding) equals one sentence at a time; ``device_map="auto"`` equals the plain load;
* **scale**: a random-weight model of Llama-3-8B's configuration (32 blocks, d = 4096,
  7.5 billion parameters, about 15 GB in bfloat16), initialised on the device itself (no
  weights written or read), with magdash's ``@random`` identity: ``extract`` of the paper's
  130 sentences and of a 1,000 x 20 set into a fresh store, beside the storage-free floor (the
  same batched passes, :func:`~magdash.extraction.number_vector_batches`, vectors kept in memory):
  extract / floor (target at most 1.1), sentences per second, the time the extraction waited for
  the store (``ExtractionResult.store_seconds`` plus opening the store), peak device memory, and
  the achieved fraction of the card's bf16 rate (2 x non-embedding parameters x tokens computed,
  padding included, over the seconds, against :data:`ACHIEVABLE_BF16` measured on this
  workplace's H200 and the datasheet's :data:`PEAK_BF16`); the vectors read back from the store
  equal the floor's;
* **contention**: the floor's passes at the largest batch size alone, then beside threads
  repeating one part of a shard write on a write batch of vectors (whole writes, norms and flags,
  Parquet and fsync, a plain copy, a copy into one reused array): which part slows the passes that an
  extraction runs beside its writes;
* **out of memory**: one batch of the whole out-of-memory set on a card limited to what the
  model holds plus ``--oom-headroom-mib`` (``torch.cuda.set_per_process_memory_fraction``: a
  real ``torch.OutOfMemoryError`` from the CUDA allocator, as on a smaller card). magdash handles
  it as it handles the CPU's limits: the extraction stops with one message naming
  ``batch_size=`` (a :class:`~magdash.errors.MagdashError`), everything stored so far is kept,
  the memory of the failed pass is freed with the error; the same extraction run again with the
  default batch size resumes and completes, equal to the floor. On the CPU the card is simulated
  (a forward pass raising ``torch.OutOfMemoryError`` for batches over 32 sentences);
* **spectra**: the depth diagnostics (:func:`magdash.depth_statistics.accumulate.view_sample`, then
  :func:`magdash.depth_statistics.diagnostics.analyze_samples`) of the scale section's store, every layer
  (34 x 4096: embeddings, 32 blocks, post-norm) from ``--spectra-vectors`` of its vectors, the
  covariance eigenvalues computed on the GPU (``torch.linalg.eigvalsh``, magdash's path for
  d >= 1024) and, from the same covariance, on the CPU (the same function with CUDA hidden):
  eigenvalues, spike counts, sigma^2 and gamma_c compared.

Correctness rows fail the run (exit status 1); speed targets are reported as met or missed.

**On the GPU machine** (Python 3.12 with PyTorch, transformers, accelerate, tokenizers,
safetensors, numpy, pandas, pyarrow and scipy; no network; magdash not installed, so this script
puts the repository root on ``sys.path``): the extraction and phase path imports two packages
more, :data:`WHEELS`: duckdb (the store) and diptest (the dip test of the Omega distributions),
and none of gguf, altair, streamlit, vl-convert or wordfreq (a row checks it; the JSON's
``environment.imported`` lists every third-party module the run imported). Prepare their wheels
on a connected machine, from the repository root::

    bash bench/gpu_wheels.sh        # -> bench/wheels/ (ignored by git), 25 MB

then give the device tool ``carry: ["bench/wheels"]``, ``timeout_s: 420`` and::

    set -o pipefail; python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site bench/wheels/*.whl && PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1 python3 bench/gpu_check.py --device cuda --out $OUT/gpu_check.json 2>&1 | tee $OUT/gpu_check.log

On an NVIDIA H200 (2026-12-04) the whole check took 291 s; ``--budget-s`` (280 by default) skips
the steps not started once it has passed, so a second try fits the 15 minutes. Sizes are options;
``--skip SECTION`` leaves a section out. What those runs measured is in docs/benchmarks.md.

**On the CPU**: ``python bench/gpu_check.py --device cpu --small`` runs every section with small
sizes (a 4-block d = 256 float32 stand-in for the 8B model, 100 x 4 sentences; every third of the
paper's sentences one at a time): the device comparisons become CPU-versus-CPU, the float16 and
bfloat16 checks and the out-of-memory path stay. 89 s (54 s of CPU time) on the shared 2-core
machine, mostly importing transformers and the half-precision passes, which are slow on a CPU;
``tests/test_gpu_check.py`` runs it. Timings are only printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # magdash is not pip-installed on the GPU machine
# Nothing here may reach for the Hugging Face hub: the GPU machine has no network to wait for.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

import magdash.extraction as extraction  # noqa: E402
from magdash.errors import MagdashError  # noqa: E402
from magdash.extraction import (  # noqa: E402
    NumberVectors,
    drop_tokens_after_number,
    extract,
    locate_numbers,
    number_vector_batches,
)
from magdash.sources import LoadedModel, load_model, load_tokenizer, resolve_model  # noqa: E402
from magdash.sources.loading import find_blocks, find_final_norm, is_causal_lm  # noqa: E402
from magdash.stimuli import PAPER_CARRIERS, StimulusItem, StimulusSet, paper_stimuli  # noqa: E402
from magdash.store import Store  # noqa: E402

NORMS_AGREE = 1e-12
"""Float64 norms of the same float32 vectors summed in another order (device and host)."""

ACHIEVABLE_BF16 = 790e12
"""bf16 FLOP/s of an 8192^3 matrix product through PyTorch, measured on this workplace's H200."""
PEAK_BF16 = 990e12
"""The H200 SXM datasheet's dense bf16 rate."""

TOLERANCES = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}
"""Largest relative error ``||x - ref||_F / ||ref||_F`` of any layer's vectors against the CPU's
float32, per dtype the model runs in. float16 keeps 11 significant bits and bfloat16 8, each
rounding about 2^-11 and 2^-8 relative, compounded over the blocks; the tiny models measured
at most 1.8e-3 (float16) and 1.4e-2 (bfloat16) on the CPU."""
SAME_BATCHES = 1e-3
"""Vectors read back from a store against the floor's passes over the same batches: equal but
for a non-deterministic kernel (the bfloat16 rounding of one differing sum)."""
HELD_AFTER_OOM_BYTES = 16 << 20
"""Device memory the failed pass may still hold once its error is handled (none expected)."""
SIMULATED_CARD_SENTENCES = 32

LLAMA3_8B = dict(
    vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
    num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192,
    rms_norm_eps=1e-5, tie_word_embeddings=False, hidden_act="silu",
)
"""Meta-Llama-3-8B's config.json, as far as the forward pass's shapes and cost go."""
SMALL_LLAMA = dict(
    vocab_size=2048, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
    rms_norm_eps=1e-5, tie_word_embeddings=False, hidden_act="silu",
)

MORE_CARRIERS = (
    "She counted {n} birds.", "The box holds {n} coins.", "We saw {n} cars today.", "He paid {n} dollars.",
    "About {n} people came.", "The list has {n} names.", "It took {n} days.", "They planted {n} trees.",
    "The shelf holds {n} books.", "Nearly {n} votes were cast.", "The recipe needs {n} grams.",
    "The train carried {n} passengers.", "A total of {n} points was scored.", "The file has {n} lines.",
    "The farm keeps {n} sheep.",
)
"""With the paper's five, the 20 carriers of the large set."""
CARRIERS = PAPER_CARRIERS + MORE_CARRIERS
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]
SECTIONS = ("correctness", "scale", "contention", "oom", "spectra")
WHEELS = ("duckdb", "diptest")
"""What the extraction and phase path imports that the GPU machine lacks: the store's database and
the dip test of the Omega distributions (:func:`magdash.depth_statistics.omega.dip_test`)."""
NOT_ON_THE_GPU_MACHINE = ("gguf", "altair", "streamlit", "vl_convert", "wordfreq")
"""magdash's other dependencies the GPU machine lacks, which this path must not import."""


# -- the table --------------------------------------------------------------------------------------


@dataclass
class Row:
    section: str
    check: str
    measured: str
    target: str = ""
    passed: bool | None = None  # None: a number to read, not a check

    @property
    def verdict(self) -> str:
        return {True: "ok", False: "FAIL", None: ""}[self.passed]


@dataclass
class Report:
    """Every row and number of the run, written to ``path`` after each section."""

    path: Path
    started: float = field(default_factory=time.perf_counter)
    rows: list[Row] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    def add(self, section: str, check: str, measured: str, target: str = "", passed: bool | None = None) -> None:
        self.rows.append(Row(section, check, measured, target, passed))

    def check(self, section: str, check: str, error: float, tolerance: float) -> None:
        """A relative-error row; NaN fails."""
        self.add(section, check, f"{error:.2e}", f"< {tolerance:.0e}", bool(error < tolerance))

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    @property
    def passed(self) -> bool:
        return all(row.passed is not False for row in self.rows)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "passed": self.passed, "elapsed_s": round(self.elapsed, 2),
            "rows": [dataclasses.asdict(row) for row in self.rows], **self.details,
        }
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(payload, indent=1, default=_jsonable) + "\n", encoding="utf-8")
        partial.replace(self.path)

    def table(self) -> str:
        headers = ("section", "check", "measured", "target", "")
        cells = [headers] + [(r.section, r.check, r.measured, r.target, r.verdict) for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                 for row in cells]
        lines.insert(1, "  ".join("-" * width for width in widths))
        failed = sum(row.passed is False for row in self.rows)
        lines.append(f"{len(self.rows)} rows, {failed} failed, {self.elapsed:.0f} s in all")
        return "\n".join(lines)


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


STARTED = time.perf_counter()


def log(message: str) -> None:
    print(f"[{time.perf_counter() - STARTED:5.0f} s] {message}", flush=True)


# -- models built on the spot ---------------------------------------------------------------------


def carrier_words(carriers: Sequence[str]) -> list[str]:
    words = set()
    for carrier in carriers:
        words.update(carrier.replace("{n}", " ").replace(".", " . ").split())
    return sorted(words | {".", ","})


def build_tokenizer(folder: Path, carriers: Sequence[str] = CARRIERS) -> None:
    """A word-level fast tokenizer with offsets that adds ``<s>`` before every text and splits
    numbers into chunks of up to three digits, as Llama-3's does (1000 is "100" + "0")."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    digits = [str(i) for i in range(1000)] + [f"{i:02d}" for i in range(100)] + [f"{i:03d}" for i in range(100)]
    vocab = {token: index for index, token in enumerate(dict.fromkeys(SPECIAL_TOKENS + carrier_words(carriers) + digits))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(r"\d{1,3}"), behavior="isolated"),
        pre_tokenizers.Split(Regex(r"[.,]"), behavior="isolated"),
    ])
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", vocab["<s>"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>")
    fast.save_pretrained(folder)


def build_tiny_model(folder: Path, family: str) -> Path:
    """A 3-block d = 32 random-weight model of ``family`` (llama, gemma, bert) saved as safetensors."""
    import torch
    from transformers import (
        AutoTokenizer,
        BertConfig,
        BertModel,
        Gemma3ForCausalLM,
        Gemma3TextConfig,
        LlamaConfig,
        LlamaForCausalLM,
    )
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    folder.mkdir(parents=True, exist_ok=True)
    build_tokenizer(folder)
    vocab = len(AutoTokenizer.from_pretrained(folder))
    shape = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                 max_position_embeddings=128, pad_token_id=0)
    torch.manual_seed(1234)
    if family == "llama":
        model = LlamaForCausalLM(LlamaConfig(**shape, num_key_value_heads=2, bos_token_id=1, eos_token_id=2))
    elif family == "gemma":
        # A sliding window shorter than the sentences, on two of the three blocks, as Gemma 3 has.
        model = Gemma3ForCausalLM(Gemma3TextConfig(
            **shape, num_key_value_heads=2, head_dim=8, bos_token_id=1, eos_token_id=2, sliding_window=3,
            layer_types=["sliding_attention", "full_attention", "sliding_attention"]))
    elif family == "bert":
        model = BertModel(BertConfig(**shape))
    else:
        raise ValueError(f"unknown family {family!r}")
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith(("norm.weight", "LayerNorm.weight")):
                parameter.uniform_(0.5, 2.0)  # norm gains that are not all 1, as a trained model's
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def build_random_model(folder: Path, shape: dict, device: str, dtype: str, seed: int = 0) -> LoadedModel:
    """magdash's ``FOLDER@random`` model of the architecture ``shape`` describes, its weights drawn on
    ``device`` itself: the folder holds only config.json and the tokenizer (an ``@random`` spec needs
    no weights), and 15 GB of bfloat16 are never built on the CPU and copied over, as
    :func:`magdash.sources.load_model` would (its seeded weights must not depend on the device)."""
    import torch
    from transformers import AutoConfig, AutoModel, LlamaConfig

    folder.mkdir(parents=True, exist_ok=True)
    build_tokenizer(folder)
    LlamaConfig(**shape, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                architectures=["LlamaForCausalLM"]).save_pretrained(folder)
    source = resolve_model(f"{folder}@random:{seed}")
    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    tokenizer = load_tokenizer(source)
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModel.from_config(config, dtype=getattr(torch, dtype))
    model.eval()
    return LoadedModel(
        source=source, model=model, tokenizer=tokenizer, dtype=dtype, device=device,
        blocks=find_blocks(model, config.num_hidden_layers), final_norm=find_final_norm(model),
        n_blocks=config.num_hidden_layers, hidden_size=config.hidden_size,
        max_length=config.max_position_embeddings, is_causal=is_causal_lm(config),
    )


# -- vectors, errors, timing ----------------------------------------------------------------------


def floor_pass(loaded: LoadedModel, items: Sequence[StimulusItem], *, position: str = "last",
               batch_size: int = 32, padding_side: str = "right") -> list[NumberVectors]:
    """The storage-free floor: the batches an extraction of ``items`` runs
    (:func:`~magdash.extraction.number_vector_batches`), their vectors kept in memory as they come."""
    return list(number_vector_batches(loaded, items, position=position, batch_size=batch_size,
                                      padding_side=padding_side))


def in_item_order(items: Sequence[StimulusItem], batches: Sequence[NumberVectors]) -> np.ndarray:
    """(items, layers, d) float32 vectors of :func:`floor_pass`'s batches, in ``items``' order."""
    row_of = {item.key: row for row, item in enumerate(items)}
    vectors = np.empty((len(items), *batches[0].vectors.shape[1:]), dtype=np.float32)
    for batch in batches:
        vectors[[row_of[key] for key in batch.keys]] = batch.vectors
    return vectors


def vectors_of(loaded: LoadedModel, items: Sequence[StimulusItem], **options) -> np.ndarray:
    """(items, layers, d) float32 vectors in ``items``' order, batched as an extraction batches them."""
    return in_item_order(items, floor_pass(loaded, items, **options))


def layer_errors(vectors: np.ndarray, reference: np.ndarray) -> list[float]:
    """``||x_l - ref_l||_F / ||ref_l||_F`` of every layer l of two (items, layers, d) arrays; NaN
    where either holds a non-finite number."""
    errors = []
    for layer in range(reference.shape[1]):
        x = vectors[:, layer].astype(np.float64)
        ref = reference[:, layer].astype(np.float64)
        if not (np.isfinite(x).all() and np.isfinite(ref).all()):
            errors.append(math.nan)
            continue
        errors.append(float(np.linalg.norm(x - ref) / max(np.linalg.norm(ref), 1e-30)))
    return errors


def worst(errors: Sequence[float]) -> float:
    return math.nan if any(math.isnan(e) for e in errors) else max(errors)


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(device: str, function: Callable, *args, **kwargs):
    synchronize(device)
    started = time.perf_counter()
    result = function(*args, **kwargs)
    synchronize(device)
    return result, time.perf_counter() - started


def reset_peak(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()


def peak_gib(device: str) -> float:
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else math.nan


def release(device: str) -> None:
    import torch

    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


class TimeSpent:
    """Seconds spent inside chosen functions, summed over every thread that calls them (an
    extraction's forward passes run on its thread, its shard writes on the writer threads)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    def wrap(self, label: str, function: Callable) -> Callable:
        def timed_call(*arguments, **keywords):
            started = time.perf_counter()
            try:
                return function(*arguments, **keywords)
            finally:
                with self._lock:
                    self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - started

        return timed_call


@contextmanager
def extraction_timers() -> Iterator[TimeSpent]:
    """Where an extraction's time goes: its forward passes (the floor's work, on the calling
    thread) and its shard writes (on the writer threads), the writes split into their parts."""
    import magdash.extraction as extraction
    from magdash.store import shards
    from magdash.store.database import Store as StoreClass

    spent = TimeSpent()
    targets = [
        ("forward passes", extraction, "_forward_with_norms"),
        ("shard writes", StoreClass, "write_vectors"),
        ("norms and flags", shards, "vector_norms"),
        ("Parquet", shards.pq, "write_table"),
        ("fsync", shards.os, "fsync"),
        ("registration", StoreClass, "_register_shards"),
    ]
    with contextlib.ExitStack() as patches:
        for label, owner, attribute in targets:
            patches.enter_context(mock.patch.object(owner, attribute, spent.wrap(label, getattr(owner, attribute))))
        yield spent


def time_spent_text(spent: TimeSpent, writes_in_flight: int) -> str:
    seconds = spent.seconds
    parts = ", ".join(f"{label} {seconds.get(label, 0.0):.1f}" for label in ("Parquet", "fsync", "norms and flags",
                                                                               "registration"))
    return (f"forward {seconds.get('forward passes', 0.0):.1f} s; writes {seconds.get('shard writes', 0.0):.1f} s "
            f"on {writes_in_flight} thread(s) ({parts})")


@contextmanager
def fresh_store(work: Path, name: str, keep: bool = False) -> Iterator[tuple[Store, float]]:
    """A new store in its own folder (deleted afterwards unless ``keep``), and the seconds opening took."""
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=work))
    started = time.perf_counter()
    store = Store(folder / f"{name}.duckdb")
    opened = time.perf_counter() - started
    try:
        yield store, opened
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def padded_tokens(loaded: LoadedModel, items: Sequence[StimulusItem], batch_size: int) -> tuple[int, int]:
    """(real tokens, tokens computed with padding) of the batches an extraction of ``items`` runs."""
    token_ids, number_tokens = locate_numbers(loaded, items, "last")
    if loaded.is_causal:
        token_ids = drop_tokens_after_number(token_ids, number_tokens)
    lengths = np.sort([len(ids) for ids in token_ids], kind="stable")
    padded = sum(int(lengths[start:start + batch_size].max()) * len(lengths[start:start + batch_size])
                 for start in range(0, len(lengths), batch_size))
    return int(lengths.sum()), padded


def non_embedding_parameters(loaded: LoadedModel) -> int:
    embeddings = loaded.model.get_input_embeddings()
    embedded = {id(p) for p in embeddings.parameters()} if embeddings is not None else set()
    return sum(p.numel() for p in loaded.model.parameters() if id(p) not in embedded)


# -- correctness ------------------------------------------------------------------------------------


def check_correctness(report: Report, args, work: Path) -> None:
    device = args.device
    items = paper_stimuli().items
    details = report.details.setdefault("correctness", {})
    where = f"{device} vs cpu" if device != "cpu" else "cpu vs cpu"
    for family in ("llama", "gemma", "bert"):
        log(f"correctness: {family}")
        folder = build_tiny_model(work / f"tiny-{family}", family)
        found = details.setdefault(family, {})
        cpu = load_model(str(folder), device="cpu")
        reference = {position: vectors_of(cpu, items, position=position) for position in ("last", "mean")}
        del cpu
        on_device = load_model(str(folder), device=device)
        for dtype in ("float32", "float16", "bfloat16"):
            loaded = on_device if dtype == "float32" else load_model(str(folder), device=device, dtype=dtype)
            errors = {position: layer_errors(vectors_of(loaded, items, position=position), reference[position])
                      for position in reference}
            found[f"{dtype} {where}"] = errors
            report.check("correctness", f"{family} {dtype} {where}, every layer, last+mean",
                         worst(errors["last"] + errors["mean"]), TOLERANCES[dtype])
        singles = items[::args.single_every]  # every carrier, with 3 (coprime to the paper's 5)
        one_at_a_time = vectors_of(on_device, singles, batch_size=1)
        rows = [items.index(item) for item in singles]
        for side in ("right", "left"):
            batched = vectors_of(on_device, items, batch_size=len(items), padding_side=side)[rows]
            errors = layer_errors(batched, one_at_a_time)
            found[f"batch of {len(items)} ({side} padding) vs one at a time ({len(singles)})"] = errors
            report.check("correctness", f"{family} batch of {len(items)}, {side} padding = one at a time"
                         + (f" ({len(singles)})" if len(singles) < len(items) else ""),
                         worst(errors), TOLERANCES["float32"])
        mapped = load_model(str(folder), device_map="auto")
        errors = layer_errors(vectors_of(mapped, items), vectors_of(on_device, items))
        found[f"device_map=auto ({mapped.device}) vs plain load"] = errors
        report.check("correctness", f"{family} device_map=auto (on {mapped.device}) = plain load",
                      worst(errors), TOLERANCES["float32"])
        del on_device, mapped
        release(device)


# -- the paper's scale ------------------------------------------------------------------------------


@dataclass
class ScaleModel:
    loaded: LoadedModel
    flops_per_token: float
    kept_store: tuple[Store, str, str] | None = None  # (store, model name, set name) for the spectra


def large_set(args) -> StimulusSet:
    return StimulusSet(f"gpu-check-{args.scale_magnitudes}x{args.scale_carriers}", CARRIERS[:args.scale_carriers],
                       tuple(range(1, args.scale_magnitudes + 1)))


def ratio_row(report: Report, check: str, extract_s: float, floor_s: float) -> None:
    ratio = extract_s / floor_s
    report.add("scale", check, f"{ratio:.3f} ({extract_s:.2f} / {floor_s:.2f} s)",
               "<= 1.1 " + ("met" if ratio <= 1.1 else "MISSED"))


def spread(vectors: np.ndarray) -> float:
    """The last layer's SD across sentences, averaged over dimensions; NaN if any vector is not finite.
    Random weights that were never initialised (zeros, or whatever the memory held) would pass
    every comparison: their vectors must differ between sentences."""
    last = vectors[:, -1].astype(np.float64)
    return float(np.std(last, axis=0).mean()) if np.isfinite(last).all() else math.nan


def spread_row(report: Report, check: str, value: float) -> None:
    report.add("scale", check, f"mean SD across sentences {value:.3g}", "finite, > 0", bool(value > 0))


def build_scale_model(report: Report, args, work: Path) -> ScaleModel:
    import torch

    device, dtype = args.device, args.scale_dtype
    shape = args.scale_shape
    details = report.details.setdefault("scale", {"shape": shape, "dtype": dtype})
    log(f"scale: building a random {shape['num_hidden_layers']}-block d={shape['hidden_size']} model on {device}")
    reset_peak(device)
    loaded, seconds = timed(device, build_random_model, work / "scale-model", shape, device, dtype)
    parameters = sum(p.numel() for p in loaded.model.parameters())
    flops_per_token = 2.0 * non_embedding_parameters(loaded)
    weights_gib = (torch.cuda.memory_allocated() / 2**30) if device.startswith("cuda") else math.nan
    details["model"] = {"parameters": parameters, "flops_per_token": flops_per_token, "build_s": seconds,
                        "weights_gib": weights_gib, "layers": len(loaded.layer_labels)}
    report.add("scale", f"{shape['num_hidden_layers']}-block d={shape['hidden_size']} {dtype} @random model on {device}",
               f"{parameters / 1e6:,.0f} M parameters, built in {seconds:.1f} s"
               + (f", {weights_gib:.1f} GiB" if not math.isnan(weights_gib) else ""))
    return ScaleModel(loaded, flops_per_token)


def check_scale(report: Report, args, work: Path, scale: ScaleModel, clock: Callable[[], bool]) -> None:
    guarded(report, "scale", "paper set", paper_runs, report, args, work, scale)
    report.save()
    stimuli = large_set(args)
    sizes = [int(size) for size in args.batch_sizes.split(",")]
    report.details["scale"]["large"] = {}
    for index, batch_size in enumerate(sizes):
        if clock():
            report.add("scale", f"{len(stimuli.items):,} sentences, batch {batch_size}", "skipped: over --budget-s")
            continue
        last = index == len(sizes) - 1
        kept = guarded(report, "scale", f"batch {batch_size}", large_run, report, args, work, scale, stimuli,
                       batch_size, last)
        scale.kept_store = kept or scale.kept_store
        report.save()


def paper_runs(report: Report, args, work: Path, scale: ScaleModel) -> None:
    device, loaded, details = args.device, scale.loaded, report.details["scale"]
    paper = paper_stimuli()
    floor_pass(loaded, paper.items, batch_size=args.batch_size)  # warm-up: first passes allocate, pick kernels
    runs = []
    for repeat in range(args.paper_repeats):
        batches, floor_s = timed(device, floor_pass, loaded, paper.items, batch_size=args.batch_size)
        floor = in_item_order(paper.items, batches)
        with fresh_store(work, "paper") as (store, opened):
            result, extract_s = timed(device, extract, loaded, paper, store, batch_size=args.batch_size)
            extract_s += opened
            stored = stored_vectors(store, result.name, paper)
        runs.append({"floor_s": floor_s, "extract_s": extract_s, "store_wait_s": opened + result.store_seconds,
                     "stored_vs_floor": layer_errors(stored, floor), "device_norms_vs_host": norm_errors(batches)})
        log(f"scale: paper repeat {repeat + 1}: floor {floor_s:.2f} s, extract {extract_s:.2f} s")
    details["paper"] = runs
    floor_s = statistics.median(run["floor_s"] for run in runs)
    extract_s = statistics.median(run["extract_s"] for run in runs)
    label = f"paper 130, batch {args.batch_size}"
    ratio_row(report, f"{label}: extract / floor, median of {len(runs)}", extract_s, floor_s)
    report.add("scale", f"{label}: sentences/s extract (floor)",
               f"{len(paper.items) / extract_s:,.0f} ({len(paper.items) / floor_s:,.0f})")
    report.add("scale", f"{label}: waited for the store, median",
               f"{statistics.median(run['store_wait_s'] for run in runs):.3f} s")
    report.check("scale", f"{label}: stored vectors = floor's, every layer",
                 worst([error for run in runs for error in run["stored_vs_floor"]]), SAME_BATCHES)
    spread_row(report, f"{label}: vectors finite and distinct", spread(floor))
    device_norms = [error for run in runs for error in run["device_norms_vs_host"]]
    if device_norms:
        report.check("scale", f"{label}: norms on the device = the host's (relative)", worst(device_norms), NORMS_AGREE)


def norm_errors(batches: Sequence[NumberVectors]) -> list[float]:
    """Each batch's largest relative difference between the norms computed on the device (the
    store keeps them) and the host's float64 norms of the same vectors; none on the CPU."""
    from magdash.norm_outliers import vector_norms

    return [float(np.max(np.abs(batch.norms - vector_norms(batch.vectors)) / vector_norms(batch.vectors)))
            for batch in batches if batch.norms is not None]


def stored_vectors(store: Store, name: str, stimuli: StimulusSet, layers: Sequence[int] | None = None) -> np.ndarray:
    """(items, layers, d) vectors read back from ``store``, in ``stimuli.items``' order (magnitude-major,
    as the store's grid)."""
    read = [data.vectors.reshape(len(stimuli.items), -1) for data in store.read_layers(name, stimuli.name, layers)]
    return np.stack(read, axis=1)


def large_run(report: Report, args, work: Path, scale: ScaleModel, stimuli: StimulusSet, batch_size: int,
              keep_store: bool) -> tuple[Store, str, str] | None:
    device, loaded = args.device, scale.loaded
    items = stimuli.items
    label = f"{len(stimuli.magnitudes):,} x {len(stimuli.carriers)}, batch {batch_size}"
    log(f"scale: {label}")
    real, padded = padded_tokens(loaded, items, batch_size)
    # Warm-up over the whole set: the first passes pick kernels, and the floor keeps every batch's
    # pinned host array, which the first time costs a page-locking allocation each; an extraction
    # allocates the few it keeps in flight once and then reuses them from torch's cache.
    floor_pass(loaded, items, batch_size=batch_size)
    reset_peak(device)
    batches, floor_s = timed(device, floor_pass, loaded, items, batch_size=batch_size)
    floor_peak = peak_gib(device)
    floor = in_item_order(items, batches)
    del batches
    reset_peak(device)
    kept = None
    n_layers = len(loaded.layer_labels)
    compared = sorted({0, n_layers // 2, n_layers - 1})
    with fresh_store(work, "large", keep=keep_store) as (store, opened), extraction_timers() as spent:
        result, extract_s = timed(device, extract, loaded, stimuli, store, batch_size=batch_size)
        extract_s += opened
        extract_peak = peak_gib(device)
        waited = opened + result.store_seconds
        errors = layer_errors(stored_vectors(store, result.name, stimuli, compared), floor[:, compared])
        if keep_store:
            kept = (store, result.name, stimuli.name)
    vectors_gib, floor_spread = floor.nbytes / 2**30, spread(floor)
    del floor
    release(device)
    one_writer = None
    if keep_store and args.compare_one_writer and extraction.WRITES_IN_FLIGHT > 1:
        # The same extraction as the release before this check wrote it: one shard at a time.
        with fresh_store(work, "one-writer") as (other, other_opened), extraction_timers() as one_spent, \
                mock.patch.object(extraction, "WRITES_IN_FLIGHT", 1):
            _, one_writer_s = timed(device, extract, loaded, stimuli, other, batch_size=batch_size)
            one_writer = (one_writer_s + other_opened, one_spent)
        release(device)
    flops = scale.flops_per_token * padded
    report.details["scale"]["large"][str(batch_size)] = {
        "sentences": len(items), "real_tokens": real, "padded_tokens": padded, "floor_s": floor_s,
        "extract_s": extract_s, "store_wait_s": waited, "vectors_gib": vectors_gib, "floor_peak_gib": floor_peak,
        "extract_peak_gib": extract_peak, "flops": flops, "stored_vs_floor": dict(zip(compared, errors, strict=True)),
        "floor_tflops": flops / floor_s / 1e12, "extract_tflops": flops / extract_s / 1e12,
        "writes_in_flight": extraction.WRITES_IN_FLIGHT, "time_spent_s": spent.seconds,
    }
    ratio_row(report, f"{label}: extract / floor", extract_s, floor_s)
    report.add("scale", f"{label}: where extract's time goes", time_spent_text(spent, extraction.WRITES_IN_FLIGHT))
    if one_writer is not None:
        one_writer_s, one_spent = one_writer
        report.details["scale"]["large"][str(batch_size)]["one_writer"] = {
            "extract_s": one_writer_s, "time_spent_s": one_spent.seconds}
        ratio_row(report, f"{label}: extract / floor with one write in flight (before)", one_writer_s, floor_s)
        report.add("scale", f"{label}: where that extract's time goes", time_spent_text(one_spent, 1))
    report.add("scale", f"{label}: sentences/s extract (floor)",
               f"{len(items) / extract_s:,.0f} ({len(items) / floor_s:,.0f})")
    report.add("scale", f"{label}: waited for the store",
               f"{waited:.2f} s, {waited / extract_s:.1%} of extract; {vectors_gib:.1f} GiB of vectors")
    if device.startswith("cuda"):
        report.add("scale", f"{label}: peak GPU memory, floor / extract", f"{floor_peak:.1f} / {extract_peak:.1f} GiB")
        rate = flops / extract_s
        report.add("scale", f"{label}: bf16 rate of extract (floor)",
                   f"{rate / 1e12:.0f} TFLOP/s, {rate / ACHIEVABLE_BF16:.1%} of 790, {rate / PEAK_BF16:.1%} of 990 "
                   f"({flops / floor_s / ACHIEVABLE_BF16:.1%} of 790)")
    report.check("scale", f"{label}: stored vectors = floor's, layers {', '.join(map(str, compared))}",
                 worst(errors), SAME_BATCHES)
    spread_row(report, f"{label}: vectors finite and distinct", floor_spread)
    return kept


# -- what slows the forward passes beside the writes -----------------------------------------------


@contextmanager
def repeated_in_background(part: Callable[[], object] | None, threads: int = 1) -> Iterator[None]:
    """``part`` run over and over on ``threads`` threads for the block (nothing when None)."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            part()

    workers = [threading.Thread(target=loop, daemon=True) for _ in range(threads if part is not None else 0)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        stop.set()
        for worker in workers:
            worker.join()


def check_contention(report: Report, args, work: Path, scale: ScaleModel) -> None:
    """The floor's passes at the largest batch size alone, then beside threads repeating one part of
    a shard write on one write batch of vectors: which part slows the forward passes of an
    extraction (its writes run beside them)."""
    from magdash.norm_outliers import vector_norms
    from magdash.store import shards

    device, loaded = args.device, scale.loaded
    batch_size = max(int(size) for size in args.batch_sizes.split(","))
    items = large_set(args).items[:args.contention_sentences]
    n_layers, dim = len(loaded.layer_labels), loaded.hidden_size
    rows = shards.items_per_batch(n_layers, dim)
    # Layer-major underneath, as an extraction hands its batches to the writers.
    batch = np.random.default_rng(0).standard_normal((n_layers, rows, dim), dtype=np.float32).transpose(1, 0, 2)
    keys = [f"item-{row}" for row in range(rows)]
    folder = work / "contention"
    table = shards._shard_table("contention", keys, [batch])
    reused = np.empty_like(batch)

    def whole_write() -> None:
        with shards.new_shard(folder, "contention", keys, batch):
            pass  # never registered: deleted on the way out

    def parquet_and_fsync() -> None:
        path = folder / f"{threading.get_ident()}.parquet"
        shards.pq.write_table(table, str(path), compression="none", use_dictionary=False, write_statistics=False,
                              row_group_size=rows)
        with open(path, "rb") as handle:
            os.fsync(handle.fileno())
        path.unlink()

    folder.mkdir(parents=True, exist_ok=True)
    in_flight = extraction.WRITES_IN_FLIGHT
    parts: list[tuple[str, Callable[[], object] | None, int]] = [
        ("nothing", None, 1),
        *([(f"whole shard writes, {in_flight} threads", whole_write, in_flight)] if in_flight > 1 else []),
        ("whole shard writes, 1 thread", whole_write, 1),
        ("norms and flags", lambda: vector_norms(batch), 1),
        ("Parquet and fsync", parquet_and_fsync, 1),
        ("copies of the batch", batch.copy, 1),
        # A copy into memory already mapped: no fresh pages to fault in and no unmapping (whose TLB
        # shootdowns interrupt every core the process runs on), so it tells traffic from allocation.
        ("copies into one reused array", lambda: np.copyto(reused, batch), 1),
    ]
    label = f"floor of {len(items):,} at batch {batch_size}"
    log(f"contention: {label}, {len(parts)} neighbours, a {batch.nbytes / 2**20:.0f} MB write batch")
    floor_pass(loaded, items[:2 * batch_size], batch_size=batch_size)  # warm-up
    found = report.details.setdefault("contention", {"sentences": len(items), "batch_size": batch_size,
                                                     "write_batch_mb": batch.nbytes / 2**20, "seconds": {}})
    alone = math.nan
    for name, part, threads in parts:
        with repeated_in_background(part, threads):
            _, seconds = timed(device, floor_pass, loaded, items, batch_size=batch_size)
        found["seconds"][name] = seconds
        alone = seconds if part is None else alone
        report.add("contention", f"{label} beside {name}", f"{seconds:.2f} s, {seconds / alone:.2f}x alone")
        report.save()


# -- out of memory ---------------------------------------------------------------------------------


class SimulatedCard:
    """Wraps a loaded model so that a forward pass of more than ``capacity`` sentences raises the
    CUDA allocator's error, as a card too small for that batch does, after allocating a tensor
    (its "activations") whose life :attr:`activations` follows."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.activations: list[weakref.ref] = []

    def wrap(self, loaded: LoadedModel) -> LoadedModel:
        import torch

        card = self

        class SmallCard(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids=None, attention_mask=None, position_ids=None):
                if input_ids.shape[0] > card.capacity:
                    activations = torch.ones(input_ids.shape[0], 1 << 16)
                    card.activations.append(weakref.ref(activations))
                    raise torch.OutOfMemoryError(
                        f"CUDA out of memory (simulated: a batch of {input_ids.shape[0]} sentences on a card "
                        f"that holds {card.capacity})")
                return self.inner(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids)

            def get_input_embeddings(self):
                return self.inner.get_input_embeddings()

        return dataclasses.replace(loaded, model=SmallCard(loaded.model))

    def held(self) -> int:
        """How many failed passes' activations are still alive."""
        return sum(ref() is not None for ref in self.activations)


@contextmanager
def card_limited_to(device: str, headroom_bytes: int) -> Iterator[str]:
    """On CUDA, the caching allocator refuses to hold more than it holds now plus ``headroom_bytes``:
    a card that the model just fits. Yields a description of the limit."""
    import torch

    release(device)
    total = torch.cuda.get_device_properties(torch.device(device)).total_memory
    limit = torch.cuda.memory_reserved() + headroom_bytes
    torch.cuda.set_per_process_memory_fraction(limit / total)
    try:
        yield f"card limited to {limit / 2**30:.1f} of {total / 2**30:.0f} GiB"
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)


@contextmanager
def simulated_card(text: str) -> Iterator[str]:
    yield text


@contextmanager
def no_garbage_collection() -> Iterator[None]:
    """What a failed pass holds must go with its error, not wait for a collection that may never come."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def check_out_of_memory(report: Report, args, work: Path, scale: ScaleModel) -> None:
    import torch

    device, loaded = args.device, scale.loaded
    stimuli = StimulusSet(f"gpu-check-oom-{args.oom_magnitudes}x4", CARRIERS[:4], tuple(range(1, args.oom_magnitudes + 1)))
    items = stimuli.items
    log(f"oom: one batch of {len(items)} sentences")
    reference = vectors_of(loaded, items, batch_size=args.batch_size)
    details = report.details.setdefault("oom", {"sentences": len(items)})
    on_cuda = device.startswith("cuda")
    card = SimulatedCard(SIMULATED_CARD_SENTENCES)
    if on_cuda:
        limit, model = card_limited_to(device, args.oom_headroom_mib << 20), loaded
    else:
        limit = simulated_card(f"simulated card of {SIMULATED_CARD_SENTENCES} sentences a batch")
        model = card.wrap(loaded)
    with limit as described, fresh_store(work, "oom") as (store, _):
        details["card"] = described
        message, error_type = "", ""
        with no_garbage_collection():
            before = torch.cuda.memory_allocated() if on_cuda else 0
            started = time.perf_counter()
            try:
                extract(model, stimuli, store, batch_size=len(items))
            except MagdashError as error:
                message, error_type = str(error), type(error).__name__
            failed_after = time.perf_counter() - started
            held = torch.cuda.memory_allocated() - before if on_cuda else card.held()
        resumed, resume_s = timed(device, extract, model, stimuli, store, batch_size=args.batch_size)
        errors = layer_errors(stored_vectors(store, resumed.name, stimuli), reference)
    details.update(message=message, error_type=error_type, seconds_to_error=failed_after, held=held,
                   resumed={"already_stored": resumed.already_stored, "extracted": resumed.extracted,
                            "cancelled": resumed.cancelled, "seconds": resume_s}, stored_vs_floor=errors)
    report.add("oom", f"one batch of {len(items):,}, {described}",
               f"{error_type or 'no error'} after {failed_after:.1f} s: {message[:34]}...",
               "MagdashError naming batch_size=",
               bool(error_type == "MagdashError" and "out of memory" in message and "batch_size=" in message))
    if on_cuda:
        report.add("oom", "GPU memory the failed pass still holds (gc off)", f"{held / 2**20:.1f} MiB",
                   f"< {HELD_AFTER_OOM_BYTES >> 20} MiB", held < HELD_AFTER_OOM_BYTES)
    else:
        report.add("oom", "activations of the failed pass still alive (gc off)", f"{held}", "0", held == 0)
    report.add("oom", f"rerun with batch {args.batch_size} resumes and completes",
               f"{resumed.already_stored} kept, {resumed.extracted:,} extracted in {resume_s:.1f} s",
               f"0 kept, {len(items):,} extracted",
               bool(resumed.already_stored == 0 and resumed.extracted == len(items) and not resumed.cancelled))
    report.check("oom", "resumed vectors = floor's, every layer", worst(errors), SAME_BATCHES)


# -- the depth spectra ------------------------------------------------------------------------------


@contextmanager
def cuda_hidden() -> Iterator[None]:
    """magdash's spectrum code as it runs on a machine without CUDA."""
    with mock.patch("torch.cuda.is_available", return_value=False):
        yield


def check_spectra(report: Report, args, scale: ScaleModel) -> None:
    import magdash.depth_statistics.accumulate as accumulate
    from magdash.depth_statistics.accumulate import view_sample
    from magdash.depth_statistics.depth_params import DepthParams
    from magdash.depth_statistics.diagnostics import analyze_samples

    store, name, set_name = scale.kept_store
    record = store.model_record(name)
    device = args.device
    timings = {"read": 0.0, "accumulate": 0.0, "eigenvalues on the device": 0.0, "eigenvalues on the CPU": 0.0}
    cpu_eigenvalues: list[np.ndarray] = []

    def on_both(function):
        def run(*arguments):
            device_result, seconds = timed(device, function, *arguments)
            timings["eigenvalues on the device"] += seconds
            with cuda_hidden():
                started = time.perf_counter()
                cpu_eigenvalues.append(function(*arguments))
                timings["eigenvalues on the CPU"] += time.perf_counter() - started
            return device_result

        return run

    samples, distinct = [], {}
    log(f"spectra: {record.n_layers} layers x {record.hidden_size}")
    with mock.patch.object(accumulate, "covariance_eigenvalues", on_both(accumulate.covariance_eigenvalues)), \
            mock.patch.object(accumulate, "gram_eigenvalues", on_both(accumulate.gram_eigenvalues)):
        started = time.perf_counter()
        for data in store.read_layers(name, set_name):
            flat = data.vectors.reshape(-1, record.hidden_size)
            chosen = np.linspace(0, len(flat) - 1, min(args.spectra_vectors, len(flat))).round().astype(int)
            vectors = np.ascontiguousarray(flat[chosen])
            if data.layer == 0:  # the embeddings: one vector per number token, whatever the carrier
                distinct[0] = len(np.unique(vectors, axis=0))
            timings["read"] += time.perf_counter() - started
            started = time.perf_counter()
            samples.append(view_sample(vectors, data.layer, "keep", DepthParams().massive_ratio))
            timings["accumulate"] += time.perf_counter() - started
            started = time.perf_counter()
    timings["accumulate"] -= timings["eigenvalues on the device"] + timings["eigenvalues on the CPU"]
    cpu_samples = [dataclasses.replace(sample, eigenvalues=values)
                   for sample, values in zip(samples, cpu_eigenvalues, strict=True)]
    params = DepthParams(n_boot=args.spectra_boot)
    on_device = analyze_samples(samples, record.n_blocks, params, model=name)
    on_cpu = analyze_samples(cpu_samples, record.n_blocks, params, model=name)
    eigen_errors = [eigenvalue_error(gpu.eigenvalues, cpu.eigenvalues)
                    for gpu, cpu in zip(samples, cpu_samples, strict=True)]
    spikes = [(d.spectrum.n_spikes, c.spectrum.n_spikes) for d, c in zip(on_device.layers, on_cpu.layers, strict=True)]
    sigma = [abs(d.spectrum.sigma2 - c.spectrum.sigma2) / c.spectrum.sigma2
             for d, c in zip(on_device.layers, on_cpu.layers, strict=True) if c.spectrum.sigma2 > 0]
    count = samples[0].count
    path = "covariance" if count >= record.hidden_size else "Gram"
    report.details["spectra"] = {
        "layers": record.n_layers, "dim": record.hidden_size, "vectors": count, "path": path, "timings_s": timings,
        "eigenvalue_errors": eigen_errors, "spikes_device_cpu": spikes, "sigma2_errors": sigma,
        "gamma_c": [on_device.gamma_c, on_cpu.gamma_c], "n_boot": args.spectra_boot,
        "ranks_device_cpu": [(len(d.eigenvalues), len(c.eigenvalues)) for d, c in zip(samples, cpu_samples, strict=True)],
        "layer0_distinct_vectors": distinct.get(0),
    }
    report.add("spectra", f"{record.n_layers} layers x {record.hidden_size}, {count:,} vectors: eigenvalues {device} / cpu",
               f"{timings['eigenvalues on the device']:.1f} / {timings['eigenvalues on the CPU']:.1f} s ({path} path)")
    report.add("spectra", "read from the store, accumulate (same for both)",
               f"{timings['read']:.1f} s, {timings['accumulate']:.1f} s")
    report.check("spectra", f"eigenvalues {device} vs cpu, max |diff| / largest, every layer", worst(eigen_errors), 1e-8)
    report.add("spectra", "spike counts and gamma_c equal", f"{sum(d == c for d, c in spikes)}/{len(spikes)} layers, "
               f"gamma_c {on_device.gamma_c:.3f} vs {on_cpu.gamma_c:.3f}", "all",
               all(d == c for d, c in spikes) and (on_device.gamma_c == on_cpu.gamma_c
                                                   or (math.isnan(on_device.gamma_c) and math.isnan(on_cpu.gamma_c))))
    report.check("spectra", "sigma^2 relative difference, every layer", worst(sigma) if sigma else math.nan, 1e-6)
    if 0 in distinct:
        report.add("spectra", "layer 0: eigenvalues kept (device, cpu) / distinct vectors",
                   f"{len(samples[0].eigenvalues):,}, {len(cpu_samples[0].eigenvalues):,} / {distinct[0]:,}")


def eigenvalue_error(device: np.ndarray, cpu: np.ndarray) -> float:
    """max |device - cpu| / largest eigenvalue, the shorter list padded with zeros: the two solvers
    may keep a different number of the numerically-zero eigenvalues of a rank-deficient layer."""
    size = max(len(device), len(cpu))
    if size == 0:
        return 0.0
    padded = np.zeros((2, size))
    padded[0, :len(device)], padded[1, :len(cpu)] = device, cpu
    return float(np.max(np.abs(padded[0] - padded[1])) / max(float(padded[1].max()), 1e-300))


# -- the run --------------------------------------------------------------------------------------


def guarded(report: Report, section: str, step: str, function: Callable, *arguments):
    """``function(*arguments)``, or None with a failed row (its traceback in the JSON's ``errors``)
    if it raises: one step's failure must not lose the steps after it on a machine lent for minutes."""
    try:
        return function(*arguments)
    except Exception as error:  # noqa: BLE001 - reported as a failed row, the run goes on
        first_line = str(error).splitlines()[0][:100] if str(error) else ""
        report.add(section, f"{step} ran", f"{type(error).__name__}: {first_line}", "no error", False)
        report.details.setdefault("errors", {})[f"{section}: {step}"] = traceback.format_exc()
        traceback.print_exc()
        gc.collect()
        return None


def environment(device: str) -> dict:
    import torch
    import transformers

    found = {
        "python": sys.version.split()[0], "platform": platform.platform(), "cpu_count": os.cpu_count(),
        "torch": torch.__version__, "transformers": transformers.__version__, "numpy": np.__version__,
        "device": device, "cuda_available": torch.cuda.is_available(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
    }
    if device.startswith("cuda"):
        properties = torch.cuda.get_device_properties(torch.device(device))
        found.update(gpu=properties.name, gpu_memory_gib=properties.total_memory / 2**30, cuda=torch.version.cuda,
                     multiprocessors=properties.multi_processor_count)
    return found


def imported_packages() -> list[str]:
    """Top-level third-party modules this run imported (what the GPU machine must have)."""
    names = {name.partition(".")[0] for name in list(sys.modules)}
    return sorted(name for name in names if not name.startswith("_") and name not in sys.stdlib_module_names
                  and name not in ("magdash", "bench"))


def parse_shape(text: str) -> dict:
    """BLOCKS,D,FFN,HEADS,KV_HEADS -> a Llama config's shape (vocabulary 4,096: the tokenizer needs 2,300)."""
    try:
        blocks, hidden, ffn, heads, kv_heads = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("write five whole numbers: BLOCKS,D,FFN,HEADS,KV_HEADS") from None
    return dict(SMALL_LLAMA, vocab_size=4096, num_hidden_layers=blocks, hidden_size=hidden, intermediate_size=ffn,
                num_attention_heads=heads, num_key_value_heads=kv_heads)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    parser.add_argument("--small", action="store_true",
                        help="small sizes for the CPU: a 4-block d=256 model, 100 x 4 sentences")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "gpu_check.json",
                        help="where the JSON of every number goes")
    parser.add_argument("--work", type=Path, default=None, help="folder for models and stores (default: a temporary one)")
    parser.add_argument("--budget-s", type=float, default=280.0,
                        help="once the run has taken this long, the sections and batch sizes not started are skipped")
    parser.add_argument("--skip", action="append", choices=SECTIONS, default=[], help="leave a section out")
    parser.add_argument("--single-every", type=int, default=None,
                        help="run every Nth of the paper's sentences one at a time (1; small 3)")
    parser.add_argument("--scale-dtype", default=None, choices=("float32", "float16", "bfloat16"),
                        help="dtype of the scale model (bfloat16; small float32: bfloat16 is slow on a CPU)")
    parser.add_argument("--scale-shape", type=parse_shape, default=None, metavar="BLOCKS,D,FFN,HEADS,KV_HEADS",
                        help="a Llama of another shape for the scale section (Llama-3-8B's: 32,4096,14336,32,8; "
                             "small 4,256,512,4,2)")
    parser.add_argument("--batch-size", type=int, default=32, help="the extraction's batch size (magdash's default)")
    parser.add_argument("--batch-sizes", default=None, help="batch sizes of the large set (default 32,256; small 32,128)")
    parser.add_argument("--paper-repeats", type=int, default=None, help="repeats of the paper set (default 3; small 2)")
    parser.add_argument("--scale-magnitudes", type=int, default=None, help="magnitudes 1..N of the large set (1000; small 100)")
    parser.add_argument("--scale-carriers", type=int, default=None, help=f"carriers of the large set, <= {len(CARRIERS)} (20; small 4)")
    parser.add_argument("--oom-magnitudes", type=int, default=None, help="magnitudes x 4 carriers sent as one batch (1000; small 50)")
    parser.add_argument("--oom-headroom-mib", type=int, default=512, help="CUDA: what the limited card holds beyond the model")
    parser.add_argument("--spectra-vectors", type=int, default=None,
                        help="vectors per layer for the spectra, taken evenly from the store (5000; small all)")
    parser.add_argument("--compare-one-writer", action=argparse.BooleanOptionalAction, default=True,
                        help="extract the large set's last batch size again with one shard write in flight, "
                             "as before this check (default on)")
    parser.add_argument("--contention-sentences", type=int, default=None,
                        help="sentences of the floor passes timed beside each part of a write (5000; small 200)")
    parser.add_argument("--spectra-boot", type=int, default=1000, help="bootstrap resamples of the diagnostics")
    args = parser.parse_args(argv)
    defaults = dict(single_every=3, scale_dtype="float32", batch_sizes="32,128", paper_repeats=2, scale_magnitudes=100, scale_carriers=4, oom_magnitudes=50,
                    contention_sentences=200,
                    spectra_vectors=10**9) if args.small else dict(
        single_every=1, scale_dtype="bfloat16", batch_sizes="32,256", paper_repeats=3, scale_magnitudes=1000, scale_carriers=20, oom_magnitudes=1000,
        contention_sentences=5000,
        spectra_vectors=5000)
    defaults["scale_shape"] = SMALL_LLAMA if args.small else LLAMA3_8B
    for option, value in defaults.items():
        if getattr(args, option) is None:
            setattr(args, option, value)
    if not 1 <= args.scale_carriers <= len(CARRIERS):
        parser.error(f"--scale-carriers must be 1..{len(CARRIERS)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    report = Report(args.out)
    report.details["options"] = vars(args)
    try:
        from magdash.sources import pick_device

        pick_device(args.device)
    except MagdashError as error:
        print(f"gpu_check: {error}", file=sys.stderr)
        return 2
    found = report.details["environment"] = environment(args.device)
    report.add("environment", "machine", f"{found.get('gpu', 'CPU')}, torch {found['torch']}, "
               f"transformers {found['transformers']}, Python {found['python']}")
    work = Path(tempfile.mkdtemp(prefix="gpu-check-", dir=args.work))
    over_budget = lambda: report.elapsed > args.budget_s  # noqa: E731
    scale = None
    try:
        for section in SECTIONS:
            if section in args.skip:
                continue
            if over_budget():
                report.add(section, "section", "skipped: over --budget-s")
                continue
            if section in ("contention", "oom", "spectra") and scale is None:
                report.add(section, "section", "skipped: needs the scale section's model")
                continue
            if section == "spectra" and scale.kept_store is None:
                report.add(section, "section", "skipped: needs the scale section's large store")
                continue
            started = time.perf_counter()
            if section == "correctness":
                guarded(report, section, "section", check_correctness, report, args, work)
            elif section == "scale":
                scale = guarded(report, section, "model", build_scale_model, report, args, work)
                if scale is not None:
                    check_scale(report, args, work, scale, over_budget)
            elif section == "contention":
                guarded(report, section, "section", check_contention, report, args, work, scale)
            elif section == "oom":
                guarded(report, section, "section", check_out_of_memory, report, args, work, scale)
            else:
                guarded(report, section, "section", check_spectra, report, args, scale)
            release(args.device)
            report.details.setdefault("section_s", {})[section] = time.perf_counter() - started
            found["imported"] = imported_packages()
            report.save()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    imported = imported_packages()
    missing_there = sorted(set(imported) & set(NOT_ON_THE_GPU_MACHINE))
    report.add("environment", f"imports none of {', '.join(NOT_ON_THE_GPU_MACHINE)}", ", ".join(missing_there) or "none",
               "none", not missing_there)
    report.add("environment", "imports from bench/wheels", ", ".join(sorted(set(imported) & set(WHEELS))))
    report.save()
    print("\n" + report.table(), flush=True)
    print(f"full numbers: {args.out}", flush=True)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
