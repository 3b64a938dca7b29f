"""Files that would run code are refused: a pickle checkpoint whose unpickling creates a file, an
npz holding a pickled object array, and a model that ships its own Python code. Each attack
leaves a marker file if it runs; every test asserts the marker never appears."""

from __future__ import annotations

import json
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from magdash.cli import main


class CreatesMarker:
    """Unpickling this calls ``Path.touch(marker)``: the harmless stand-in for any code."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_the_stand_in_attack_does_run_when_unpickled(tmp_path):
    marker = tmp_path / "ran"
    pickle.loads(pickle.dumps(CreatesMarker(marker)))
    assert marker.exists()


def test_a_pickle_checkpoint_is_refused_and_never_unpickled(tmp_path, capsys):
    marker = tmp_path / "ran"
    folder = tmp_path / "pickled-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "architectures": ["LlamaForCausalLM"]}))
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"weight": CreatesMarker(marker)}))
    store = tmp_path / "store.duckdb"
    assert main(["extract", "--model", str(folder), "--store", str(store), "--magnitudes", "1-5"]) == 2
    error = capsys.readouterr().err
    assert "pickle" in error and "--allow-pickle" in error and "Traceback" not in error
    assert not marker.exists()


def test_an_npz_with_a_pickled_object_array_is_refused(tmp_path, capsys):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.npz"
    with zipfile.ZipFile(path, "w") as archive:
        with archive.open("per_carrier.npy", "w") as member:
            np.save(member, np.array([CreatesMarker(marker)], dtype=object), allow_pickle=True)
        with archive.open("magnitudes.npy", "w") as member:
            np.save(member, np.array([1.0]))
    assert main(["import", str(path), "--name", "evil", "--store", str(tmp_path / "store.duckdb")]) == 2
    assert "pickle" in capsys.readouterr().err
    assert not marker.exists()


@pytest.fixture
def model_with_its_own_code(tmp_path, tiny_llama) -> tuple[Path, Path]:
    """The tiny Llama's weights and tokenizer, with a config that asks for shipped Python code."""
    import shutil

    marker = tmp_path / "ran"
    folder = tmp_path / "remote-code-model"
    shutil.copytree(tiny_llama, folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="shipped", auto_map={
        "AutoConfig": "configuration_shipped.ShippedConfig",
        "AutoModel": "modeling_shipped.ShippedModel",
        "AutoModelForCausalLM": "modeling_shipped.ShippedModel",
    })
    (folder / "config.json").write_text(json.dumps(config))
    attack = f"from pathlib import Path\nPath({str(marker)!r}).touch()\n"
    (folder / "configuration_shipped.py").write_text(attack + "from transformers import LlamaConfig as ShippedConfig\n")
    (folder / "modeling_shipped.py").write_text(attack + "from transformers import LlamaModel as ShippedModel\n")
    return folder, marker


def test_shipped_model_code_is_not_run_without_the_flag(model_with_its_own_code, tmp_path, capsys):
    folder, marker = model_with_its_own_code
    store = tmp_path / "store.duckdb"
    assert main(["extract", "--model", str(folder), "--store", str(store), "--magnitudes", "1-5", "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "--trust-remote-code" in error and "Traceback" not in error
    assert not marker.exists()
