"""GGUF files: metadata read without transformers, the identity of a GGUF model, the conversion
cache, and ``--model file.gguf`` through the CLI; on the real smollm2 and gemma3-270m files."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from magdash.cli import main
from magdash.environment import transformers_version
from magdash.errors import ModelLoadError
from magdash.sources import load_model, resolve_model
from magdash.sources.builtin import builtin_model_path
from magdash.sources.gguf import (
    CONVERSION_VERSION,
    MODEL_CACHE_ENV,
    converted_folder,
    gguf_info,
    model_cache_dir,
    quantization,
    read_metadata,
    weights_note,
)
from magdash.store import Store
from tests.support import require_builtin, write_tiny_gguf


@pytest.fixture
def smollm2_file() -> Path:
    require_builtin("smollm2")
    return builtin_model_path("smollm2")


def test_metadata_and_identity_are_read_from_the_file(smollm2_file):
    metadata = read_metadata(smollm2_file)
    assert metadata["general.architecture"] == "llama"
    assert (metadata["llama.block_count"], metadata["llama.embedding_length"]) == (30, 576)
    assert metadata["tokenizer.ggml.tokens"] == 49152  # arrays are kept as their lengths
    info = gguf_info(smollm2_file)
    assert info.quantization == "Q4_1"
    assert info.sha256 == hashlib.sha256(smollm2_file.read_bytes()).hexdigest()
    source = resolve_model(str(smollm2_file))
    assert source.source == f"gguf:{smollm2_file.resolve()}"
    assert source.fingerprint == f"gguf:Q4_1:sha256:{info.sha256[:32]}:conversion-v{CONVERSION_VERSION}"
    assert quantization(source.fingerprint) == "Q4_1"
    assert weights_note(source.fingerprint, "bfloat16") == "quantized (Q4_1 GGUF), dequantized to bfloat16"
    assert weights_note("sha256:abc", "float32") == ""
    ids = {source.model_id(dtype, "last", "5.0") for dtype in ("float32", "bfloat16")}
    ids.add(source.model_id("float32", "last", "5.1"))
    assert len(ids) == 3  # dtype and transformers version are part of the identity
    control = resolve_model(f"{smollm2_file}@random:3")
    assert control.is_random and control.fingerprint == f"random:seed=3:gguf-config={info.config_digest}"
    assert quantization(control.fingerprint) is None


@pytest.mark.slow
def test_gemma_is_assembled_once_and_read_as_q4_k_m(tmp_path):
    require_builtin("gemma3-270m")
    source = resolve_model("gemma3-270m", model_cache=tmp_path)
    assert source.path == tmp_path / "gemma3-270m" / "gemma-3-270m-q4_k_m.gguf"
    assert source.fingerprint.startswith("gguf:Q4_K_M:sha256:a5fd3b62230aa5ec")
    assert source.gguf.architecture == "gemma3"
    modified = source.path.stat().st_mtime_ns
    assert resolve_model("gemma3-270m", model_cache=tmp_path).path.stat().st_mtime_ns == modified
    assert [p.name for p in source.path.parent.iterdir()] == [source.path.name]  # no partial file left


def test_a_folder_with_one_gguf_is_that_model_and_two_are_refused(smollm2_file, tmp_path):
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "model.gguf").symlink_to(smollm2_file)
    assert resolve_model(str(folder)).fingerprint == resolve_model("smollm2").fingerprint
    (folder / "other.gguf").symlink_to(smollm2_file)
    with pytest.raises(ModelLoadError, match="holds 2 GGUF files .*give the path of one of them"):
        resolve_model(str(folder))


def test_files_that_are_not_gguf_are_refused_with_a_message(smollm2_file, tmp_path):
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(ModelLoadError, match="is not a GGUF file"):
        resolve_model(str(fake))
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(smollm2_file.read_bytes()[:4096])
    with pytest.raises(ModelLoadError, match="cannot read the GGUF file"):
        resolve_model(str(truncated))
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    with pytest.raises(ModelLoadError, match="is a file: give a .gguf file or a model folder"):
        resolve_model(str(notes))


def _key(name: bytes, value_type: int) -> bytes:
    return struct.pack("<Q", len(name)) + name + struct.pack("<I", value_type)


_ARRAY, _UINT32 = 9, 4
HOSTILE_GGUF_HEADERS = {  # (tensor count, key count, what follows, what the refusal says)
    "key length 2^63": (0, 1, struct.pack("<Q", 2**63), "metadata key 0 needs 9,223,372,036,854,775,808 bytes but only"),
    "20,000 nested array headers": (0, 1, _key(b"a", _ARRAY) + struct.pack("<IQ", _ARRAY, 1) * 20_000
                                    + struct.pack("<IQ", _UINT32, 0), "nests arrays more than 8 deep"),
    "2^40 tensors": (2**40, 0, b"", "1,099,511,627,776 tensors, more than its"),
    "array count 2^62": (0, 1, _key(b"a", _ARRAY) + struct.pack("<IQ", _UINT32, 2**62), "items of 'a', more than its"),
    "a tensor with 2^31 dimensions": (1, 0, struct.pack("<Q", 1) + b"t" + struct.pack("<I", 2**31),
                                      "tensor 't' has 2,147,483,648 dimensions; GGUF allows at most 4"),
}


@pytest.mark.parametrize("case", HOSTILE_GGUF_HEADERS)
def test_a_hostile_gguf_header_is_refused_with_a_message_naming_the_file(case, tmp_path):
    """Each once raised OverflowError or RecursionError, or passed the metadata reader to fail in
    the conversion with struct.error."""
    n_tensors, n_keys, body, says = HOSTILE_GGUF_HEADERS[case]
    path = tmp_path / "hostile.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_keys) + body + bytes(256))
    with pytest.raises(ModelLoadError, match=f"cannot read the GGUF file '{path}': .*{says}"):
        resolve_model(str(path))


def test_a_gguf_whose_tensors_run_past_its_end_is_refused_and_a_whole_one_read(tmp_path):
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    assert read_metadata(path) == {"general.architecture": "llama", "llama.block_count": 2,
                                   "general.name": "tiny", "tokenizer.ggml.tokens": 3}
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ModelLoadError, match="the 64 bytes of tensor 'u' at offset 128 run past the end of the file"):
        read_metadata(path)


def test_the_model_cache_is_chosen_explicitly_then_by_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(MODEL_CACHE_ENV, str(tmp_path / "env"))
    assert model_cache_dir(tmp_path / "given") == tmp_path / "given"
    assert model_cache_dir() == tmp_path / "env"
    monkeypatch.delenv(MODEL_CACHE_ENV)
    assert model_cache_dir() == Path("cache") / "models"


def test_the_conversion_is_kept_and_reused(smollm2):
    """The session's smollm2 fixture converted the file once; asking again converts nothing."""
    cache = model_cache_dir()
    folder = converted_folder(smollm2.source.gguf, "float32", cache)
    marker = folder / "magdash-conversion.json"
    written = marker.stat().st_mtime_ns
    record = json.loads(marker.read_text())
    assert record["sha256"] == smollm2.source.gguf.sha256
    assert (record["quantization"], record["dtype"]) == ("Q4_1", "float32")
    assert converted_folder(smollm2.source.gguf, "float32", cache) == folder
    assert marker.stat().st_mtime_ns == written
    assert sorted(p.name for p in folder.glob("*.safetensors")) == ["model.safetensors"]
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
    assert not [p for p in cache.iterdir() if p.name.startswith(".converting-")]


@pytest.mark.slow
def test_the_conversion_keeps_the_tied_input_embedding_so_every_load_is_the_same_model(smollm2):
    """SmolLM2 ties its LM head to its input embedding: the converted folder must hold the
    embedding (the base model has no head), or each load would start from random embeddings."""
    import torch
    from safetensors import safe_open

    folder = converted_folder(smollm2.source.gguf, "float32", model_cache_dir())
    with safe_open(folder / "model.safetensors", "pt") as weights:
        names = set(weights.keys())
    assert "model.embed_tokens.weight" in names and "lm_head.weight" not in names
    again = load_model("smollm2", device="cpu")
    first, second = smollm2.model.state_dict(), again.model.state_dict()
    assert first.keys() == second.keys()
    assert all(torch.equal(first[name], second[name]) for name in first)


@pytest.mark.slow
def test_cli_extracts_a_gguf_file_and_lists_it_as_quantized(smollm2, smollm2_file, tmp_path, capsys):
    store_path = tmp_path / "s.duckdb"
    status = main(["extract", "--model", str(smollm2_file), "--magnitudes", "3,30", "--store", str(store_path),
                   "--model-cache", os.environ[MODEL_CACHE_ENV], "--device", "cpu", "--quiet"])
    assert status == 0
    name = str(smollm2_file)
    record = Store(store_path).model_record(name)
    assert record.fingerprint == smollm2.source.fingerprint
    assert record.architecture == "LlamaForCausalLM"
    assert "extracted 10 sentences" in capsys.readouterr().out
    status = main(["extract", "--model", str(tmp_path / "missing.gguf"), "--store", str(store_path)])
    assert status == 2
    assert capsys.readouterr().err.startswith("magdash: error: no model")


@pytest.mark.slow
def test_a_cold_conversion_gives_the_weights_of_the_shared_cache(smollm2, tmp_path):
    """The suite keeps conversions between runs; converting afresh, as a new user does, must give
    the very folder the shared cache holds (tensors bit for bit, config and tokenizer), or the
    conversion changed without a CONVERSION_VERSION bump and the shared cache is stale.

    When the shared folder was converted in this very run (a cold cache, as on a fresh CI
    machine), that conversion was the cold one, by the code under test: converting a second
    time would compare the code with itself, so the folder alone is checked."""
    from safetensors.numpy import load_file

    shared = converted_folder(smollm2.source.gguf, "float32", model_cache_dir())
    marker = shared / "magdash-conversion.json"
    if marker.stat().st_mtime >= float(os.environ["MAGDASH_TEST_RUN_STARTED"]):
        assert json.loads(marker.read_text())["sha256"] == smollm2.source.gguf.sha256
        assert sorted(p.name for p in shared.iterdir()) == sorted(
            ["chat_template.jinja", "config.json", "magdash-conversion.json", "model.safetensors",
             "tokenizer.json", "tokenizer_config.json"])
        return
    cold = converted_folder(smollm2.source.gguf, "float32", tmp_path)
    assert cold.parent == tmp_path and cold.name == shared.name
    expected, got = load_file(shared / "model.safetensors"), load_file(cold / "model.safetensors")
    assert sorted(got) == sorted(expected)
    assert all(np.array_equal(got[name].view(np.uint8), expected[name].view(np.uint8)) for name in expected)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        assert (cold / name).read_bytes() == (shared / name).read_bytes(), name
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == [cold.name]


@pytest.mark.slow
def test_a_second_process_waits_for_a_conversion_under_way_and_converts_nothing(smollm2_file, tmp_path):
    """Two processes asking for the same conversion at once: one converts, the other waits for
    its lock and finds the finished folder (the conversion itself is replaced by a stand-in that
    logs each call and takes a second)."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "import magdash.sources.gguf as g\n"
        "def fake(info, dtype, target):\n"
        "    with open(sys.argv[2], 'a') as log: log.write('convert\\n')\n"
        "    time.sleep(1.0)\n"
        "    (target / 'model.safetensors').write_bytes(b'x')\n"
        "g._convert = fake\n"
        "print(g.converted_folder(g.gguf_info(Path(sys.argv[3])), 'float32', Path(sys.argv[1])))\n"
    )
    calls = tmp_path / "calls.log"
    cache = tmp_path / "cache"
    command = [sys.executable, "-c", script, str(cache), str(calls), str(smollm2_file)]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs = [process.communicate(timeout=120) for process in (first, second)]
    assert [process.returncode for process in (first, second)] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0] and Path(outputs[0][0].strip()).is_dir()
    assert calls.read_text() == "convert\n"
    assert not [p for p in cache.iterdir() if p.name.startswith(".converting-")]


def _fake_conversion(calls: list, also=None):
    def convert(info, dtype, target):
        calls.append(dtype)
        (target / "model.safetensors").write_bytes(b"x")
        if also is not None:
            also(target)
    return convert


def test_a_conversion_waits_for_one_under_way_in_this_process_too(smollm2_file, tmp_path, monkeypatch, caplog):
    import fcntl
    import logging
    import threading
    import time

    import magdash.sources.gguf as gguf

    calls: list = []
    monkeypatch.setattr(gguf, "_convert", _fake_conversion(calls))
    info = gguf_info(smollm2_file)
    folder_name = gguf.converted_name(info, "float32", transformers_version())
    tmp_path.mkdir(exist_ok=True)
    holder = open(tmp_path / f".{folder_name}.lock", "a")  # noqa: SIM115 - another converter holds it
    fcntl.flock(holder, fcntl.LOCK_EX)
    result = {}
    with caplog.at_level(logging.WARNING, logger="magdash.sources.gguf"):
        worker = threading.Thread(target=lambda: result.setdefault("folder", converted_folder(info, "float32", tmp_path)))
        worker.start()
        deadline = time.monotonic() + 120
        while "waiting for another process" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.01)
        assert calls == []  # nothing converted while the lock is held
        holder.close()
        worker.join(120)
    assert "waiting for another process converting" in caplog.text
    assert calls == ["float32"] and (result["folder"] / "magdash-conversion.json").exists()


def test_a_conversion_finished_by_another_process_meanwhile_is_kept(smollm2_file, tmp_path, monkeypatch):
    import magdash.sources.gguf as gguf

    info = gguf_info(smollm2_file)
    final = tmp_path / gguf.converted_name(info, "float32", transformers_version())

    def theirs(_target):
        final.mkdir()
        (final / "magdash-conversion.json").write_text("{}")

    monkeypatch.setattr(gguf, "_convert", _fake_conversion([], also=theirs))
    assert converted_folder(info, "float32", tmp_path) == final
    assert (final / "magdash-conversion.json").read_text() == "{}"  # theirs, not replaced
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".converting-")]


def test_a_conversion_that_cannot_be_written_is_a_message(smollm2_file, tmp_path, monkeypatch):
    import magdash.sources.gguf as gguf

    info = gguf_info(smollm2_file)
    (tmp_path / "a-file").write_text("not a folder")
    with pytest.raises(ModelLoadError, match="cannot write to the model cache"):
        converted_folder(info, "float32", tmp_path / "a-file" / "cache")
    final = tmp_path / gguf.converted_name(info, "float32", transformers_version())
    monkeypatch.setattr(gguf, "_convert", _fake_conversion([], also=lambda _t: (final.mkdir(), (final / "x").touch())))
    with pytest.raises(ModelLoadError, match="cannot write the converted model"):
        converted_folder(info, "float32", tmp_path)  # the place is taken by an unfinished folder
    assert gguf.find_converted(info, tmp_path, "0.0") is None


@pytest.mark.slow
def test_a_gguf_transformers_cannot_read_is_refused_with_a_message(smollm2_file, tmp_path):
    import dataclasses

    import magdash.sources.gguf as gguf

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(smollm2_file.read_bytes()[:2_000_000])
    info = dataclasses.replace(gguf_info(smollm2_file), path=broken)
    with pytest.raises(ModelLoadError, match="transformers cannot read broken.gguf"):
        gguf._convert(info, "float32", tmp_path)


def test_loading_words_say_a_conversion_is_coming_the_first_time_only(smollm2_file, tmp_path):
    import magdash.sources.gguf as gguf
    from magdash.sources import loading_words

    source = resolve_model(str(smollm2_file), model_cache=tmp_path)
    spec = source.spec
    assert loading_words(source, "float32") == f"converting {spec}'s GGUF file to float32 (first time only)"
    final = tmp_path / gguf.converted_name(source.gguf, "float32", transformers_version())
    final.mkdir()
    (final / "magdash-conversion.json").write_text("{}")
    assert loading_words(source, "float32") == f"loading {spec}"
    assert "converting" in loading_words(source, "bfloat16")  # a conversion is per dtype
    assert loading_words(resolve_model("minilm"), "float32") == "loading minilm"
