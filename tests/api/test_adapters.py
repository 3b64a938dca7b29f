"""Your own activations in: a TransformerLens run, an nnsight trace and transformers' hidden states
of a tiny random-weight Llama give, through the adapters, the vectors magdash's own extraction
of the same weights stores (to float tolerance: the runs batch and pad differently), and so the
same analysis."""

from __future__ import annotations

import numpy as np
import pytest

import magdash as md
from magdash.errors import AnalysisError
from magdash.extraction import locate_numbers
from magdash.layers import POST_NORM_LABEL

STIMULI = md.StimulusSet(
    "adapters", ("There are {n} items.", "The count reached {n}.", "We saw {n} birds today.", "Add {n} more."),
    tuple(range(1, 13)) + (25, 100, 250),
)
TOLERANCE = 2e-5
FAST = md.AnalysisParams(n_boot=0, measures=("eucl", "residual"))


@pytest.fixture(scope="module")
def reference(tiny_llama, tmp_path_factory) -> dict[str, np.ndarray]:
    """magdash's own extraction of the tiny model, and its analysis."""
    store = md.Store(tmp_path_factory.mktemp("adapters") / "store.duckdb")
    md.extract(str(tiny_llama), STIMULI, store=store, name="tiny", device="cpu")
    return {**store.export_arrays("tiny", STIMULI.name), "analysis": md.analyze(store, "tiny", params=FAST)}


@pytest.fixture(scope="module")
def prompts(tiny_llama):
    """The tiny model's tokenizer and the prompts of the stimuli."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    return tokenizer, md.number_prompts(tokenizer, STIMULI)


@pytest.fixture(scope="module")
def run(tiny_llama, prompts):
    """The model, its tokenizer, the prompts and one right-padded batch of them."""
    from transformers import AutoModelForCausalLM

    tokenizer, numbered = prompts
    model = AutoModelForCausalLM.from_pretrained(tiny_llama).eval()
    batch = tokenizer(list(numbered.sentences), return_tensors="pt", padding=True)
    assert tokenizer.padding_side == "right"
    return model, tokenizer, numbered, batch


def assert_same_as_extraction(activations: md.Activations, reference: dict) -> None:
    assert activations.layer_labels == tuple(reference["layer_labels"])
    assert activations.n_blocks == int(reference["n_blocks"])
    assert activations.carriers == tuple(reference["carriers"])
    assert activations.magnitudes == tuple(int(m) for m in reference["magnitudes"])
    np.testing.assert_allclose(activations.per_carrier, reference["per_carrier"], rtol=0, atol=TOLERANCE)
    analysis = md.analyze(activations, params=FAST)
    expected = reference["analysis"]
    assert analysis.core_layers == expected.core_layers
    np.testing.assert_allclose(analysis.fits["alpha"], expected.fits["alpha"], rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_the_prompts_put_each_number_where_magdash_finds_it(run):
    _, tokenizer, prompts, batch = run
    _, expected = locate_numbers(tokenizer, STIMULI.items, "last")
    assert prompts.positions == tuple(tuple(p) for p in expected)
    assert prompts.sentences[5] == "The count reached 2." and prompts.magnitudes == STIMULI.magnitudes
    ids = batch["input_ids"]
    # The position is the number's last token: "100" sits where its digits end.
    row = prompts.sentences.index("We saw 100 birds today.")
    assert tokenizer.decode(ids[row, : prompts.positions[row][0] + 1]).endswith("100")
    assert prompts.shifted(1).positions[row] == (prompts.positions[row][0] + 1,)
    mean = md.number_prompts(tokenizer, STIMULI, position="mean")
    assert len(mean.positions[row]) >= 1 and mean.positions[row][-1] == prompts.positions[row][0]


@pytest.mark.slow
def test_a_transformer_lens_cache_gives_the_extracted_vectors(run, reference, tiny_llama):
    from transformer_lens import TransformerBridge

    model, tokenizer, prompts, batch = run
    bridge = TransformerBridge.boot_transformers(str(tiny_llama), hf_model=model, tokenizer=tokenizer)
    _, cache = bridge.run_with_cache(batch["input_ids"], attention_mask=batch["attention_mask"])
    activations = md.from_transformer_lens(cache, prompts)
    assert activations.source.startswith("transformer_lens") and activations.layer_labels[-1] == POST_NORM_LABEL
    assert_same_as_extraction(activations, reference)
    without_norm = md.from_transformer_lens(cache, prompts, post_norm=False)
    assert without_norm.n_layers == activations.n_layers - 1 and without_norm.n_blocks == activations.n_blocks
    np.testing.assert_array_equal(without_norm.per_carrier, activations.per_carrier[:, :, :-1])
    # Only the hooks magdash reads, as the docstring's names_filter keeps them.
    _, filtered = bridge.run_with_cache(
        batch["input_ids"], attention_mask=batch["attention_mask"],
        names_filter=lambda name: name.endswith(("hook_resid_pre", "hook_resid_post")) or name == "ln_final.hook_out")
    np.testing.assert_array_equal(md.from_transformer_lens(filtered, prompts).per_carrier, activations.per_carrier)
    with pytest.raises(AnalysisError, match="hook_resid_pre"):
        md.from_transformer_lens({"blocks.0.hook_resid_post": cache["blocks.0.hook_resid_post"]}, prompts)


@pytest.mark.slow
def test_an_nnsight_trace_gives_the_extracted_vectors(run, reference):
    from nnsight import TransformersModel

    model, tokenizer, prompts, batch = run
    traced = TransformersModel(model, tokenizer=tokenizer, task="text-generation")
    saved = []
    with traced.trace(dict(batch)):
        saved.append(traced.model.layers[0].input.save())
        for layer in traced.model.layers[:-1]:
            saved.append(layer.output.save())
        saved.append(traced.model.norm.input.save())
        saved.append(traced.model.norm.output.save())
    activations = md.from_nnsight(saved, prompts, layout="magdash", name="tiny", source="nnsight:tiny")
    assert (activations.name, activations.source) == ("tiny", "nnsight:tiny")
    assert_same_as_extraction(activations, reference)


@pytest.mark.slow
def test_transformers_hidden_states_and_plain_positions(run, reference):
    import torch

    model, _, prompts, batch = run
    with torch.no_grad():
        output = model(**batch, output_hidden_states=True)
    activations = md.from_hidden_states(output, prompts, layout="hidden_states")
    # transformers' last hidden state is the final norm's output, in place of the last block's.
    assert activations.n_blocks == int(reference["n_blocks"]) and activations.layer_labels[-1] == POST_NORM_LABEL
    expected = np.delete(reference["per_carrier"], -2, axis=2)
    np.testing.assert_allclose(activations.per_carrier, expected, rtol=0, atol=TOLERANCE)
    positions = np.asarray([p[0] for p in prompts.positions]).reshape(len(STIMULI.magnitudes), -1)
    plain = md.from_hidden_states(list(output.hidden_states), positions, STIMULI.magnitudes,
                                  carriers=STIMULI.carriers, layout="hidden_states")
    np.testing.assert_array_equal(plain.per_carrier, activations.per_carrier)
    stacked = md.from_hidden_states(torch.stack(output.hidden_states), prompts, layout="hidden_states")
    np.testing.assert_array_equal(stacked.per_carrier, activations.per_carrier)


@pytest.mark.slow
def test_a_store_takes_adapted_activations_and_analyses_them_alike(run, tmp_path):
    import torch

    model, _, prompts, batch = run
    with torch.no_grad():
        output = model(**batch, output_hidden_states=True)
    activations = md.from_hidden_states(output, prompts, layout="hidden_states", source="transformers:tiny")
    store = md.Store(tmp_path / "store.duckdb")
    record, stimuli = store.put("tiny-hf", activations)
    assert record.source == "transformers:tiny" and stimuli == "tiny-hf-stimuli"
    assert md.analyze(store, "tiny-hf", params=FAST).fits.equals(md.analyze(activations, params=FAST).fits)


@pytest.mark.parametrize(("hidden", "positions", "says"), [
    ("short batch", None, "holds 59 sentences, the prompts 60"),
    ("outside", None, "outside layer 0's 2 tokens"),
    ("2-d", None, "each layer must be (batch, tokens, d)"),
    ("good", [0] * 7, "7 positions for 15 magnitudes"),
    ("good", [0.5] * 60, "whole token indices"),
])
def test_runs_that_do_not_match_the_prompts_are_refused(prompts, hidden, positions, says):
    _, numbered = prompts
    rng = np.random.default_rng(0)
    layers = {
        "short batch": [rng.normal(size=(59, 9, 8))] * 3,
        "outside": [rng.normal(size=(60, 2, 8))] * 3,
        "2-d": [rng.normal(size=(60, 8))] * 3,
        "good": [rng.normal(size=(60, 9, 8))] * 3,
    }[hidden]
    with pytest.raises(AnalysisError) as caught:
        if positions is None:
            md.from_hidden_states(layers, numbered)
        else:
            md.from_hidden_states(layers, positions, STIMULI.magnitudes)
    assert says in str(caught.value)
