"""Steering comparison trials on tiny decoders: the operand's token found as the extraction's rule
finds it, dose 0 the unpatched pass, batches and padding changing nothing, and a model with a
PLANTED readout (the A-vs-B logit difference reads one known direction u, carried from the
operand's token to the answer position by one block) moved only along u and only at the layers
before that block."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from magdash.comparison_stimuli import ComparisonSet
from magdash.errors import StimulusError
from magdash.extract_params import ExtractParams
from magdash.sources.resolve import resolve_model
from magdash.store import Store
from magdash.trial_extraction import load_for_trials, prompt_texts, prompt_token_ids, run_trials
from magdash.trial_steering import STEER_COLUMNS, operand_positions, steer_trials
from tests.test_trial_extraction import TEMPLATES, build_comparison_model

A_TOKEN, B_TOKEN = 8, 9
"""The ids of the options A and B in build_comparison_model's vocabulary."""
READER_BLOCK = 2
"""The planted model's block that carries u from the operand's token to the answer position: the
layers before it (0 and 1) can move the answer, its output (layer 2) and the post-norm layer cannot."""


def design() -> ComparisonSet:
    """Numbers of one to four digits, so some are several tokens of the chunking tokenizer."""
    return ComparisonSet(references=(10, 3000), ratios=(1.1, 2.0), templates=TEMPLATES, pairs=1, seed=1)


def design_trials():
    return design().trials()


def build_planted_model(folder: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """A two-block Llama whose answer reads one unit direction u of the residual stream, and a unit
    direction v orthogonal to u.

    The embeddings have no component along u; every block's attention and MLP write nothing, but
    block READER_BLOCK's attention attends uniformly (zero queries and keys), reads u from each
    token's normed input and writes it along u; the head's rows of A and B are +u and -u, every
    other row 0. Unpatched, every logit is 0. A push along u at the operand's token before the
    reader reaches the answer position and raises A's logit; after the reader nothing carries it;
    a push along v is read by nothing."""
    import torch
    from transformers import LlamaForCausalLM

    build_comparison_model(folder, chat=False)
    model = LlamaForCausalLM.from_pretrained(folder)
    d = model.config.hidden_size
    rng = np.random.default_rng(7)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    v = rng.normal(size=d)
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    u_t = torch.tensor(u, dtype=torch.float32)
    with torch.no_grad():
        embeddings = model.get_input_embeddings().weight
        embeddings -= torch.outer(embeddings @ u_t, u_t)
        for block in model.model.layers:
            block.self_attn.o_proj.weight.zero_()
            block.mlp.down_proj.weight.zero_()
        reader = model.model.layers[READER_BLOCK - 1].self_attn
        reader.q_proj.weight.zero_()
        reader.k_proj.weight.zero_()
        reader.v_proj.weight.zero_()
        reader.v_proj.weight[0] = u_t  # head 0's first value dimension: u . norm(x)
        reader.o_proj.weight[:, 0] = 0.4 * u_t
        head = model.get_output_embeddings().weight
        head.zero_()
        head[A_TOKEN] = u_t
        head[B_TOKEN] = -u_t
    model.save_pretrained(folder, safe_serialization=True)
    return folder, u, v


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    folder, u, v = build_planted_model(tmp_path_factory.mktemp("models") / "planted")
    return load_for_trials(resolve_model(str(folder)), ExtractParams()), u, v


@pytest.fixture(scope="module")
def random_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {chat: build_comparison_model(root / f"steer-{chat}", chat=chat) for chat in (False, True)}


@pytest.mark.parametrize("chat", [False, True])
@pytest.mark.parametrize("operand", ["a", "b"])
def test_the_operand_position_is_the_last_token_of_its_number(random_models, chat, operand):
    loaded = load_for_trials(resolve_model(str(random_models[chat])), ExtractParams())
    trials = design_trials()
    prompts = prompt_texts(loaded.tokenizer, list(trials["question"]), chat)
    ids = prompt_token_ids(loaded, prompts, chat)
    positions = operand_positions(loaded, prompts, trials, operand, chat)
    values = trials[f"value_{operand}"]
    assert values.str.len().max() >= 4  # numbers of several tokens: "last" is not "first"
    for row, position, value in zip(ids, positions, values, strict=True):
        assert loaded.tokenizer.convert_ids_to_tokens(row[position]) == re.findall(r"\d{1,3}", value)[-1]
    other = operand_positions(loaded, prompts, trials, "b" if operand == "a" else "a", chat)
    assert all(mine != theirs for mine, theirs in zip(positions, other, strict=True))
    with pytest.raises(StimulusError, match="operand="):
        operand_positions(loaded, prompts, trials, "c", chat)


def test_unpatched_is_run_trials_dose_0_is_it_exactly_and_batches_change_nothing(tmp_path, random_models):
    loaded = load_for_trials(resolve_model(str(random_models[False])), ExtractParams())
    trials = design_trials()
    rng = np.random.default_rng(3)
    directions = {layer: rng.normal(size=(2, loaded.hidden_size)) * 0.05 for layer in (0, 2)}
    directions[1] = np.zeros((2, loaded.hidden_size))  # a patched pass that adds zeros
    labels = ("magnitude", "random")
    kwargs = dict(labels=labels, chat=False)
    frame = steer_trials(loaded, trials, directions, [0.0, 0.5, 1.0], "a", 5, **kwargs)
    assert list(frame.columns) == list(STEER_COLUMNS)
    assert len(frame) == len(trials) * 3 * 2 * 3
    assert frame.groupby(["layer", "direction", "dose"]).size().eq(len(trials)).all()
    assert (frame["label"] == np.where(frame["direction"] == 0, "magnitude", "random")).all()
    at_zero = frame[frame["dose"] == 0]
    assert (at_zero["p_a"] == at_zero["p_a_unpatched"]).all() and (at_zero["p_b"] == at_zero["p_b_unpatched"]).all()
    zeros = frame[frame["layer"] == 1]  # the same batches, the hook adding zeros: bit for bit
    assert (zeros["p_a"] == zeros["p_a_unpatched"]).all() and (zeros["p_b"] == zeros["p_b_unpatched"]).all()
    pushed = frame[(frame["layer"] == 0) & (frame["dose"] > 0)]
    assert (np.abs(pushed["p_a"] - pushed["p_a_unpatched"]) > 1e-7).all()
    after_last_block = frame[frame["layer"] == 2]  # at the operand's token, with no block left to carry it
    assert (after_last_block["p_a"] == after_last_block["p_a_unpatched"]).all()
    stored = run_trials(str(random_models[False]), design(), Store(tmp_path / "s.duckdb"))
    reference = stored.trials.set_index("trial_id")
    first = frame[(frame["layer"] == 0) & (frame["direction"] == 0) & (frame["dose"] == 1.0)].set_index("trial_id")
    assert list(first.index) == list(trials["trial_id"])  # in the trials' order
    np.testing.assert_allclose(first["p_a_unpatched"], reference.loc[first.index, "prob_a"], rtol=1e-4)
    np.testing.assert_allclose(first["p_b_unpatched"], reference.loc[first.index, "prob_b"], rtol=1e-4)
    one_by_one = steer_trials(loaded, trials, directions, [0.0, 0.5, 1.0], "a", 1, **kwargs)
    np.testing.assert_allclose(one_by_one["p_a"], frame["p_a"], rtol=1e-4, atol=1e-9)  # padding changes nothing
    np.testing.assert_allclose(one_by_one["p_b"], frame["p_b"], rtol=1e-4, atol=1e-9)


def test_a_planted_readout_moves_only_along_its_direction_and_only_before_its_reader(planted):
    loaded, u, v = planted
    trials = design_trials()
    unit = 0.05  # about twice the embeddings' norm per coordinate times sqrt(d): a push the reader notices
    directions = {layer: np.stack([u, v, -u]) * unit for layer in range(len(loaded.layer_labels))}
    frame = steer_trials(loaded, trials, directions, [0.0, 0.5, 1.0], "a", 4, labels=("u", "v", "-u"), chat=False)
    vocabulary = loaded.model.get_output_embeddings().weight.shape[0]
    np.testing.assert_allclose(frame[["p_a_unpatched", "p_b_unpatched"]], 1 / vocabulary, rtol=1e-4)  # logits all 0
    shift = frame["p_a"] - frame["p_a_unpatched"]
    pushed = frame["dose"] > 0
    before_reader = frame["layer"] < READER_BLOCK
    along_u = pushed & before_reader & (frame["label"] == "u")
    assert (shift[along_u] > 1e-3).all()  # toward A, on every trial
    against_u = pushed & before_reader & (frame["label"] == "-u")
    assert (shift[against_u] < -1e-5).all()
    assert (frame.loc[along_u, "p_b"] < frame.loc[along_u, "p_b_unpatched"]).all()
    grows = frame[along_u].pivot_table(index=["trial_id", "layer"], columns="dose", values="p_a")
    assert (grows[1.0] > grows[0.5]).all()  # a larger dose moves it further
    assert np.abs(shift[frame["label"] == "v"]).max() < 1e-6  # orthogonal to what anything reads
    assert np.abs(shift[~before_reader]).max() < 1e-9  # after the reader nothing carries the push
    on_b = steer_trials(loaded, trials, {0: np.stack([u]) * unit}, [1.0], "b", 4, labels=("u",), chat=False)
    assert (on_b["p_a"] > on_b["p_a_unpatched"] + 1e-3).all()  # the readout reads either operand's token


def test_inputs_that_cannot_be_steered_are_refused_naming_the_parameter(planted):
    loaded, u, _v = planted
    trials = design_trials()
    good = {0: np.stack([u])}
    cases = [
        (dict(directions={0: np.stack([u, u])}), "directions="),
        (dict(directions={7: np.stack([u])}), "directions="),
        (dict(directions={}), "directions="),
        (dict(doses=[]), "doses="),
        (dict(doses=[1.0, float("nan")]), "doses="),
        (dict(operand="c"), "operand="),
        (dict(trials=trials.drop(columns=["template"])), "trials="),
        (dict(trials=trials.iloc[:0]), "trials="),
        (dict(trials=trials.assign(template=None)), "lack template"),
        (dict(batch_size=0), "batch_size="),
    ]
    for change, message in cases:
        arguments = dict(trials=trials, directions=good, doses=[1.0], operand="a", batch_size=4)
        arguments.update(change)
        with pytest.raises(StimulusError, match=message):
            steer_trials(loaded, labels=("u",), chat=False, **arguments)
