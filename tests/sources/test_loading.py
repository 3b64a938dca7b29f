"""Loading a model safely: a checkpoint lacking weights of the base model is refused, never filled at random."""

from __future__ import annotations

import json
import re
import shutil
import struct

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


def _header(tensors: dict) -> bytes:
    raw = json.dumps(tensors).encode()
    return struct.pack("<Q", len(raw)) + raw


HOSTILE_SAFETENSORS = {  # what model.safetensors holds, and what the refusal says
    "header length 2^63": (struct.pack("<Q", 2**63) + b"{}", "its header says it is 9,223,372,036,854,775,808 bytes"),
    "truncated header": (struct.pack("<Q", 4096) + b'{"a": {"dtype": "F32"', "its header says it is 4,096 bytes long"),
    "offsets past the end": (_header({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 1 << 40]}}) + bytes(16),
                             "tensor 'w' lies at bytes 0 to 1,099,511,627,776, past the 16 it holds"),
    "header not JSON": (struct.pack("<Q", 4) + b"\xff\xfe{}", "its header is not JSON"),
    "linked to a non-weights file": (None, "a link to .*notes.txt.*its header says it is"),
}


@pytest.mark.parametrize("case", HOSTILE_SAFETENSORS)
def test_a_broken_safetensors_file_is_refused_with_a_message_naming_it(case, tiny_llama, tmp_path):
    """Each once ended in an uncaught SafetensorError from inside transformers."""
    folder = tmp_path / "broken"
    shutil.copytree(tiny_llama, folder)
    weights = folder / "model.safetensors"
    content, says = HOSTILE_SAFETENSORS[case]
    weights.unlink()
    if content is None:
        (tmp_path / "notes.txt").write_text("my notes, not weights: " + "x" * 100)
        weights.symlink_to(tmp_path / "notes.txt")
    else:
        weights.write_bytes(content)
    with pytest.raises(ModelLoadError, match=f"'{re.escape(str(weights))}'.*{says}"):
        load_model(str(folder), device="cpu")
