"""Steering comparison trials: the answer probabilities when a direction is added at one operand's number.

The forward passes of activation patching (Cacioli 2026, arXiv 2603.20642, Paradigm D): for each
layer, each direction and each dose, ``dose x direction`` is added to the residual stream
(:func:`magdash.layer_hooks.add_at_positions`) at the last token of one operand's number — the
extraction's position rule ``last`` — and the answer options' probabilities are read at the answer
position as :func:`magdash.trial_extraction.run_trials` reads them (softmax over the whole
vocabulary; only the last position's logits are computed). The prompts are those of the trials:
the question, in the model's chat template when the run applied it.

The unpatched pass runs once per batch of trials and is reused: a dose of 0 is that pass itself,
so it equals the unpatched probabilities exactly. The patched passes run the same batches, one
(layer, direction, dose) at a time, so a patched row differs from its unpatched row only by what
the hook added.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from magdash.comparison_stimuli import OPERANDS, SLOT_A, SLOT_B
from magdash.errors import ModelLoadError, StimulusError
from magdash.layer_hooks import add_at_positions
from magdash.params import ProgressCallback
from magdash.sources.loading import LoadedModel
from magdash.stimuli import token_indices_for_span
from magdash.trial_extraction import answer_tokens, batches, last_logits, prompt_texts, prompt_token_ids, score

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

STEER_COLUMNS = ("trial_id", "layer", "direction", "label", "dose", "p_a", "p_b", "p_a_unpatched", "p_b_unpatched")
"""The columns of :func:`steer_trials`' frame."""
TRIAL_FIELDS = ("trial_id", "template", "value_a", "value_b", "question")
"""The trial columns steering reads (:data:`magdash.comparison_stimuli.TRIAL_COLUMNS` has them)."""


def operand_span(template: str, value_a: str, value_b: str, operand: str) -> tuple[int, int]:
    """The characters ``[start, end)`` of one operand's number in the question ``template`` writes with
    ``value_a`` and ``value_b`` (:meth:`magdash.comparison_stimuli.ComparisonTemplate.write`).

    Args:
        template: the template's text, with one ``{a}`` and one ``{b}``.
        value_a: the number written in ``{a}``.
        value_b: the number written in ``{b}``.
        operand: "a" or "b".
    """
    slot, other, value, other_value = (
        (SLOT_A, SLOT_B, value_a, value_b) if operand == "a" else (SLOT_B, SLOT_A, value_b, value_a)
    )
    start = template.index(slot)
    if template.index(other) < start:  # the other number, written before, shifts this one
        start += len(other_value) - len(other)
    return start, start + len(value)


def operand_positions(
    loaded: LoadedModel, prompts: Sequence[str], trials: pd.DataFrame, operand: str, chat: bool
) -> list[int]:
    """Per trial, the index of the last token of the operand's number in the prompt's token ids as
    :func:`magdash.trial_extraction.prompt_token_ids` gives them (unpadded, the BOS magdash prepends
    counted): the extraction's position rule ``last``.

    Args:
        loaded: the model (its tokenizer, fast: the offsets locate the number).
        prompts: the texts given to the model, one per trial (:func:`magdash.trial_extraction.prompt_texts`).
        trials: the trials, with ``template``, ``value_a``, ``value_b`` and ``question``.
        operand: "a" (the number in ``{a}``) or "b".
        chat: whether the prompts are chat-template texts (their special tokens are in the text).
    """
    if operand not in OPERANDS:
        raise StimulusError(f"operand={operand!r}: give one of {', '.join(OPERANDS)}", parameters=("operand",))
    encoded = loaded.tokenizer(list(prompts), add_special_tokens=not chat, return_offsets_mapping=True)
    start_rule = loaded.sequence_start
    shift = 1 if start_rule.startswith("bos:") and not chat else 0  # as prompt_token_ids prepends it
    positions = []
    rows = trials[["template", "value_a", "value_b", "question"]].itertuples(index=False)
    for prompt, offsets, (template, value_a, value_b, question) in zip(
        prompts, encoded["offset_mapping"], rows, strict=True
    ):
        start, end = operand_span(template, value_a, value_b, operand)
        at = prompt.find(question)
        if at < 0 or question[start:end] != (value_a if operand == "a" else value_b):
            raise StimulusError(
                f"the question {question!r} is not in its prompt as its template writes it: steer trials as "
                "run_trials gave them (trials=)",
                parameters=("trials",),
            )
        (index,) = token_indices_for_span([tuple(pair) for pair in offsets], at + start, at + end, "last")
        positions.append(index + shift)
    return positions


def steer_trials(
    loaded: LoadedModel,
    trials: pd.DataFrame,
    directions: Mapping[int, np.ndarray],
    doses: Sequence[float],
    operand: str,
    batch_size: int,
    progress: ProgressCallback | None = None,
    *,
    labels: Sequence[str],
    chat: bool,
    options: Sequence[str] = ("A", "B"),
) -> pd.DataFrame:
    """The answer probabilities of every trial with ``dose x direction`` added at one operand's number,
    per layer, direction and dose, beside the unpatched ones.

    Returns one row per (trial_id, layer, direction, dose) (:data:`STEER_COLUMNS`): ``direction`` is
    the row of the layer's matrix, ``label`` its entry in ``labels``, ``p_a`` / ``p_b`` the options'
    probabilities of the patched pass (softmax over the whole vocabulary at the answer position, as
    :func:`magdash.trial_extraction.run_trials`), ``p_a_unpatched`` / ``p_b_unpatched`` those of the
    unpatched pass (computed once per trial; a dose of 0 is that pass). Rows are in the order
    layer, direction, dose, then the trials' order.

    Args:
        loaded: a model loaded with its head (:func:`magdash.trial_extraction.load_for_trials`).
        trials: the trials (:data:`TRIAL_FIELDS`: the design's ``ComparisonSet.trials()`` or the stored ones).
        directions: per layer (numbered as the extraction's labels), a (k, d) array of directions,
            each already scaled to one dose unit; every layer has the same k rows, in ``labels``' order.
        doses: the multiples of each direction to add (0 gives the unpatched pass).
        operand: "a" (the number in ``{a}``) or "b".
        batch_size: trials per forward pass.
        progress: called as ``progress(done, total)`` forward passes.
        labels: what each direction row is ("magnitude", "random", "orthogonal", ...), k of them.
        chat: wrap the questions in the chat template (as the trials' run did:
            :func:`magdash.trial_extraction.applies_chat_template`, the stored run's ``chat_template_applied``).
        options: the two answer options (the comparison set's ``options``).
    """
    started = time.perf_counter()
    matrices = _checked_directions(loaded, directions, labels)
    doses = [float(dose) for dose in doses]
    if not doses or not all(math.isfinite(dose) for dose in doses) or len(set(doses)) != len(doses):
        raise StimulusError(f"doses={doses}: give distinct finite numbers, at least one", parameters=("doses",))
    if batch_size < 1:
        raise StimulusError(f"batch_size={batch_size}: give at least 1", parameters=("batch_size",))
    missing = [column for column in TRIAL_FIELDS if column not in trials.columns]
    if not missing:  # imported trials may hold no template or question: nothing says where the operand is
        missing = [column for column in TRIAL_FIELDS if trials[column].isna().any()]
    if missing or trials.empty:
        raise StimulusError(
            f"trials= {'lack ' + ', '.join(missing) if missing else 'are empty'}: give comparison trials with "
            "their templates (ComparisonSet.trials() or the stored trials of magdash behave)",
            parameters=("trials",),
        )
    if not loaded.is_causal or loaded.model.get_output_embeddings() is None:
        raise ModelLoadError(
            f"{loaded.source.spec!r} is loaded without a language-model head: steering reads next-token "
            "logits (load it with load_for_trials)"
        )
    trials = trials.reset_index(drop=True)
    option_tokens = answer_tokens(loaded.tokenizer, options)
    prompts = prompt_texts(loaded.tokenizer, list(trials["question"]), chat)
    token_ids = prompt_token_ids(loaded, prompts, chat)
    positions = operand_positions(loaded, prompts, trials, operand, chat)
    patched_doses = [dose for dose in doses if dose != 0]
    k = len(labels)
    n_batches = math.ceil(len(trials) / batch_size)
    total = n_batches * (1 + len(matrices) * k * len(patched_doses))
    done = 0
    # per (layer, direction, dose): (trial indices, p_a, p_b) of every batch; the unpatched ones per trial
    patched: dict[tuple[int, int, float], list[np.ndarray]] = {}
    unpatched = np.empty((len(trials), 2))
    for indices in batches(token_ids, batch_size):
        ids = [token_ids[index] for index in indices]
        width = max(len(row) for row in ids)  # last_logits pads on the left to the longest prompt
        padded = [width - len(row) + positions[index] for row, index in zip(ids, indices, strict=True)]
        base = score(last_logits(loaded, ids), option_tokens)[:, 2:]
        unpatched[indices] = base
        done += 1
        if progress:
            progress(done, total)
        for layer, matrix in matrices.items():
            for direction in range(k):
                for dose in doses:
                    if dose == 0:
                        probabilities = base
                    else:
                        vectors = (dose * matrix[direction]).expand(len(ids), -1)
                        with add_at_positions(loaded, layer, vectors, padded):
                            probabilities = score(last_logits(loaded, ids), option_tokens)[:, 2:]
                        done += 1
                        if progress:
                            progress(done, total)
                    patched.setdefault((layer, direction, dose), []).append(
                        np.column_stack([np.asarray(indices, dtype=np.float64), probabilities])
                    )
    frames = []
    trial_ids = trials["trial_id"].to_numpy()
    for (layer, direction, dose), parts in patched.items():
        stacked = np.concatenate(parts)
        order = np.argsort(stacked[:, 0], kind="stable")
        rows = stacked[order, 0].astype(np.int64)
        frames.append(
            pd.DataFrame(
                {
                    "trial_id": trial_ids[rows],
                    "layer": layer,
                    "direction": direction,
                    "label": labels[direction],
                    "dose": dose,
                    "p_a": stacked[order, 1],
                    "p_b": stacked[order, 2],
                    "p_a_unpatched": unpatched[rows, 0],
                    "p_b_unpatched": unpatched[rows, 1],
                }
            )
        )
    log.info(
        "steered %d trials of %s at %d layers x %d directions x %d doses in %.1f s",
        len(trials),
        loaded.source.spec,
        len(matrices),
        k,
        len(doses),
        time.perf_counter() - started,
    )
    return pd.concat(frames, ignore_index=True)[list(STEER_COLUMNS)]


def _checked_directions(
    loaded: LoadedModel, directions: Mapping[int, np.ndarray], labels: Sequence[str]
) -> dict[int, torch.Tensor]:
    """Each layer's directions as a float32 tensor, after the checks that name the parameter at fault."""
    import torch

    if not directions:
        raise StimulusError(
            "directions= is empty: give a (k, d) array for at least one layer", parameters=("directions",)
        )
    if not labels:
        raise StimulusError("labels= is empty: name each direction row", parameters=("labels",))
    n_layers = len(loaded.layer_labels)
    checked: dict[int, torch.Tensor] = {}
    for layer, matrix in directions.items():
        array = np.asarray(matrix, dtype=np.float32)
        if not 0 <= int(layer) < n_layers:
            raise StimulusError(
                f"directions= has layer {layer}, not a layer of {loaded.source.spec!r} (0 to {n_layers - 1})",
                parameters=("directions",),
            )
        if array.shape != (len(labels), loaded.hidden_size) or not np.isfinite(array).all():
            raise StimulusError(
                f"directions= at layer {layer} is {array.shape}: give {len(labels)} finite rows (one per labels= "
                f"entry) of the model's width {loaded.hidden_size}",
                parameters=("directions", "labels"),
            )
        checked[int(layer)] = torch.from_numpy(array)
    return checked
