"""Shared fixtures: tiny random-weight Llama and Mistral models with a small local tokenizer.

Nothing here touches a hub: configs, tokenizers and weights are built in a temporary folder.
The Llama tokenizer splits numbers into chunks of up to three digits (as Llama-3 does, so 1000
becomes "100" + "0"); the Mistral one splits every digit (as Mistral does).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hypothesis import HealthCheck, settings  # noqa: E402

from magdash.stimuli import PAPER_CARRIERS  # noqa: E402
from magdash.store import Store  # noqa: E402

# CI replays the same generated cases on every run so that a red build is reproducible; a
# developer's run explores new ones. Entry points are slow (processes, stores), hence no deadline.
settings.register_profile(
    "magdash", deadline=None, derandomize=bool(os.environ.get("CI")), print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("magdash")

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<unk>"]


def _carrier_words() -> list[str]:
    words = set()
    for carrier in PAPER_CARRIERS:
        for word in carrier.replace("{n}", " ").replace(".", " . ").split():
            words.add(word)
    return sorted(words | {".", ",", "the", "a", "value", "Hello", "world"})


def build_tokenizer(folder: Path, digit_chunk: int) -> None:
    """A word-level fast tokenizer with offsets; numbers split into chunks of ``digit_chunk``."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    digits = [str(i) for i in range(10)]
    if digit_chunk == 3:
        digits = [str(i) for i in range(10)] + [f"{i:02d}" for i in range(100)] + [str(i) for i in range(10, 1000)]
        digits += [f"{i:03d}" for i in range(100)]
    vocab = {token: index for index, token in enumerate(dict.fromkeys(SPECIAL_TOKENS + _carrier_words() + digits))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(r"\d{1," + str(digit_chunk) + "}"), behavior="isolated"),
        pre_tokenizers.Split(Regex(r"[.,]"), behavior="isolated"),
    ])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )
    fast.save_pretrained(folder)


def build_tiny_model(folder: Path, family: str, n_blocks: int = 3, hidden: int = 32) -> Path:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    build_tokenizer(folder, digit_chunk=3 if family == "llama" else 1)
    vocab_size = len(AutoTokenizer.from_pretrained(folder))
    common = dict(
        vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=n_blocks,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0,
        bos_token_id=1, eos_token_id=2,
    )
    torch.manual_seed(1234)
    if family == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common))
    else:
        model = MistralForCausalLM(MistralConfig(**common, sliding_window=None))
    with torch.no_grad():
        # Random norm gains make a pre-norm/post-norm mix-up visible in the tests.
        for name, parameter in model.named_parameters():
            if name.endswith("norm.weight"):
                parameter.uniform_(0.5, 2.0)
    model.save_pretrained(folder, safe_serialization=True)
    return folder


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-llama", "llama")


@pytest.fixture(scope="session")
def tiny_mistral(tmp_path_factory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("models") / "tiny-mistral", "mistral")


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store.duckdb")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20260404)


def pytest_terminal_summary(terminalreporter) -> None:
    from tests.casecount import CASES

    if not CASES:
        return
    terminalreporter.section("bad-input cases tried")
    for entry_point, count in sorted(CASES.items()):
        terminalreporter.write_line(f"{count:7d}  {entry_point}")
    terminalreporter.write_line(f"{sum(CASES.values()):7d}  in all")
