"""The steering hook on a tiny random-weight decoder: adding zeros is the unpatched pass bit for bit,
every layer label can be pushed, only the chosen token of each row moves, and no hook outlives an
exception in the forward pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from magdash.errors import StimulusError
from magdash.extract_params import ExtractParams
from magdash.layer_hooks import add_at_positions
from magdash.sources.resolve import resolve_model
from magdash.trial_extraction import last_logits, load_for_trials
from tests.test_trial_extraction import build_comparison_model

PROMPTS = [[1, 4, 5, 6, 100, 9, 200], [1, 7, 8, 300, 11], [1, 400, 12]]
"""Token ids of three prompts of different lengths (left padding in one batch)."""


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    folder: Path = build_comparison_model(tmp_path_factory.mktemp("models") / "hooks", chat=False)
    return load_for_trials(resolve_model(str(folder)), ExtractParams())


def hooks_left(model) -> int:
    return sum(len(module._forward_hooks) + len(module._forward_pre_hooks) for module in model.modules())


def padded_last(prompts) -> list[int]:
    """The padded index of each prompt's last token (last_logits pads on the left)."""
    width = max(len(ids) for ids in prompts)
    return [width - 1] * len(prompts)


def test_adding_zeros_is_the_unpatched_pass_exactly(loaded):
    import torch

    unpatched = last_logits(loaded, PROMPTS)
    for layer in range(len(loaded.layer_labels)):
        with add_at_positions(loaded, layer, torch.zeros(3, loaded.hidden_size), padded_last(PROMPTS)):
            patched = last_logits(loaded, PROMPTS)
        assert torch.equal(patched, unpatched), layer
    assert hooks_left(loaded.model) == 0


def test_every_layer_moves_the_logits_at_the_token_pushed_and_nowhere_else(loaded):
    import torch

    unpatched = last_logits(loaded, PROMPTS)
    push = torch.zeros(3, loaded.hidden_size)
    push[1] = 3.0 * torch.linspace(-1, 1, loaded.hidden_size)  # only the second row gets a vector
    for layer in range(len(loaded.layer_labels)):  # embeddings, block 1, block 2 (pre-norm), post-norm
        with add_at_positions(loaded, layer, push, padded_last(PROMPTS)):
            patched = last_logits(loaded, PROMPTS)
        assert not torch.allclose(patched[1], unpatched[1], atol=1e-3), layer
        torch.testing.assert_close(patched[[0, 2]], unpatched[[0, 2]], atol=1e-5, rtol=1e-5)
    # after the last block nothing carries a push at another token to the answer position
    width = max(len(ids) for ids in PROMPTS)
    first_real = [width - len(ids) for ids in PROMPTS]
    with add_at_positions(loaded, len(loaded.layer_labels) - 1, push, first_real):
        assert torch.allclose(last_logits(loaded, PROMPTS), unpatched, atol=1e-6)


def test_no_hook_survives_an_exception_in_the_forward_pass(loaded):
    import torch

    unpatched = last_logits(loaded, PROMPTS)
    four = add_at_positions(loaded, 1, torch.ones(4, loaded.hidden_size), [0, 1, 2, 3])
    with pytest.raises(StimulusError, match="positions="), four:  # four positions for a batch of three rows
        last_logits(loaded, PROMPTS)
    assert hooks_left(loaded.model) == 0
    pushed = add_at_positions(loaded, 0, torch.ones(3, loaded.hidden_size), padded_last(PROMPTS))
    with pytest.raises(RuntimeError, match="interrupted"), pushed:
        raise RuntimeError("interrupted")
    assert hooks_left(loaded.model) == 0
    assert torch.equal(last_logits(loaded, PROMPTS), unpatched)


def test_a_layer_or_vectors_that_do_not_fit_are_refused_naming_the_parameter(loaded):
    import torch

    with pytest.raises(StimulusError, match="layer=9") as refused, add_at_positions(loaded, 9, torch.zeros(1, 32), [0]):
        pass
    assert refused.value.parameters == ("layer",)
    with pytest.raises(StimulusError, match="vectors="), add_at_positions(loaded, 0, torch.zeros(2, 33), [0, 0]):
        pass
    assert hooks_left(loaded.model) == 0
