"""Ollama names: manifest -> GGUF blob, in a fake models folder laid out as Ollama lays it out,
its blob being the real smollm2 GGUF file; and a clear message for everything missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from magdash.errors import ModelLoadError
from magdash.extraction import extract
from magdash.sources import resolve_model
from magdash.sources.builtin import builtin_model_path
from magdash.sources.ollama import installed_models, manifest_path, resolve_ollama
from magdash.stimuli import PAPER_CARRIERS, StimulusSet
from tests.support import require_builtin

MODEL_LAYER = "application/vnd.ollama.image.model"


def fake_ollama(root: Path, blob_source: Path | None, reference: tuple[str, ...] = ("library", "smol", "latest"),
                media_type: str = MODEL_LAYER) -> Path:
    """``root`` laid out as ``ollama pull`` leaves it: a manifest and a blob named by its digest."""
    digest = "0" * 64
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    if blob_source is not None:
        from magdash.sources.gguf import gguf_info

        digest = gguf_info(blob_source).sha256
        blob = root / "blobs" / f"sha256-{digest}"
        if not blob.exists():
            blob.symlink_to(blob_source)
    manifest = root / "manifests" / "registry.ollama.ai" / Path(*reference)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({
        "schemaVersion": 2,
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "digest": "sha256:" + "1" * 64},
        "layers": [
            {"mediaType": media_type, "digest": f"sha256:{digest}", "size": 1},
            {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "2" * 64, "size": 1},
        ],
    }))
    return root


@pytest.fixture
def smollm2_file() -> Path:
    require_builtin("smollm2")
    return builtin_model_path("smollm2")


def test_manifest_paths_follow_ollama_names(tmp_path):
    root = tmp_path / "manifests" / "registry.ollama.ai"
    assert manifest_path("llama3.2", tmp_path) == root / "library" / "llama3.2" / "latest"
    assert manifest_path("llama3.2:1b", tmp_path) == root / "library" / "llama3.2" / "1b"
    assert manifest_path("me/mine:q4", tmp_path) == root / "me" / "mine" / "q4"
    assert manifest_path("hf.co/org/model:Q4_K_M", tmp_path) == tmp_path / "manifests" / "hf.co" / "org" / "model" / "Q4_K_M"
    for bad in ("", ":tag", "../../etc/passwd", "a/b/c/d"):
        with pytest.raises(ModelLoadError, match="cannot read the Ollama name"):
            manifest_path(bad, tmp_path)


def test_an_ollama_name_resolves_to_its_gguf_blob(smollm2_file, tmp_path, monkeypatch):
    root = fake_ollama(tmp_path / "ollama", smollm2_file)
    fake_ollama(root, smollm2_file, ("me", "smol", "q4"))
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    assert resolve_ollama("smol").resolve() == smollm2_file.resolve()
    assert installed_models(root) == ["me/smol:q4", "smol:latest"]
    source = resolve_model("ollama:smol:latest")
    assert source.source == "ollama:smol:latest"
    assert source.fingerprint == resolve_model("smollm2").fingerprint  # the same file, the same weights
    assert source.gguf.quantization == "Q4_1"
    assert resolve_model("ollama:me/smol:q4@random").is_random


def test_extracting_an_ollama_model_reuses_the_conversion(smollm2, tmp_path, monkeypatch, store):
    root = fake_ollama(tmp_path / "ollama", builtin_model_path("smollm2"))
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    stimuli = StimulusSet("two", PAPER_CARRIERS[:1], (7, 42))
    result = extract("ollama:smol", stimuli, store, device="cpu")
    assert result.extracted == 2
    record = store.model_record("ollama:smol")
    assert record.source == "ollama:smol"
    assert record.fingerprint == smollm2.source.fingerprint
    assert record.architecture == "LlamaForCausalLM" and record.n_layers == 32


def test_missing_ollama_pieces_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "nowhere"))
    with pytest.raises(ModelLoadError, match=r"no Ollama models folder .*\(ollama pull smol\)"):
        resolve_model("ollama:smol")
    root = fake_ollama(tmp_path / "ollama", None)
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    with pytest.raises(ModelLoadError, match=r"Ollama has no model 'other'.*models there: smol:latest"):
        resolve_model("ollama:other")
    with pytest.raises(ModelLoadError, match="are missing: pull it again"):
        resolve_model("ollama:smol")
    fake_ollama(root, None, ("library", "adapter", "latest"), media_type="application/vnd.ollama.image.adapter")
    with pytest.raises(ModelLoadError, match="lists no model weights"):
        resolve_model("ollama:adapter")
    (root / "manifests" / "registry.ollama.ai" / "library" / "smol" / "latest").write_text("{not json")
    with pytest.raises(ModelLoadError, match="cannot read the Ollama manifest"):
        resolve_model("ollama:smol")
