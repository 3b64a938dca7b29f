"""Model names: what an extraction stores a model as, its variants' and its @random control's."""

from __future__ import annotations

import pytest

from magdash.names import control_name, default_name, model_of_control, split_options, variant_name
from magdash.params import DTYPES
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


@pytest.mark.parametrize("model", ["minilm", "minilm:float16", "minilm:bfloat16:first", "org/model:v2"])
def test_a_control_stands_beside_the_model_it_is_the_control_of(model):
    assert model_of_control(control_name(model)) == model
    assert model_of_control(model) == model
    assert model_of_control("minilm@random:7") == "minilm" and model_of_control("minilm@random:7:first") == "minilm:first"


def test_a_variant_name_replaces_the_options_of_the_name_it_starts_from():
    assert variant_name("minilm", dtype="float16") == "minilm:float16"
    assert variant_name("minilm:float16", position="first") == "minilm:first"
    assert variant_name("minilm", dtype="bfloat16", position="mean") == "minilm:bfloat16:mean"
    assert variant_name("minilm:bfloat16:mean", dtype="bfloat16") == "minilm:bfloat16"
    assert split_options("org/model:v2:bfloat16:first") == ("org/model:v2", ":bfloat16:first")
