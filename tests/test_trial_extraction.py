"""Running comparison trials on tiny random-weight decoders: option logits and probabilities as a
single unpadded forward pass gives them, the chat template, option tokens, resuming, no store entry
when nothing could run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from magdash import trial_extraction
from magdash.comparison_stimuli import ComparisonSet
from magdash.errors import ModelLoadError, StimulusError
from magdash.extract_params import ExtractParams
from magdash.sources.resolve import resolve_model
from magdash.store import Store
from magdash.trial_extraction import answer_tokens, load_for_trials, run_trials

WORDS = ["Which", "is", "larger", ":", "A", "B", "or", "?", "Answer", "only", "with", "user", "assistant", "!"]
TEMPLATES = (("plain", "Which is larger : A {a} or B {b} ? Answer with only A or B ."),
             ("short", "A {a} or B {b} ?"))
CHAT = ("{% for m in messages %}<s> user : {{ m['content'] }} </s>{% endfor %}"
        "{% if add_generation_prompt %} assistant :{% endif %}")


def build_comparison_model(folder: Path, chat: bool) -> Path:
    """A random-weight Llama whose word-level tokenizer knows the templates' words, A and B, and numbers
    as chunks of up to three digits; with ``chat``, a chat template."""
    import torch
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    digits = [str(i) for i in range(1000)] + [f"{i:02d}" for i in range(100)] + [f"{i:03d}" for i in range(100)]
    vocab = {token: index for index, token in enumerate(dict.fromkeys(
        ["<pad>", "<s>", "</s>", "<unk>", *WORDS, ".", ",", *digits]))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Split(Regex(r"\d{1,3}"), behavior="isolated"),
        pre_tokenizers.Split(Regex(r"[.,]"), behavior="isolated"),
    ])
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", vocab["<s>"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   pad_token="<pad>")
    if chat:
        fast.chat_template = CHAT
    fast.save_pretrained(folder)
    torch.manual_seed(99)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, pad_token_id=0, bos_token_id=1, eos_token_id=2))
    model.save_pretrained(folder, safe_serialization=True)
    return folder


@pytest.fixture(scope="module")
def base_model(tmp_path_factory) -> Path:
    return build_comparison_model(tmp_path_factory.mktemp("models") / "cmp-base", chat=False)


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory) -> Path:
    return build_comparison_model(tmp_path_factory.mktemp("models") / "cmp-chat", chat=True)


def design(**changes) -> ComparisonSet:
    fields = dict(references=(10, 300), ratios=(1.1, 2.0), templates=TEMPLATES, pairs=3, jitter=0.1, seed=1)
    fields.update(changes)
    return ComparisonSet(**fields)


def reference_logits(folder: Path, prompts: list[str], chat: bool) -> np.ndarray:
    """Each prompt's last-position logits from its own unpadded forward pass."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    rows = []
    with torch.no_grad():
        for prompt in prompts:
            ids = tokenizer(prompt, add_special_tokens=not chat, return_tensors="pt")["input_ids"]
            rows.append(model(input_ids=ids).logits[0, -1].float().numpy())
    return np.stack(rows)


@pytest.mark.parametrize("chat", [False, True])
def test_batched_option_logits_and_probabilities_are_those_of_single_passes(tmp_path, base_model, chat_model, chat):
    folder = chat_model if chat else base_model
    store = Store(tmp_path / "s.duckdb")
    run = run_trials(str(folder), design(), store, ExtractParams(batch_size=5), name="m")
    trials = run.trials
    assert run.loaded and run.n_new == len(trials) == design().n_trials
    assert run.chat_template_applied is chat
    assert list(trials["trial_id"]) == list(design().trials()["trial_id"])  # in the design's order
    if chat:
        assert trials["prompt"].str.startswith("<s> user : ").all() and trials["prompt"].str.endswith("assistant :").all()
        assert (trials["prompt"] != trials["question"]).all()
    else:
        assert (trials["prompt"] == trials["question"]).all()
    full = reference_logits(folder, list(trials["prompt"]), chat)
    tokens = {option.option: list(option.token_ids) for option in run.option_tokens}
    assert tokens == {"A": [8], "B": [9]}  # " A" is "A" in a whitespace-split vocabulary: one id each
    np.testing.assert_allclose(trials["logit_a"], full[:, tokens["A"]].max(axis=1), atol=1e-4)
    np.testing.assert_allclose(trials["logit_b"], full[:, tokens["B"]].max(axis=1), atol=1e-4)
    softmax = np.exp(full - full.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(trials["prob_a"], softmax[:, 8], rtol=1e-4)
    np.testing.assert_allclose(trials["prob_b"], softmax[:, 9], rtol=1e-4)
    assert ((trials["prob_a"] + trials["prob_b"]) < 1).all()
    assert (trials["chosen"] == np.where(trials["logit_a"] > trials["logit_b"], "A", "B")).all()
    assert (trials["correct"] == (trials["chosen"] == trials["larger"])).all()
    assert store.trial_run("m", design().name)["chat_template_applied"] is chat


def test_the_chat_template_is_left_off_when_the_set_says_so(tmp_path, chat_model):
    run = run_trials(str(chat_model), design(chat_template=False), Store(tmp_path / "s.duckdb"))
    assert run.chat_template_applied is False and (run.trials["prompt"] == run.trials["question"]).all()


def test_a_random_control_runs_the_same_pipeline(tmp_path, base_model):
    store = Store(tmp_path / "s.duckdb")
    run = run_trials(f"{base_model}@random", design(), store)
    assert run.model.endswith("@random") and len(run.trials) == design().n_trials
    trials = run.trials
    assert np.isfinite(trials[["logit_a", "logit_b"]]).all().all()
    assert ((trials["prob_a"] > 0) & (trials["prob_a"] + trials["prob_b"] < 1)).all()
    assert (trials["chosen"] == np.where(trials["logit_a"] > trials["logit_b"], "A", "B")).all()
    trained = run_trials(str(base_model), design(), store)
    assert not np.allclose(trials["logit_a"], trained.trials["logit_a"])  # other weights, other logits


def interrupt_trials_after(monkeypatch, passes: int):
    """Every batch of trials written at once, and the run interrupted (KeyboardInterrupt) at forward pass
    ``passes + 1``; returns the real ``last_logits``, to put back for the rerun."""
    monkeypatch.setattr(trial_extraction, "FLUSH_SECONDS", 0.0)
    real = trial_extraction.last_logits
    done: list[int] = []

    def interrupted(loaded, token_ids):
        if len(done) == passes:
            raise KeyboardInterrupt
        done.append(len(token_ids))
        return real(loaded, token_ids)

    monkeypatch.setattr(trial_extraction, "last_logits", interrupted)
    return real


def test_an_interrupted_run_keeps_its_trials_and_the_next_does_only_the_rest(tmp_path, base_model, monkeypatch):
    store = Store(tmp_path / "s.duckdb")
    real = interrupt_trials_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        run_trials(str(base_model), design(), store, ExtractParams(batch_size=4), name="m")
    kept = store.trials("m", design().name)
    assert len(kept) == 8
    monkeypatch.setattr(trial_extraction, "last_logits", real)
    rerun = run_trials(str(base_model), design(), store, ExtractParams(batch_size=4), name="m")
    assert rerun.n_new == design().n_trials - 8 and len(rerun.trials) == design().n_trials
    # the kept trials are as a whole run gives them
    whole = run_trials(str(base_model), design(), Store(tmp_path / "whole.duckdb"), name="m").trials.set_index("trial_id")
    again = rerun.trials.set_index("trial_id").loc[whole.index]
    np.testing.assert_allclose(again["logit_a"], whole["logit_a"], atol=1e-4)

    def never(*_args, **_kwargs):
        raise AssertionError("loaded although every trial is stored")

    monkeypatch.setattr(trial_extraction, "load_for_trials", never)
    done = run_trials(str(base_model), design(), store, name="m")
    assert done.n_new == 0 and not done.loaded and done.chat_template_applied is False
    assert [option.option for option in done.option_tokens] == ["A", "B"]


def test_nothing_is_stored_when_the_model_or_an_option_cannot_run(tmp_path, base_model):
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(ModelLoadError):
        run_trials(str(tmp_path / "absent"), design(), store)
    with pytest.raises(StimulusError, match="options=") as refused:
        run_trials(str(base_model), design(options=("A", "Zebra")), store)
    assert "unknown" in str(refused.value)
    from magdash.sources.loading import load_model

    with pytest.raises(ModelLoadError, match="without a language-model head"):
        run_trials(load_model(str(base_model)), design(), store)  # hidden states only, as extract loads it
    assert store.comparison_sets().empty and store.trial_models().empty


def test_an_option_the_tokenizer_splits_is_refused_and_said_so(base_model):
    loaded = load_for_trials(resolve_model(str(base_model)), ExtractParams())
    with pytest.raises(StimulusError, match="split into several"):
        answer_tokens(loaded.tokenizer, ("A", "A B"))
    with pytest.raises(StimulusError, match="share a token"):
        answer_tokens(loaded.tokenizer, ("A", " A"))
    first, second = answer_tokens(loaded.tokenizer, ("A", "B"))
    assert first.texts == ("A",) and second.token_ids == (9,)
