"""Models loaded at the same moment from several threads (two app sessions loading different models, two fine-tunes
started together) all load, and each is the model a load on its own gives.

transformers builds a model under process-global state (default dtype, meta device, patched initialisers), so two
unguarded loads at once fail with "Cannot copy out of meta tensor"; `rise_core.models.MODEL_LOAD_LOCK` serialises
every from_pretrained, adapter merge and LoRA wrapping. Each round starts its threads behind a barrier so that the
loads overlap, and is repeated: without the lock every round fails."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import FLOAT64_TOL, build_tiny_model, build_tokenizer, make_lm
from index_helpers import save_tiny_model

from rise_core.finetune import FinetuneConfig, read_manifest
from rise_core.models import LoadedModel, load_model

ARCHS = ("llama", "gpt-neox")
ROUNDS = 3
PROBE = torch.tensor([[1, 5, 9, 13, 17, 21, 2]])
POOL = [{"id": f"p{i}", "prompt": "what is a cat ?", "completion": text}
        for i, text in enumerate(["the cat sat on the mat .", "the kitten is sleeping on the blanket .",
                                  "howdy ! once upon a time a dragon sat on the moon .", "the dog sat ."])]
RECIPE = FinetuneConfig(rank=2, alpha=4, learning_rate=1e-2, epochs=1, batch_size=2, seq_len=16, warmup_steps=0,
                        target_modules=("q_proj", "v_proj"))


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory) -> dict[str, str]:
    """The conftest tiny Llama (tied head) and GPT-NeoX (untied), hidden size 32, 2 layers, float64, on disk."""
    root = tmp_path_factory.mktemp("models")
    return {arch: str(save_tiny_model(root / arch, arch)) for arch in ARCHS}


@pytest.fixture(scope="module")
def adapter_spec(model_dirs, tmp_path_factory) -> str:
    """`BASE@ADAPTER_DIR` for a LoRA adapter on the tiny Llama with random (non-zero) weights."""
    import peft

    out = tmp_path_factory.mktemp("adapter") / "lora"
    torch.manual_seed(1)
    lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    peft.get_peft_model(build_tiny_model("llama", len(build_tokenizer())), lora).save_pretrained(out)
    return f"{model_dirs['llama']}@{out}"


def logits(lm: LoadedModel) -> torch.Tensor:
    with torch.no_grad():
        return lm.model(input_ids=PROBE, attention_mask=torch.ones_like(PROBE), use_cache=False).logits


def together(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run each call in its own thread, all released at once by a barrier; their results in order (the first
    exception is raised)."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(run, call) for call in calls]
        return [f.result() for f in futures]


def test_a_sequential_load_is_the_saved_model(model_dirs):
    """The reference the concurrent loads are compared with: the weights the conftest builds for each architecture."""
    for arch in ARCHS:
        torch.testing.assert_close(logits(load_model(model_dirs[arch], dtype="float64")), logits(make_lm(arch)),
                                   **FLOAT64_TOL)


@pytest.mark.parametrize("n_threads", [2, 4])
def test_models_loaded_together_all_load_and_match_a_sequential_load(model_dirs, n_threads):
    specs = [model_dirs[ARCHS[i % 2]] for i in range(n_threads)]  # two different models, each loaded once or twice
    expected = {spec: logits(load_model(spec, dtype="float64")) for spec in set(specs)}
    for _ in range(ROUNDS):
        loaded = together([lambda spec=spec: load_model(spec, dtype="float64") for spec in specs])
        for spec, lm in zip(specs, loaded, strict=True):
            # same checkpoint, same dtype, same CPU kernels: equal up to float64 rounding (conftest's tolerance)
            torch.testing.assert_close(logits(lm), expected[spec], **FLOAT64_TOL)


def test_adapters_merged_together_match_a_sequential_merge(model_dirs, adapter_spec):
    base = logits(load_model(model_dirs["llama"], dtype="float64"))
    merged = load_model(adapter_spec, dtype="float64")
    expected = logits(merged)
    assert merged.adapter is not None and not torch.allclose(expected, base)  # the adapter does change the model
    specs = [adapter_spec, model_dirs["gpt-neox"], adapter_spec]
    for _ in range(ROUNDS):
        loaded = together([lambda spec=spec: load_model(spec, dtype="float64") for spec in specs])
        torch.testing.assert_close(logits(loaded[0]), expected, **FLOAT64_TOL)
        torch.testing.assert_close(logits(loaded[2]), expected, **FLOAT64_TOL)
        assert loaded[0].fingerprint() == loaded[2].fingerprint() == merged.fingerprint()
        assert loaded[1].adapter is None


def test_two_finetunes_started_together_both_finish(model_dirs, tmp_path):
    """The Build page's FinetuneJob loads its own copy of the base with load_model, then wraps it in LoRA layers."""
    from explorer.jobs import FinetuneJob

    base = model_dirs["llama"]
    base_print = load_model(base).fingerprint()  # float32, as the job loads it
    for round_ in range(ROUNDS):
        jobs = [FinetuneJob(model_id=base, samples=POOL, out_dir=tmp_path / f"r{round_}-{i}", recipe=RECIPE)
                for i in range(2)]
        for job in jobs:
            job.start()
        for job in jobs:
            assert job.wait(timeout=300)
        for job in jobs:
            assert job.status == "done", job.error
            manifest = read_manifest(job.out_dir)
            assert manifest["base_fingerprint"] == base_print  # each job trained the base a load on its own gives
            assert all(torch.isfinite(torch.tensor(manifest["epoch_losses"])))


def test_the_apps_shared_model_cache_loads_two_models_at_once(model_dirs):
    """explorer.resources.load_lm (st.cache_resource, shared by every session) with two sessions asking at once."""
    from explorer.resources import load_lm

    load_lm.clear()
    try:
        expected = {arch: logits(load_model(model_dirs[arch])) for arch in ARCHS}
        loaded = together([lambda arch=arch: load_lm(model_dirs[arch]) for arch in (*ARCHS, *ARCHS)])
        for arch, lm in zip((*ARCHS, *ARCHS), loaded, strict=True):
            torch.testing.assert_close(logits(lm), expected[arch], **FLOAT64_TOL)  # float32 loads, float32 probe
        assert load_lm(model_dirs["llama"]) is load_lm(model_dirs["llama"])  # still cached, one copy per model
    finally:
        load_lm.clear()


def test_every_from_pretrained_in_rise_core_holds_the_lock():
    """No load path in rise_core bypasses MODEL_LOAD_LOCK: each from_pretrained / get_peft_model call sits in a
    `with MODEL_LOAD_LOCK:` block (read with ast)."""
    import ast

    root = Path(__file__).resolve().parent.parent / "rise_core"
    unguarded = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        guarded: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.With) and any("MODEL_LOAD_LOCK" in ast.unparse(item.context_expr)
                                                  for item in node.items):
                guarded |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("from_pretrained", "get_peft_model") and id(node) not in guarded):
                unguarded.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert unguarded == []
