"""The registry of model sources: each kind locates its specs in the resolver's order, turns a
user's choice into a spec, and turns a stored source back into the spec that loads it again."""

from __future__ import annotations

import shutil

import pytest

from magdash.errors import MagdashError, ModelLoadError
from magdash.sources import (
    KINDS_BY_NAME,
    SOURCE_KINDS,
    model_hint,
    resolve_model,
    spec_for_source,
    spec_from_choice,
)
from magdash.sources.builtin import builtin_model_path
from tests.sources.test_ollama import fake_ollama
from tests.support import ROOT, require_builtin


def test_every_kind_declares_what_the_pages_and_the_help_show():
    assert [kind.name for kind in SOURCE_KINDS] == ["builtin", "ollama", "gguf", "folder", "hf-cache"]
    for kind in SOURCE_KINDS:
        assert kind.label and kind.hint and kind.example
        assert kind.hint in model_hint()
    assert "@random" in model_hint()
    assert KINDS_BY_NAME["builtin"].choices() == ["minilm", "smollm2", "gemma3-270m"]


def test_a_spec_from_each_kind_of_choice(tmp_path, monkeypatch):
    assert spec_from_choice("builtin", "minilm") == "minilm"
    assert spec_from_choice("builtin", "minilm", control=True) == "minilm@random"
    assert spec_from_choice("hf-cache", "org/name", control=True, seed=7) == "org/name@random:7"
    assert spec_from_choice("folder", str(tmp_path)) == str(tmp_path.resolve())
    model_file = tmp_path / "model.gguf"
    model_file.write_bytes(b"GGUF")
    assert spec_from_choice("gguf", str(model_file), control=True) == f"{model_file.resolve()}@random"
    assert spec_from_choice("ollama", "llama3.2:1b") == "ollama:llama3.2:1b"
    assert spec_from_choice("ollama", "ollama:qwen2") == "ollama:qwen2"
    (tmp_path / "notes.txt").write_text("x")
    cases = [
        ("folder", str(tmp_path / "missing"), "does not exist"),
        ("folder", str(model_file), "is a file, not a folder"),
        ("gguf", str(tmp_path / "notes.txt"), "not a .gguf file"),
        ("gguf", str(tmp_path), "not a .gguf file"),
        ("hf-cache", "", "no model chosen: give the id of a model already in your Hugging Face cache"),
        ("builtin", "llama", "no built-in model 'llama'"),
        ("folder", "x" * 5000, "cannot use"),
        ("smoke-signals", "x", "unknown kind of model source 'smoke-signals'"),
    ]
    for kind, value, message in cases:
        with pytest.raises(MagdashError, match=message):
            spec_from_choice(kind, value)


def test_the_resolver_asks_the_kinds_in_order_and_names_them_all_when_none_knows_a_spec(tmp_path, tiny_llama):
    assert resolve_model("minilm").source == "builtin:minilm"
    folder = resolve_model(str(tiny_llama))
    assert folder.source == f"folder:{tiny_llama.resolve()}" and folder.fingerprint.startswith("sha256:")
    control = resolve_model(f"{tiny_llama}@random:3")
    assert control.is_random and control.seed == 3 and control.fingerprint.startswith("random:seed=3:config=")
    with pytest.raises(ModelLoadError) as refused:
        resolve_model("no-such-model")
    for kind in SOURCE_KINDS:
        assert kind.hint in str(refused.value)
    with pytest.raises(ModelLoadError, match="cannot read"):
        resolve_model("minilm@randomly")


def test_a_stored_source_gives_back_the_spec_that_loads_it_while_the_weights_are_at_hand(tmp_path, tiny_llama):
    copy = shutil.copytree(tiny_llama, tmp_path / "copy")
    stored = resolve_model(str(copy)).source
    assert spec_for_source(stored) == str(copy.resolve())
    assert resolve_model(spec_for_source(stored)).source == stored
    assert spec_for_source("builtin:minilm") == "minilm"
    assert spec_for_source("hf-cache:org/name") == "org/name"
    gguf_file = tmp_path / "model.gguf"
    gguf_file.write_bytes(b"GGUF")
    assert spec_for_source(f"gguf:{gguf_file}") == str(gguf_file)
    shutil.rmtree(copy)
    gguf_file.unlink()
    for gone in (stored, f"gguf:{gguf_file}", "builtin:llama", "import", "ollama:nothing-pulled", "mystery:x"):
        assert spec_for_source(gone) is None, gone


@pytest.mark.slow
def test_gguf_and_ollama_sources_round_trip_through_the_store_name(tmp_path, monkeypatch):
    require_builtin("smollm2")
    smollm2 = builtin_model_path("smollm2")
    assert spec_for_source(resolve_model("smollm2").source) == "smollm2"
    gguf_source = resolve_model(str(smollm2)).source
    assert gguf_source == f"gguf:{smollm2.resolve()}" and spec_for_source(gguf_source) == str(smollm2.resolve())
    monkeypatch.setenv("OLLAMA_MODELS", str(fake_ollama(tmp_path / "ollama", smollm2)))
    source = resolve_model("ollama:smol").source
    assert source == "ollama:smol" and spec_for_source(source) == "ollama:smol"
    assert resolve_model(spec_for_source(source)).fingerprint == resolve_model(str(smollm2)).fingerprint


def test_a_name_too_long_for_the_file_system_is_no_model_not_a_crash(tmp_path, capsys):
    from magdash.cli import main

    with pytest.raises(ModelLoadError, match="no model 'x"):
        resolve_model("x" * 5000)  # an OSError (name too long) before the registry
    assert main(["extract", "--model", "y" * 5000, "--store", str(tmp_path / "s.duckdb")]) == 2
    assert "no model 'yyy" in capsys.readouterr().err


def test_the_hugging_face_hint_names_the_command_line_huggingface_hub_installs():
    """huggingface_hub 1.0 replaced ``huggingface-cli`` by ``hf``: the hint names what is installed."""
    from importlib.metadata import entry_points

    from magdash.sources.hf_cache import KIND

    scripts = {entry.name: entry.value for entry in entry_points(group="console_scripts")}
    assert scripts.get("hf", "").startswith("huggingface_hub")
    assert "`hf download ORG/NAME`" in KIND.nothing_to_choose
    for path in [*(ROOT / "magdash").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]:
        assert "huggingface-cli" not in path.read_text(encoding="utf-8"), path
