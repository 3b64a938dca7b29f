"""Model names (what extraction stores a model as, the name of its @random control) and the
refusal of incomplete checkpoints."""

from __future__ import annotations

import re
import shutil

import pytest

from magdash.errors import ModelLoadError
from magdash.models import DTYPES, control_name, default_name, load_model
from magdash.stimuli import POSITIONS


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("spec", ["minilm", "/models/Meta-Llama-3-8B", "meta-llama/Llama-3:beta", "C:/models/x"])
def test_the_control_of_a_stored_model_is_the_name_extracting_its_control_gives(spec, dtype, position):
    # `extract --model SPEC@random --dtype D --position P` stores the control under this name.
    expected = default_name(f"{spec}@random", dtype, position)
    assert control_name(default_name(spec, dtype, position)) == expected


def test_suffixed_names_keep_their_suffixes_after_the_marker():
    assert control_name("minilm") == "minilm@random"
    assert control_name("minilm:float16") == "minilm@random:float16"
    assert control_name("minilm:bfloat16:first") == "minilm@random:bfloat16:first"
    assert control_name("minilm:mean") == "minilm@random:mean"


@pytest.mark.parametrize("name", ["minilm@random", "minilm@random:float16", "minilm@random:7:first"])
def test_a_control_is_its_own_control(name):
    assert control_name(name) == name


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
