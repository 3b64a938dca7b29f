"""Running comparison trials on a model: next-token logits of the answer options, stored as trials.

For each trial of a :class:`~magdash.comparison_stimuli.ComparisonSet` the question is wrapped in
the model's chat template (one user message, the generation prompt added, as the paper's
``paradigm_b_behaviour.py`` does) when the set asks for it and the tokenizer has one, else
tokenized as a sentence is for extraction (with the BOS token magdash prepends where the tokenizer
adds none: :func:`magdash.sources.base.sequence_start_rule`). The prompts run in batches, padded
on the left with position ids counted from each prompt's first token, and the model keeps only
the last position's logits (``logits_to_keep=1``): no sampling, no logits of other positions.

Per trial: ``logit_a`` / ``logit_b``, each option's largest logit over its single-token
tokenizations ("A" and " A", the paper's rule); ``prob_a`` / ``prob_b``, the softmax over the
whole vocabulary at that logit; ``chosen``, the option with the larger logit (B on a tie, as the
paper); ``correct``, chosen == larger. An option that is no single token of the tokenizer in any
tokenization is refused before anything runs.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from magdash.comparison_stimuli import ComparisonSet
from magdash.environment import transformers_version
from magdash.errors import ModelLoadError, StimulusError
from magdash.extract_params import ExtractParams
from magdash.names import default_name
from magdash.params import ProgressCallback
from magdash.sources.base import ModelSource
from magdash.sources.loading import LoadedModel, load_model, pick_device
from magdash.sources.resolve import resolve_model

if TYPE_CHECKING:
    import torch

    from magdash.store import Store

log = logging.getLogger(__name__)

FLUSH_SECONDS = 2.0
"""Trials are written to the store at most this often (and at the end): an interrupted run loses
at most the trials of the last couple of seconds."""


@dataclass(frozen=True)
class OptionTokens:
    """How an answer option is read from the logits.

    Attributes:
        option: the option as the set writes it ("A").
        token_ids: the ids whose logits are its (each a single-token tokenization).
        texts: the tokenizations those ids stand for ("A", " A").
        split: tokenizations of the option that are several tokens, not used.
    """

    option: str
    token_ids: tuple[int, ...]
    texts: tuple[str, ...]
    split: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrialRun:
    """What :func:`run_trials` did.

    Attributes:
        model: the model's name in the store.
        comparisons: the comparison set's name.
        trials: every stored trial of the model on the set (:meth:`magdash.store.Store.trials`).
        n_new: trials run by this call (0: all were stored).
        loaded: whether the model was loaded.
        chat_template_applied: whether the questions were wrapped in the model's chat template (None: not known, the
            trials were stored without facts).
        option_tokens: per option, the token ids and texts used (empty when the model was not loaded and no facts
            were stored).
        seconds: wall time of the call.
    """

    model: str
    comparisons: str
    trials: pd.DataFrame
    n_new: int
    loaded: bool
    chat_template_applied: bool | None
    option_tokens: tuple[OptionTokens, ...]
    seconds: float


def option_tokens(tokenizer, option: str) -> OptionTokens:
    """The single-token tokenizations of ``option`` ("A" and " A") in ``tokenizer``; a
    :class:`StimulusError` naming ``options=`` when there is none (an option the tokenizer only
    splits, or reads as its unknown token, cannot be read from one next-token logit).

    Args:
        tokenizer: the model's tokenizer.
        option: the answer option.
    """
    unknown = getattr(tokenizer, "unk_token_id", None)
    ids: list[int] = []
    texts: list[str] = []
    split: list[str] = []
    for text in (option, " " + option):
        encoded = list(tokenizer.encode(text, add_special_tokens=False))
        if len(encoded) == 1 and encoded[0] != unknown:
            if encoded[0] not in ids:
                ids.append(int(encoded[0]))
                texts.append(text)
        elif len(encoded) > 1:
            split.append(text)
    if not ids:
        raise StimulusError(
            f"the answer option {option!r} is not a single token of the model's tokenizer (it is "
            f"{'split into several' if split else 'unknown to it'}): give options= that are single tokens",
            parameters=("options",))
    return OptionTokens(option, tuple(ids), tuple(texts), tuple(split))


def answer_tokens(tokenizer, options: Sequence[str]) -> tuple[OptionTokens, OptionTokens]:
    """Both options' tokens (:func:`option_tokens`); options sharing a token are refused.

    Args:
        tokenizer: the model's tokenizer.
        options: the two answer options.
    """
    first, second = (option_tokens(tokenizer, option) for option in options)
    if set(first.token_ids) & set(second.token_ids):
        raise StimulusError(f"the answer options {first.option!r} and {second.option!r} share a token of the model's "
                            "tokenizer: give options= that the model can tell apart", parameters=("options",))
    return first, second


def applies_chat_template(tokenizer, comparisons: ComparisonSet) -> bool:
    """Whether the questions are wrapped in the tokenizer's chat template: the set asks for it and the
    tokenizer has one (base models usually do not).

    Args:
        tokenizer: the model's tokenizer.
        comparisons: the design.
    """
    return comparisons.chat_template and bool(getattr(tokenizer, "chat_template", None))


def prompt_texts(tokenizer, questions: Sequence[str], chat: bool) -> list[str]:
    """The texts given to the model: each question in the chat template as one user message with the
    generation prompt, or the question itself.

    Args:
        tokenizer: the model's tokenizer.
        questions: the questions.
        chat: apply the chat template (:func:`applies_chat_template`).
    """
    if not chat:
        return list(questions)
    return [tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                          add_generation_prompt=True) for question in questions]


def prompt_token_ids(loaded: LoadedModel, texts: Sequence[str], chat: bool) -> list[list[int]]:
    """Each text's token ids: a chat template's text holds its special tokens already; a plain question
    gets the tokenizer's own, and the BOS magdash prepends where the tokenizer adds none.

    Args:
        loaded: the model.
        texts: the prompts (:func:`prompt_texts`).
        chat: whether they are chat-template texts.
    """
    encoded = loaded.tokenizer(list(texts), add_special_tokens=not chat)["input_ids"]
    start = loaded.sequence_start
    prefix = [int(start.split(":", 1)[1])] if start.startswith("bos:") and not chat else []
    return [prefix + list(ids) for ids in encoded]


def batches(token_ids: Sequence[Sequence[int]], batch_size: int) -> Iterator[list[int]]:
    """Indices of the prompts in batches of ``batch_size``, longest first (little padding; an
    out-of-memory error comes at the first batch).

    Args:
        token_ids: each prompt's tokens.
        batch_size: prompts per forward pass.
    """
    order = sorted(range(len(token_ids)), key=lambda index: -len(token_ids[index]))
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def last_logits(loaded: LoadedModel, token_ids: Sequence[Sequence[int]]) -> torch.Tensor:
    """The next-token logits after each prompt (float32, one row per prompt), from one forward pass
    of the prompts padded on the left, keeping only the last position's logits.

    Args:
        loaded: a model loaded with its head.
        token_ids: the prompts' tokens.
    """
    import torch

    width = max(len(ids) for ids in token_ids)
    pad = loaded.pad_id
    input_ids = torch.full((len(token_ids), width), pad, dtype=torch.long)
    mask = torch.zeros((len(token_ids), width), dtype=torch.long)
    for row, ids in enumerate(token_ids):
        input_ids[row, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
        mask[row, width - len(ids):] = 1
    device = next(loaded.model.parameters()).device
    takes = forward_parameters(type(loaded.model))
    extra: dict[str, object] = {}
    if "position_ids" in takes:  # counted from each prompt's first token, not from the padding
        extra["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0).to(device)
    for keep in ("logits_to_keep", "num_logits_to_keep"):  # the name changed in transformers 4.50
        if keep in takes:
            extra[keep] = 1
            break
    with torch.inference_mode():
        output = loaded.model(input_ids=input_ids.to(device), attention_mask=mask.to(device), use_cache=False, **extra)
    return output.logits[:, -1, :].float()


@functools.cache
def forward_parameters(model_class: type) -> frozenset[str]:
    """The parameters of a model class's ``forward`` (read once per class, not per batch).

    Args:
        model_class: the loaded model's class.
    """
    return frozenset(inspect.signature(model_class.forward).parameters)


def score(logits: torch.Tensor, options: Sequence[OptionTokens]) -> np.ndarray:
    """Per row of ``logits``: each option's largest logit over its token ids and its probability
    (softmax over the whole vocabulary), as columns logit_a, logit_b, prob_a, prob_b.

    Args:
        logits: next-token logits, one row per prompt.
        options: the two options' tokens.
    """
    import torch

    log_total = torch.logsumexp(logits, dim=-1)
    columns = [logits[:, list(option.token_ids)].max(dim=-1).values for option in options]
    columns += [torch.exp(column - log_total) for column in columns]
    return torch.stack(columns, dim=-1).cpu().numpy().astype(np.float64)


def trial_outcomes(frame: pd.DataFrame, scores: np.ndarray, prompts: Sequence[str]) -> pd.DataFrame:
    """``frame``'s trials with the model's outputs: prompt (the text given), logit_a, logit_b,
    prob_a, prob_b, chosen (A when its logit is larger, else B), correct.

    Args:
        frame: trials of :meth:`~magdash.comparison_stimuli.ComparisonSet.trials`.
        scores: :func:`score`'s columns for them.
        prompts: the texts given to the model.
    """
    done = frame.copy()
    done["prompt"] = list(prompts)
    for index, name in enumerate(("logit_a", "logit_b", "prob_a", "prob_b")):
        done[name] = scores[:, index]
    done["chosen"] = np.where(done["logit_a"] > done["logit_b"], "A", "B")
    done["correct"] = done["chosen"] == done["larger"]
    return done


def resolve_for_trials(model_spec: str, params: ExtractParams) -> ModelSource:
    """``model_spec`` resolved for a run on ``params.device`` (checked first: an unusable device is named
    before any file is read).

    Args:
        model_spec: a model spec (:mod:`magdash.sources`, ``@random`` controls included).
        params: the device, pickle and model-cache choices.
    """
    pick_device(params.device)
    return resolve_model(model_spec, allow_pickle=params.allow_pickle, model_cache=params.model_cache)


def load_for_trials(source: ModelSource, params: ExtractParams) -> LoadedModel:
    """``source`` loaded with its language-model head for ``params``.

    Args:
        source: the resolved model.
        params: dtype, device, device map, remote code and pickle choices.
    """
    return load_model(source, dtype=params.dtype, device=params.device, device_map=params.device_map,
                      trust_remote_code=params.trust_remote_code, allow_pickle=params.allow_pickle,
                      model_cache=params.model_cache, with_head=True)


def run_trials(
    model_spec: str | LoadedModel,
    comparison_set: ComparisonSet,
    store: Store,
    params: ExtractParams | None = None,
    *,
    name: str | None = None,
    progress: ProgressCallback | None = None,
) -> TrialRun:
    """Run every trial of ``comparison_set`` not stored yet for the model, and store it.

    Nothing is loaded when every trial is stored; nothing is written when the model fails to load
    or an option is not a single token (the set and the trials are stored after both checks). A run
    interrupted half way keeps the trials it flushed (every :data:`FLUSH_SECONDS`), and the next
    does only the rest. The run's facts (chat template applied, option tokens, the model's
    identity) are stored with the trials (:meth:`magdash.store.Store.put_trial_run`).

    Args:
        model_spec: a model spec (:mod:`magdash.sources`, ``@random`` controls included) or a model loaded with its
            head (:func:`load_for_trials`).
        comparison_set: the design.
        store: where the trials go.
        params: dtype, device, device map, batch size, remote code and pickle choices
            (:class:`~magdash.extract_params.ExtractParams`; the token position and padding side are not read).
        name: the model's name in the store (default: the spec with a non-default dtype appended).
        progress: called as ``progress(done, total)`` trials.
    """
    started = time.perf_counter()
    params = params or ExtractParams()
    store.check_writable()
    if isinstance(model_spec, LoadedModel):
        source, dtype = model_spec.source, model_spec.dtype
    else:
        source, dtype = resolve_for_trials(model_spec, params), params.dtype
    name = name or default_name(source.spec, dtype)
    trials = comparison_set.trials()
    missing = set(store.missing_trials(name, comparison_set, list(trials["trial_id"])))
    total = len(trials)
    if progress:
        progress(total - len(missing), total)
    if not missing:
        facts = store.trial_run(name, comparison_set.name) or {}
        return TrialRun(name, comparison_set.name, _in_design_order(store, name, comparison_set, trials), 0, False,
                        facts.get("chat_template_applied"), _tokens_from_facts(facts),
                        time.perf_counter() - started)
    loaded = model_spec if isinstance(model_spec, LoadedModel) else load_for_trials(source, params)
    if not loaded.is_causal or loaded.model.get_output_embeddings() is None:
        raise ModelLoadError(f"{source.spec!r} is loaded without a language-model head: comparisons need next-token "
                             "logits (give a spec, or a model from load_for_trials)")
    options = answer_tokens(loaded.tokenizer, comparison_set.options)
    chat = applies_chat_template(loaded.tokenizer, comparison_set)
    todo = trials[trials["trial_id"].isin(missing)].reset_index(drop=True)
    prompts = prompt_texts(loaded.tokenizer, list(todo["question"]), chat)
    token_ids = prompt_token_ids(loaded, prompts, chat)
    store.put_comparison_set(comparison_set)
    facts = {"chat_template_applied": chat, "model_id": source.model_id(dtype, "last", transformers_version()),
             "source": source.source, "spec": source.spec, "dtype": dtype,
             "option_tokens": [dataclasses.asdict(option) for option in options]}
    store.put_trial_run(name, comparison_set.name, facts)
    pending: list[pd.DataFrame] = []
    last_flush = time.perf_counter()
    done = total - len(missing)
    for indices in batches(token_ids, params.batch_size):
        scores = score(last_logits(loaded, [token_ids[index] for index in indices]), options)
        pending.append(trial_outcomes(todo.iloc[indices], scores, [prompts[index] for index in indices]))
        done += len(indices)
        if time.perf_counter() - last_flush >= FLUSH_SECONDS:
            store.put_trials(name, comparison_set.name, pd.concat(pending))
            pending, last_flush = [], time.perf_counter()
        if progress:
            progress(done, total)
    if pending:
        store.put_trials(name, comparison_set.name, pd.concat(pending))
    log.info("ran %d trials of %r on %s (chat template %s)", len(todo), comparison_set.name, name,
             "applied" if chat else "not applied")
    return TrialRun(name, comparison_set.name, _in_design_order(store, name, comparison_set, trials), len(todo), True, chat,
                    options, time.perf_counter() - started)


def _tokens_from_facts(facts: dict) -> tuple[OptionTokens, ...]:
    return tuple(OptionTokens(entry["option"], tuple(entry["token_ids"]), tuple(entry["texts"]), tuple(entry["split"]))
                 for entry in facts.get("option_tokens", ()))


def _in_design_order(store: Store, name: str, comparison_set: ComparisonSet, trials: pd.DataFrame) -> pd.DataFrame:
    """The stored trials in the order of the design's trials (the batches run longest prompt first)."""
    stored = store.trials(name, comparison_set.name)
    rank = pd.Series(range(len(trials)), index=trials["trial_id"])
    return stored.iloc[np.argsort(stored["trial_id"].map(rank).to_numpy(), kind="stable")].reset_index(drop=True)
