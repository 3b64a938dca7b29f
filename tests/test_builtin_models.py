"""The built-in real decoders, smollm2 (SmolLM2-135M-Instruct, Q4_1) and gemma3-270m (Gemma 3
270M, Q4_K_M): the layers magdash keeps against transformers' own hidden states, where the number's
token is for every paper sentence and every number 1..1000, batching and causal truncation, and the
whole protocol end to end on smollm2 and its random control.

Each GGUF is converted once per session (fixtures ``smollm2`` and ``gemma3`` in conftest.py); CI
installs both models, so nothing here is skipped there.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from magdash import dashboard, reports
from magdash.depth_statistics.depth_params import DepthParams
from magdash.extraction import drop_tokens_after_number, extract, forward_number_vectors, locate_numbers, tokenize_texts
from magdash.presentation import report
from magdash.runs.analysis_runs import analyze, compare
from magdash.runs.depth_runs import depth_from_store
from magdash.stimuli import PAPER_CARRIERS, StimulusSet, paper_stimuli
from magdash.variability.analysis_params import AnalysisParams

pytestmark = pytest.mark.slow

DECODERS = ["smollm2", "gemma3"]
# The two files' published shapes (blocks, width, BOS first).
# blocks, width, and how a sentence starts: SmolLM2's tokenizer adds no BOS (magdash prepends
# <|im_start|>, id 1), Gemma's adds <bos> itself.
EXPECTED = {"smollm2": (30, 576, "bos:1"), "gemma3": (18, 640, "tokenizer")}


@pytest.fixture(params=DECODERS)
def decoder(request):
    return request.param, request.getfixturevalue(request.param)


def close(a: np.ndarray, b: np.ndarray, rtol: float = 1e-4) -> bool:
    """Equal to float32 noise, relative to the vector's scale (Gemma's activations reach 1e4)."""
    scale = max(float(np.abs(b).max()), 1.0)
    return bool(np.abs(a - b).max() <= rtol * scale)


def hidden_states(loaded, ids: list[int]):
    with torch.inference_mode():
        output = loaded.model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    return [h[0].float().numpy() for h in output.hidden_states]


def test_the_decoders_are_what_the_files_say(decoder):
    name, loaded = decoder
    blocks, width, _ = EXPECTED[name]
    assert (loaded.n_blocks, loaded.hidden_size, loaded.is_causal) == (blocks, width, True)
    assert loaded.source.architecture == {"smollm2": "LlamaForCausalLM", "gemma3": "Gemma3ForCausalLM"}[name]
    assert loaded.source.fingerprint.startswith({"smollm2": "gguf:Q4_1:", "gemma3": "gguf:Q4_K_M:"}[name])
    assert loaded.final_norm is not None and len(loaded.layer_labels) == blocks + 2


def test_layers_match_transformers_hidden_states_and_the_final_norm(decoder):
    """Layers 0..L-1 are hidden_states[0..L-1]; L+1 is hidden_states[-1] (post-norm); norm(L) = L+1."""
    _, loaded = decoder
    items = paper_stimuli().items[::13]  # every carrier, magnitudes from 1 to 1000
    token_ids, number_tokens = locate_numbers(loaded, items, "last")
    n_blocks = loaded.n_blocks
    for ids, numbers in zip(token_ids, number_tokens, strict=True):
        ours = forward_number_vectors(loaded, [ids], [numbers])[0]
        theirs = hidden_states(loaded, ids)
        index = numbers[0]
        assert len(theirs) == n_blocks + 1
        for layer in range(n_blocks):
            assert close(ours[layer], theirs[layer][index]), f"layer {layer}"
        assert close(ours[n_blocks + 1], theirs[-1][index])
        with torch.inference_mode():
            normed = loaded.final_norm(torch.from_numpy(ours[n_blocks])[None]).float().numpy()[0]
        assert close(normed, ours[n_blocks + 1])
        assert not close(ours[n_blocks], ours[n_blocks + 1])  # the pre-norm layer is a layer of its own


def test_number_position_for_every_paper_sentence_and_1_to_1000(decoder):
    """Per-digit tokens, a lone space token before the number, BOS first in every sentence (the
    tokenizer's own, or prepended), so no number is at position 0."""
    name, loaded = decoder
    assert loaded.sequence_start == EXPECTED[name][2]
    tokenizer = loaded.tokenizer
    items = list(paper_stimuli().items) + list(StimulusSet("wide", PAPER_CARRIERS, tuple(range(1, 1001))).items)
    encoded = tokenize_texts(tokenizer, [item.sentence for item in items], None, loaded.sequence_start)
    _, number_tokens = locate_numbers(loaded, items, "last")
    for item, (ids, offsets), kept in zip(items, encoded, number_tokens, strict=True):
        digits = str(item.magnitude)
        first = next(k for k, (s, e) in enumerate(offsets) if e > s and s >= item.start)
        assert [tuple(o) for o in offsets[first:first + len(digits)]] == [
            (item.start + j, item.start + j + 1) for j in range(len(digits))
        ], item.sentence
        assert kept == [first + len(digits) - 1]
        assert tuple(offsets[kept[0]])[1] == item.end
        if item.start > 0:
            assert tokenizer.convert_ids_to_tokens(ids[first - 1]) in ("Ġ", "▁")
            assert tuple(offsets[first - 1]) == (item.start - 1, item.start)
        assert ids[0] == tokenizer.bos_token_id
        assert (first == 1) == (item.start == 0) and 0 not in kept


def test_batches_give_the_vectors_of_single_sentences_and_truncation_changes_nothing(decoder):
    _, loaded = decoder
    items = paper_stimuli().items[::5]
    token_ids, number_tokens = locate_numbers(loaded, items, "last")
    pairs = zip(token_ids, number_tokens, strict=True)
    singles = np.stack([forward_number_vectors(loaded, [ids], [n])[0] for ids, n in pairs])
    for side in ("right", "left"):
        batched = forward_number_vectors(loaded, token_ids, number_tokens, padding_side=side)
        for row in range(len(items)):
            for layer in range(singles.shape[1]):
                assert close(batched[row, layer], singles[row, layer], rtol=1e-3), (side, row, layer)
    cut = drop_tokens_after_number(token_ids, number_tokens)
    assert sum(map(len, cut)) < sum(map(len, token_ids))
    pairs = zip(cut, number_tokens, strict=True)
    truncated = np.stack([forward_number_vectors(loaded, [ids], [n])[0] for ids, n in pairs])
    for row in range(len(items)):
        for layer in range(singles.shape[1]):
            assert close(truncated[row, layer], singles[row, layer]), (row, layer)


def test_smollm2_end_to_end_with_its_random_control(smollm2, store):
    stimuli = paper_stimuli()
    result = extract(smollm2, stimuli, store, batch_size=64)
    control = extract("smollm2@random", stimuli, store, device="cpu", batch_size=64)
    assert (result.extracted, control.extracted) == (130, 130)
    n_layers = smollm2.n_blocks + 2
    for name in ("smollm2", "smollm2@random"):
        record = store.model_record(name)
        assert record.n_layers == n_layers and record.hidden_size == 576
        assert store.missing_item_keys(record.model_id, stimuli.name) == set()
    assert store.model_record("smollm2").fingerprint.startswith("gguf:Q4_1:sha256:")
    assert store.model_record("smollm2@random").is_random
    # BOS in front, no number sits at the attention sink: no stored vector of a layer >= 1 has a
    # norm over 10x its layer's median (with "{n} was the value." starting the sequence, the
    # nine single digits reached about 117x at block 20)
    flagged = store.outlier_vectors("smollm2", stimuli.name)
    assert flagged[flagged["layer"] >= 1].empty, flagged
    table = dashboard.inventory_table(dashboard.read_inventory(store)).set_index("model")["weights"]
    assert table["smollm2"] == "Q4_1 GGUF, dequantized"
    assert table["smollm2@random"] == "random (control)"  # random weights were never quantized
    params = AnalysisParams(n_boot=200)
    analyses = {}
    for name in ("smollm2", "smollm2@random"):
        analysis = analyses[name] = analyze(store, name, stimuli.name, params)
        assert len(analysis.layer_labels) == n_layers
        for measure in params.measures:
            values = analysis.values[measure]
            assert values.shape == (n_layers, 26) and np.isfinite(values).all()
        assert [item for item in analysis.outlier_vectors if item.layer >= 1] == []
        fits = analysis.fits[analysis.fits["measure"] == "eucl"]
        assert sorted(fits["layer"]) == list(range(n_layers))
        # Layer 0 is context-free (the same vector in every carrier, V = 0): no fit, by design.
        assert np.isnan(fits["alpha"].iloc[0]) and np.isfinite(fits["alpha"].iloc[1:]).all()
    summary = report.manifest_summary(reports.report_manifest(store, analyses)).set_index("name")
    assert summary.loc["smollm2", "weights"].startswith("quantized (Q4_1 GGUF)")
    comparison = compare(store, "smollm2", "smollm2@random", stimuli.name, params)
    for measure in params.measures:
        assert np.isfinite(comparison.measures[measure].mean_delta)
    phase = depth_from_store(store, "smollm2", stimuli.name, DepthParams(n_boot=50))
    assert [layer.layer for layer in phase.layers] == list(range(n_layers))
    assert all(np.isfinite(layer.omega.mean) for layer in phase.layers)
    assert 0 <= phase.gamma_c <= 1
