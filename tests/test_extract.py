"""Extraction: hooks, pre-norm capture, number positions under padding, resume, MiniLM end to end."""

import hashlib
import time

import duckdb
import numpy as np
import pytest
import torch

from magdash.extraction import extract, forward_number_vectors, locate_numbers, out_of_memory_message
from magdash.sources import load_model
from magdash.stimuli import StimulusSet, make_item, paper_stimuli

SMALL_SET = StimulusSet(
    "small", ("There are {n} items.", "{n} was the value.", "Exactly {n} were measured."), (1, 7, 42, 347, 1000)
)


def _hf_reference(loaded, token_ids, position_index):
    """transformers' own hidden states of ``token_ids`` (a prepended BOS included) at a position."""
    model = loaded.model
    ids = torch.tensor([list(token_ids)])
    with torch.inference_mode():
        out = model(input_ids=ids, output_hidden_states=True)
    return [h[0, position_index].float().numpy() for h in out.hidden_states]


@pytest.mark.parametrize("family", ["tiny_llama", "tiny_mistral"])
@pytest.mark.slow
def test_pre_norm_capture_matches_manual_computation(family, request):
    loaded = load_model(str(request.getfixturevalue(family)), device="cpu")
    assert loaded.final_norm is not None
    item = make_item(1000, 0, "There are {n} items.")
    token_ids, number_tokens = locate_numbers(loaded, [item], "last")
    ours = forward_number_vectors(loaded, token_ids, number_tokens)[0]
    assert token_ids[0] == loaded.tokenizer(item.sentence)["input_ids"]  # the tokenizer's own BOS
    reference = _hf_reference(loaded, token_ids[0], number_tokens[0][0])
    n_blocks = loaded.n_blocks
    assert ours.shape == (n_blocks + 2, loaded.hidden_size)
    for layer in range(n_blocks):
        np.testing.assert_allclose(ours[layer], reference[layer], atol=1e-5)
    # The last block's output before the final RMSNorm, normed by hand, gives the post-norm vector.
    pre = ours[n_blocks].astype(np.float64)
    norm = loaded.final_norm
    manual = pre / np.sqrt(np.mean(pre**2) + norm.variance_epsilon) * norm.weight.detach().double().numpy()
    np.testing.assert_allclose(manual, ours[n_blocks + 1], atol=1e-5)
    np.testing.assert_allclose(ours[n_blocks + 1], reference[n_blocks], atol=1e-5)
    assert not np.allclose(ours[n_blocks], ours[n_blocks + 1], atol=1e-3)
    assert loaded.layer_labels[n_blocks].endswith("(pre-norm residual)")
    assert "post-norm" in loaded.layer_labels[-1]


def test_multi_token_numbers_are_located(tiny_llama, tiny_mistral):
    llama = load_model(str(tiny_llama), device="cpu")
    mistral = load_model(str(tiny_mistral), device="cpu")
    item = make_item(1000, 0, "There are {n} items.")
    ids, numbers = locate_numbers(llama, [item], "last")
    tokens = llama.tokenizer.convert_ids_to_tokens(ids[0])
    assert tokens[numbers[0][0]] == "0" and tokens[numbers[0][0] - 1] == "100"
    ids, numbers = locate_numbers(mistral, [item], "mean")
    tokens = mistral.tokenizer.convert_ids_to_tokens(ids[0])
    assert [tokens[i] for i in numbers[0]] == ["1", "0", "0", "0"]


@pytest.mark.parametrize("position", ["last", "first", "mean"])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_padding_does_not_change_vectors(tiny_mistral, position, padding_side):
    loaded = load_model(str(tiny_mistral), device="cpu")
    items = [make_item(m, 0, c) for m in (5, 1000, 123456) for c in ("{n} was the value.", "There are {n} items.")]
    token_ids, number_tokens = locate_numbers(loaded, items, position)
    assert len({len(ids) for ids in token_ids}) > 1
    batched = forward_number_vectors(loaded, token_ids, number_tokens, padding_side=padding_side)
    for row in range(len(items)):
        alone = forward_number_vectors(loaded, [token_ids[row]], [number_tokens[row]])[0]
        np.testing.assert_allclose(batched[row], alone, atol=2e-5)


def test_stored_vectors_under_a_new_name_register_that_name(tiny_llama, tmp_path):
    from magdash.store import Store

    store = Store(tmp_path / "store.duckdb")
    extract(str(tiny_llama), SMALL_SET, store, name="first", device="cpu")
    again = extract(str(tiny_llama), SMALL_SET, store, name="second", device="cpu")
    assert again.extracted == 0 and store.model_names() == ["first", "second"]
    np.testing.assert_array_equal(store.read_layer("second", "small", 2).vectors, store.read_layer("first", "small", 2).vectors)


def test_extract_is_content_addressed_and_resumes(tiny_llama, tmp_path):
    from magdash.store import Store

    clean = Store(tmp_path / "clean.duckdb")
    first = extract(str(tiny_llama), SMALL_SET, clean, batch_size=4, device="cpu")
    assert (first.extracted, first.already_stored) == (15, 0)
    again = extract(str(tiny_llama), SMALL_SET, clean, batch_size=4, device="cpu")
    assert again.extracted == 0 and again.already_stored == 15

    interrupted = Store(tmp_path / "interrupted.duckdb")
    polls = iter([False, True])
    stopped = extract(str(tiny_llama), SMALL_SET, interrupted, batch_size=4, device="cpu",
                      should_stop=lambda: next(polls, True))
    assert stopped.cancelled and stopped.extracted == 4
    assert len(interrupted.missing_item_keys(stopped.model_id, "small")) == 11
    resumed = extract(str(tiny_llama), SMALL_SET, interrupted, batch_size=4, device="cpu")
    assert (resumed.extracted, resumed.already_stored) == (11, 4)
    name = first.name
    for layer in range(clean.model_record(name).n_layers):
        a = clean.read_layer(name, "small", layer).vectors
        b = interrupted.read_layer(name, "small", layer).vectors
        np.testing.assert_allclose(a, b, atol=2e-5)


def test_a_fast_device_writes_few_large_shards_and_the_wait_for_the_store_is_counted(tiny_llama, store, monkeypatch):
    import magdash.extraction as extract_module
    from magdash.store import shards

    loaded = load_model(str(tiny_llama), device="cpu")
    missing, stored_as = store.start_extraction(SMALL_SET, "not-yet")
    assert missing == {item.key for item in SMALL_SET.items} and stored_as is None
    item_bytes = len(loaded.layer_labels) * loaded.hidden_size * 4
    # As on a GPU: the clock never forces a write, only the size does: 6 items a shard, batches of 4.
    monkeypatch.setattr(extract_module, "FLUSH_SECONDS", float("inf"))
    monkeypatch.setattr(shards, "WRITE_BATCH_BYTES", 6 * item_bytes)
    written = []
    original = store.write_vectors

    def slow_write(model_id, keys, vectors, norms):
        written.append(len(keys))
        time.sleep(0.2)
        return original(model_id, keys, vectors, norms)

    monkeypatch.setattr(store, "write_vectors", slow_write)
    result = extract(loaded, SMALL_SET, store, batch_size=4)
    assert written == [8, 7]  # 4 + 4 items reach 6 items' bytes; the 7 left are written at the end
    # the last write is always waited for, so at least its 0.2 s is the store's
    assert 0.2 <= result.store_seconds < result.seconds
    assert store.start_extraction(SMALL_SET, result.model_id) == (set(), result.name)


def test_random_control_has_same_shape_and_different_weights(tiny_llama, store):
    trained = extract(str(tiny_llama), SMALL_SET, store, device="cpu")
    control = extract(f"{tiny_llama}@random", SMALL_SET, store, device="cpu")
    assert control.model_id != trained.model_id
    assert store.model_record(control.name).is_random
    a = store.read_layer(trained.name, "small", 2).vectors
    b = store.read_layer(control.name, "small", 2).vectors
    assert a.shape == b.shape and not np.allclose(a, b)
    reseeded = extract(f"{tiny_llama}@random:1", SMALL_SET, store, device="cpu")
    assert reseeded.model_id != control.model_id


@pytest.mark.slow
def test_minilm_end_to_end(store):
    result = extract("minilm", paper_stimuli(), store, device="cpu")
    assert result.extracted == 130
    record = store.model_record("minilm")
    assert (record.n_blocks, record.hidden_size, record.n_layers) == (6, 384, 7)
    assert record.fingerprint.startswith("sha256:")
    layer = store.read_layer("minilm", "paper", 6)
    assert layer.vectors.shape == (26, 5, 384)
    assert np.isfinite(layer.vectors).all()
    loaded = load_model("minilm", device="cpu")
    item = next(i for i in paper_stimuli().items if i.magnitude == 150 and i.carrier_index == 1)
    ids, numbers = locate_numbers(loaded, [item], "last")
    assert loaded.sequence_start == "tokenizer" and ids[0] == loaded.tokenizer(item.sentence)["input_ids"]  # [CLS]
    reference = _hf_reference(loaded, ids[0], numbers[0][0])
    row = paper_stimuli().magnitudes.index(item.magnitude)
    for index in (0, 3, 6):
        stored = store.read_layer("minilm", "paper", index).vectors[row, item.carrier_index]
        np.testing.assert_allclose(stored, reference[index], atol=1e-4)


def test_capture_all_tokens_streams_every_real_token(tiny_llama):
    from magdash.extraction import capture_all_tokens

    loaded = load_model(str(tiny_llama), device="cpu")
    texts = ["There are 5 items.", "Exactly 1000 were measured.", "Hello world"]
    received: dict[int, list[np.ndarray]] = {}
    seen, left_out = capture_all_tokens(loaded, texts, lambda layer, v: received.setdefault(layer, []).append(v),
                                        batch_size=2)
    real_counts = [len(loaded.tokenizer(t)["input_ids"]) - 1 for t in texts]  # minus BOS
    # the tokenizer's BOS holds each text's first position, left out of the spectra and counted
    assert seen == sum(real_counts) and left_out == len(texts)
    assert sorted(received) == list(range(loaded.n_blocks + 2))
    stacked = {layer: np.concatenate(chunks) for layer, chunks in received.items()}
    assert all(v.shape == (seen, loaded.hidden_size) for v in stacked.values())
    ids = torch.tensor([loaded.tokenizer(texts[2])["input_ids"]])
    with torch.inference_mode():
        hidden = loaded.model(input_ids=ids, output_hidden_states=True).hidden_states
    # "Hello world" is the shortest text, so it comes first after sorting by length.
    np.testing.assert_allclose(stacked[1][:2], hidden[1][0, 1:].numpy(), atol=1e-5)


def _tiny_from_config(folder, family):
    from transformers import (
        AutoTokenizer,
        GemmaConfig,
        GemmaForCausalLM,
        GPT2Config,
        GPT2LMHeadModel,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    from tests.support import build_tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    build_tokenizer(folder, digit_chunk=1)
    vocab = len(AutoTokenizer.from_pretrained(folder))
    torch.manual_seed(7)
    if family == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, n_positions=64))
    elif family == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64))
    else:
        model = GemmaForCausalLM(GemmaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                             max_position_embeddings=64))
    model.save_pretrained(folder, safe_serialization=True)
    return folder


@pytest.mark.parametrize("family", ["gpt2", "qwen2", "gemma"])
def test_other_decoder_families(family, tmp_path):
    folder = _tiny_from_config(tmp_path / family, family)
    loaded = load_model(str(folder), device="cpu")
    assert loaded.final_norm is not None and loaded.n_blocks == 2
    items = [make_item(m, 0, "There are {n} items.") for m in (7, 1000)]
    token_ids, number_tokens = locate_numbers(loaded, items, "last")
    ours = forward_number_vectors(loaded, token_ids, number_tokens, padding_side="left")
    for row in range(len(items)):
        reference = _hf_reference(loaded, token_ids[row], number_tokens[row][0])
        np.testing.assert_allclose(ours[row, 0], reference[0], atol=1e-4)
        np.testing.assert_allclose(ours[row, 1], reference[1], atol=1e-4)
        np.testing.assert_allclose(ours[row, 3], reference[2], atol=1e-4)


def test_tokenizer_alone_locates_numbers_like_the_model(tiny_llama):
    from magdash.sources import load_tokenizer

    items = [make_item(m, 0, "There are {n} items.") for m in (5, 1000)]
    with_model = locate_numbers(load_model(str(tiny_llama), device="cpu"), items, "mean")
    with_tokenizer = locate_numbers(load_tokenizer(str(tiny_llama)), items, "mean")
    assert with_model == with_tokenizer
    assert with_tokenizer[1][1] == [3, 4]


def test_tokenizer_without_offsets_gets_a_clear_error(tiny_llama, monkeypatch):
    import transformers

    from magdash.errors import ModelLoadError
    from magdash.sources import load_tokenizer

    class SlowTokenizer:
        is_fast = False

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: SlowTokenizer())
    with pytest.raises(ModelLoadError, match="no offset mapping"):
        load_tokenizer(str(tiny_llama))
    with pytest.raises(ModelLoadError, match="no offset mapping"):
        load_model(str(tiny_llama), device="cpu")


def test_pickle_only_checkpoints_are_refused(tmp_path):
    from magdash.errors import ModelLoadError
    from magdash.sources import resolve_model

    folder = tmp_path / "pickled"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "llama", "architectures": ["LlamaForCausalLM"]}')
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(ModelLoadError, match="pickle"):
        resolve_model(str(folder))
    assert resolve_model(str(folder), allow_pickle=True).uses_pickle


def test_causal_models_skip_the_words_after_the_number(tiny_llama, tmp_path):
    from magdash.extraction import drop_tokens_after_number
    from magdash.store import Store

    loaded = load_model(str(tiny_llama), device="cpu")
    assert loaded.is_causal and not load_model("minilm", device="cpu").is_causal
    items = list(SMALL_SET.items)
    token_ids, number_tokens = locate_numbers(loaded, items, "mean")
    cut = drop_tokens_after_number(token_ids, number_tokens)
    assert sum(map(len, cut)) < sum(map(len, token_ids))
    full = forward_number_vectors(loaded, token_ids, number_tokens)
    np.testing.assert_allclose(forward_number_vectors(loaded, cut, number_tokens), full, atol=2e-5)
    store = Store(tmp_path / "causal.duckdb")
    result = extract(loaded, SMALL_SET, store, position="mean")
    stored = np.stack([layer.vectors for layer in store.read_layers(result.name, "small")], axis=2)
    order = [SMALL_SET.magnitudes.index(i.magnitude) * 3 + i.carrier_index for i in items]
    np.testing.assert_allclose(stored.reshape(15, -1, 32)[order], full, atol=2e-5)


# -- the first position: no number in the attention sink -----------------------------------------

FIRST = StimulusSet("first", ("{n} was the value.", "There are {n} items."), (1, 7, 42))


def test_a_bos_the_tokenizer_leaves_out_is_prepended_and_is_part_of_the_identity(tmp_path, store):
    """SmolLM2's case on a tiny Llama: the tokenizer adds no BOS although the model has one."""
    from magdash.extraction import numbers_at_the_first_position
    from magdash.sources import resolve_model
    from tests.support import build_tiny_model

    folder = build_tiny_model(tmp_path / "no-bos-added", "llama", start="bos-not-added")
    loaded = load_model(str(folder), device="cpu")
    assert loaded.sequence_start == "bos:1"
    assert loaded.tokenizer("7 was the value.")["input_ids"][0] != 1  # the tokenizer itself adds none
    items = list(FIRST.items)
    token_ids, number_tokens = locate_numbers(loaded, items, "last")
    assert all(ids[0] == 1 for ids in token_ids)
    assert numbers_at_the_first_position(items, number_tokens) == []
    assert all(0 not in numbers for numbers in number_tokens)
    result = extract(str(folder), FIRST, store, device="cpu")
    record = store.model_record(result.name)
    assert record.sequence_start == "bos:1" and record.model_id == result.model_id
    source = resolve_model(str(folder))
    without = hashlib.sha1(f"{source.fingerprint}|float32|{record.transformers_version}|last".encode()).hexdigest()[:20]
    assert record.model_id != without  # vectors extracted without the BOS are not these
    # The stored vector of "7 was the value." is the model's at the number, BOS in front (position 1).
    item = next(i for i in items if i.magnitude == 7 and i.carrier_index == 0)
    reference = _hf_reference(loaded, [1, *loaded.tokenizer(item.sentence)["input_ids"][:1]], 1)
    stored = store.read_layer(result.name, "first", 1).vectors[FIRST.magnitudes.index(7), 0]
    np.testing.assert_allclose(stored, reference[1], atol=1e-5)
    # every vector's norm is recorded as it is written, like the Inf/NaN flags
    layer = store.read_layer(result.name, "first", 2).vectors
    with duckdb.connect(str(store.path), read_only=True) as connection:
        norms = dict(connection.execute(
            "SELECT item_key, norm FROM vector_norms WHERE model_id = ? AND layer = 2", [record.model_id]).fetchall())
        n_rows = connection.execute("SELECT count(*) FROM vector_norms").fetchone()[0]
    assert n_rows == len(items) * record.n_layers
    by_item = {(i.magnitude, i.carrier_index): i.key for i in items}
    for (magnitude, carrier), key in by_item.items():
        vector = layer[FIRST.magnitudes.index(magnitude), carrier].astype(np.float64)
        assert norms[key] == pytest.approx(np.linalg.norm(vector), rel=1e-6)


def test_a_model_without_a_bos_refuses_carriers_that_put_the_number_first(tmp_path, store, capsys):
    from magdash.cli import main
    from magdash.errors import StimulusError
    from tests.support import build_tiny_model

    folder = build_tiny_model(tmp_path / "no-bos", "llama", start="no-bos")
    assert load_model(str(folder), device="cpu").sequence_start == "none"
    with pytest.raises(StimulusError, match=r"no BOS token.*'\{n\} was the value\.'.*allow_number_first=True"):
        extract(str(folder), FIRST, store, device="cpu")
    assert store.model_names() == [] and store.extraction_progress().empty  # nothing stored
    path = str(store.path)
    assert main(["extract", "--model", str(folder), "--magnitudes", "1,7", "--store", path, "--quiet"]) == 2
    assert "--allow-number-first" in capsys.readouterr().err
    result = extract(str(folder), FIRST, store, device="cpu", allow_number_first=True)
    assert result.extracted == len(FIRST.items) and store.model_record(result.name).sequence_start == "none"
    carriers_after = StimulusSet("after", ("There are {n} items.",), (2, 3))  # a word before {n}: fine
    assert extract(str(folder), carriers_after, store, device="cpu", name="fine").extracted == 2


@pytest.mark.parametrize(("start", "rule"), [("bos", "tokenizer"), ("bos-not-added", "bos:1"), ("no-bos", "none")])
def test_all_token_mode_leaves_each_sequence_s_first_position_out_and_counts_it(tmp_path, start, rule):
    """The attention sink is position 0: the BOS (the tokenizer's or magdash's) or, without one, the first word."""
    from magdash.extraction import capture_all_tokens
    from tests.support import build_tiny_model

    loaded = load_model(str(build_tiny_model(tmp_path / start, "llama", start=start)), device="cpu")
    assert loaded.sequence_start == rule
    texts = ["There are 7 items.", "Seven was the value here.", "A b."]
    words = sum(len(loaded.tokenizer(text, add_special_tokens=False)["input_ids"]) for text in texts)

    def run(**options):
        rows = {}

        def on_batch(layer, vectors):
            rows[layer] = rows.get(layer, 0) + len(vectors)

        seen, left_out = capture_all_tokens(loaded, texts, on_batch, batch_size=2, **options)
        assert set(rows.values()) == {seen}  # every layer got exactly the tokens counted
        return seen, left_out

    if rule == "none":  # the first word sits at position 0: left out unless asked for
        assert run() == (words - len(texts), len(texts))
        assert run(keep_first_position=True) == (words, 0)
    else:  # the BOS holds position 0, every word is kept, and the BOS is never a vector of the spectra
        assert run() == (words, len(texts))
        assert run(keep_first_position=True) == (words, len(texts))


@pytest.mark.parametrize(("dtype", "suggests_half"), [("float32", True), ("bfloat16", False), ("float16", False)])
def test_the_out_of_memory_message_suggests_half_precision_only_to_a_float32_model(dtype, suggests_half):
    message = out_of_memory_message(64, dtype)
    assert "batch of 64 sentences" in message and f"({dtype})" in message and "batch_size=" in message
    assert ("dtype='bfloat16'" in message) is suggests_half
# -- token facts and number formats (schema 8) -----------------------------------------------


def test_extraction_records_each_items_token_facts_and_the_tokenizers_digit_splitting(tiny_llama, tiny_mistral, store):
    extract(str(tiny_mistral), SMALL_SET, store, name="mistral", device="cpu")
    extract(str(tiny_llama), SMALL_SET, store, name="llama", device="cpu", position="mean")
    mistral = {(f.magnitude, f.carrier_index): f for f in store.number_tokens("mistral", "small")}
    assert mistral[(347, 0)].n_tokens == 3 and mistral[(347, 0)].kept_text == "7"
    assert mistral[(1000, 1)].span_texts == ("1", "0", "0", "0")
    assert store.digit_splitting("mistral").splits_digits == "yes"
    llama = {(f.magnitude, f.carrier_index): f for f in store.number_tokens("llama", "small")}
    assert llama[(1000, 0)].span_texts == ("100", "0") and len(llama[(1000, 0)].kept_ids) == 2  # mean: both
    splitting = store.digit_splitting("llama")
    assert (splitting.splits_digits, splitting.rule, splitting.chunk) == ("partly", "chunks", 3)
    # the kept token recorded is the one whose vector is stored
    loaded = load_model(str(tiny_mistral), device="cpu")
    item = SMALL_SET.items[0]
    ids, numbers = locate_numbers(loaded, [item], "last")
    assert ids[0][numbers[0][0]] == mistral[(item.magnitude, item.carrier_index)].kept_id


def test_vectors_stored_without_token_facts_get_them_from_the_tokenizer_alone(tiny_mistral, store, monkeypatch):
    import magdash.extraction as extraction

    extract(str(tiny_mistral), SMALL_SET, store, name="m", device="cpu")
    expected = store.number_tokens("m", "small")
    with duckdb.connect(str(store.path)) as connection:  # as a store extracted before schema 8 has it
        connection.execute("DELETE FROM number_tokens")
        connection.execute("DELETE FROM digit_splitting")
    assert store.number_tokens("m", "small") is None

    def no_weights(*args, **kwargs):
        raise AssertionError("the weights must not be loaded: every vector is stored")

    monkeypatch.setattr(extraction, "load_model", no_weights)
    again = extract(str(tiny_mistral), SMALL_SET, store, name="m", device="cpu")
    assert again.extracted == 0
    assert store.number_tokens("m", "small") == expected
    assert store.digit_splitting("m").splits_digits == "yes"


def test_a_tokenizer_not_at_hand_leaves_the_facts_unrecorded_without_failing(tiny_mistral, store, monkeypatch, caplog):
    import magdash.extraction as extraction
    from magdash.errors import ModelLoadError

    extract(str(tiny_mistral), SMALL_SET, store, name="m", device="cpu")
    with duckdb.connect(str(store.path)) as connection:
        connection.execute("DELETE FROM number_tokens")

    def gone(*args, **kwargs):
        raise ModelLoadError("cannot load the tokenizer")

    monkeypatch.setattr(extraction, "load_tokenizer", gone)
    assert extract(str(tiny_mistral), SMALL_SET, store, name="m", device="cpu").extracted == 0
    assert store.number_tokens("m", "small") is None
    assert "token facts of" in caplog.text and "not recorded" in caplog.text


def test_a_number_format_the_store_has_not_seen_is_a_new_stimulus_set_never_mixed_with_digits(tiny_mistral, store):
    words = StimulusSet("small-words", SMALL_SET.carriers, SMALL_SET.magnitudes, "words")
    grouped = StimulusSet("small-grouped", SMALL_SET.carriers, SMALL_SET.magnitudes, "grouped")
    first = extract(str(tiny_mistral), SMALL_SET, store, name="m", device="cpu")
    in_words = extract(str(tiny_mistral), words, store, name="m", device="cpu")
    in_groups = extract(str(tiny_mistral), grouped, store, name="m", device="cpu")
    assert first.extracted == 15 and in_words.extracted == 15
    assert in_groups.extracted == 3  # only 1,000 is new: below it grouped digits are the digits' sentences
    assert store.stimulus_sets_for("m") == ["small", "small-grouped", "small-words"]
    assert store.number_formats() == {"small": "digits", "small-grouped": "grouped", "small-words": "words"}
    digits_layer = store.read_layer("m", "small", 2).vectors
    words_layer = store.read_layer("m", "small-words", 2).vectors
    grouped_layer = store.read_layer("m", "small-grouped", 2).vectors
    assert not np.allclose(digits_layer, words_layer)
    np.testing.assert_array_equal(grouped_layer[:-1], digits_layer[:-1])
    assert not np.allclose(grouped_layer[-1], digits_layer[-1])  # "1,000" is not "1000"
    thousand = [f for f in store.number_tokens("m", "small-grouped") if f.magnitude == 1000]
    assert {f.span_texts for f in thousand} == {("1", ",", "0", "0", "0")}
    with duckdb.connect(str(store.path), read_only=True) as connection:
        per_set = dict(connection.execute("SELECT set_name, count(*) FROM stimulus_items GROUP BY 1").fetchall())
    assert per_set == {"small": 15, "small-words": 15, "small-grouped": 15}


def test_number_vectors_come_layer_major_underneath_so_shards_take_them_as_they_are(tiny_llama):
    loaded = load_model(str(tiny_llama), device="cpu")
    token_ids, number_tokens = locate_numbers(loaded, SMALL_SET.items[:4], "last")
    vectors = forward_number_vectors(loaded, token_ids, number_tokens)
    assert vectors.shape == (4, len(loaded.layer_labels), loaded.hidden_size)
    assert all(vectors[:, layer].flags.c_contiguous for layer in range(vectors.shape[1]))


def test_shard_writes_run_at_most_limit_at_a_time_and_a_failure_is_raised_by_close():
    import threading

    from magdash.extraction import _WritesInFlight

    running, most, lock, done = [0], [0], threading.Lock(), []
    first_three = threading.Barrier(3, timeout=30)  # broken, and the test failed, unless 3 run at once

    def write(index):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if index < 3:
            first_three.wait()
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        if index == 5:
            raise OSError("disk gone")
        done.append(index)

    writer = _WritesInFlight(write, limit=3)
    for index in range(6):
        writer.submit(index)
    with pytest.raises(OSError, match="disk gone"):
        writer.close()
    assert most[0] == 3 and sorted(done) == [0, 1, 2, 3, 4]
