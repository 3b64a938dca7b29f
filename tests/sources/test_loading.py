"""Loading a model safely: a checkpoint lacking weights of the base model is refused, never filled at random."""

from __future__ import annotations

import re
import shutil

import pytest

from magdash.errors import ModelLoadError
from magdash.sources import load_model


@pytest.mark.parametrize("dropped", ["model.embed_tokens.weight", "model.layers.1.self_attn.q_proj.weight"])
def test_a_checkpoint_missing_a_weight_is_refused_not_filled_at_random(tiny_llama, tmp_path, dropped):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "incomplete"
    shutil.copytree(tiny_llama, folder)
    tensors = load_file(folder / "model.safetensors")
    del tensors[dropped]
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelLoadError, match=f"lacks weights the model needs \\({re.escape(dropped.removeprefix('model.'))}"):
        load_model(str(folder), device="cpu")
    assert load_model(str(tiny_llama), device="cpu").n_blocks == 3  # the complete folder loads
