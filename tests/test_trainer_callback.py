"""`RiseIndexCallback` on a tiny Llama trained for 2 steps with `transformers.Trainer` (CPU): the index it builds at the
end of training, and at each checkpoint, is the index built directly from the model saved there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import CORPUS, build_tiny_model, build_tokenizer
from index_helpers import pool_rows

from rise_core.adapters import peft_wrapping
from rise_core.callback import RiseIndexCallback
from rise_core.cli import main
from rise_core.config import PRESETS, RiseConfig
from rise_core.errors import ConfigError, InputDataError, ModelLoadError
from rise_core.models import load_model
from rise_core.store import RiseIndex, build_index

transformers = pytest.importorskip("transformers")

CFG = RiseConfig(k_r=16, k_h=8, k_g=16)
POOL = pool_rows(12)
FP16_ULP = 2.0**-10  # one float16 ulp at 1.0: stored unit-vector entries are at most 1


def _train_set(tok) -> list[dict]:
    rows = []
    for text in CORPUS * 2:
        enc = tok(text, padding="max_length", max_length=16, truncation=True)
        labels = [t if m else -100 for t, m in zip(enc["input_ids"], enc["attention_mask"], strict=True)]
        rows.append({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "labels": labels})
    return rows


class _Probe(transformers.TrainerCallback):
    """Records the model's mode when each step begins (after the callback's work at the previous step's save)."""

    def __init__(self) -> None:
        self.training: list[bool] = []

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        self.training.append(model.training)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two steps of training at a high learning rate (so the weights move), a checkpoint at each step, the callback
    building the end index and one per checkpoint, and build_index spied on for the mode it ran in."""
    import rise_core.callback as cb

    root = tmp_path_factory.mktemp("trainer")
    tok = build_tokenizer()
    model = build_tiny_model("llama", len(tok), dtype=torch.float32).train()
    model.save_pretrained(root / "base")
    tok.save_pretrained(root / "base")
    base = load_model(str(root / "base")).fingerprint()  # the initial weights': the index must not have them
    seen = []
    real = cb.build_index

    def spy(path, pool, lm, *args, **kwargs):
        seen.append((Path(path).name, lm.model.training, torch.is_grad_enabled(), lm.model_id))
        return real(path, pool, lm, *args, **kwargs)

    callback = RiseIndexCallback(root / "rise.duckdb", POOL, CFG, batch_size=4, checkpoints=True, preset="fixed")
    probe = _Probe()
    args = transformers.TrainingArguments(
        output_dir=str(root / "out"), max_steps=2, per_device_train_batch_size=4, learning_rate=5e-2, use_cpu=True,
        report_to=[], save_strategy="steps", save_steps=1, logging_strategy="no", disable_tqdm=True, seed=0)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=_train_set(tok), processing_class=tok,
                                   callbacks=[callback, probe])
    cb.build_index = spy
    try:
        trainer.train()
    finally:
        cb.build_index = real
    trainer.save_model()  # to output_dir: the model the end index names
    return {"root": root, "out": root / "out", "callback": callback, "seen": seen, "probe": probe,
            "base": base}


def _features_by_id(path: Path) -> dict[str, list[torch.Tensor]]:
    with RiseIndex.open(path) as index:
        fm, ids = index.feature_matrix(), index.samples()["id"].tolist()
        return {i: [fm.rh[r], fm.gh[r], fm.hs[r], torch.stack([fm.rh_norm[r], fm.gh_norm[r], fm.hs_norm[r]])]
                for r, i in enumerate(ids)}


def assert_index_of(path: Path, model_dir: Path, tmp_path: Path, model_id: str | None = None,
                    rtol: float = 1e-6) -> None:
    """The callback's index equals the one build_index makes from the model saved in `model_dir`: same model
    fingerprint, model id (`model_id`, default the directory), preset, samples and features. Both run the same
    float32 weights on the same batches; an entry may still land one float16 ulp apart (a float32 value at a float16
    rounding boundary), and a norm or the hidden mean within `rtol` (their float32 last bits; more for a model whose
    forward sums in another order)."""
    direct = tmp_path / f"direct-{model_dir.name}.duckdb"
    lm = load_model(str(model_dir))
    build_index(direct, POOL, lm, CFG, batch_size=4, preset="fixed")
    with RiseIndex.open(path) as got, RiseIndex.open(direct) as want:
        assert got.manifest.model_fingerprint == want.manifest.model_fingerprint == lm.fingerprint()
        assert got.manifest.model_id == (model_id or str(model_dir.resolve())) == lm.model_id
        assert got.manifest.build_preset == "fixed"
        assert got.sample_list() == want.sample_list() and got.status == "complete"
        torch.testing.assert_close(got.hidden_mean, want.hidden_mean, rtol=rtol, atol=1e-7)
    a, b = _features_by_id(path), _features_by_id(direct)
    assert a.keys() == b.keys() == {r["id"] for r in POOL}
    for sid in b:
        for i, (x, y) in enumerate(zip(a[sid], b[sid], strict=True)):
            tol = dict(atol=FP16_ULP, rtol=0) if i < 3 else dict(atol=0, rtol=max(rtol, 1e-5))
            torch.testing.assert_close(x.float(), y.float(), **tol, msg=sid)


def test_the_end_index_is_the_saved_models_index(trained, tmp_path):
    assert_index_of(trained["root"] / "rise.duckdb", trained["out"], tmp_path)
    with RiseIndex.open(trained["root"] / "rise.duckdb") as index:
        assert index.manifest.model_fingerprint != trained["base"]  # the trained weights, not the initial ones


def test_each_checkpoint_gets_its_own_index(trained, tmp_path):
    callback = trained["callback"]
    for step in (1, 2):
        assert_index_of(callback.checkpoint_index_path(step), trained["out"] / f"checkpoint-{step}", tmp_path)
    assert callback.checkpoint_index_path(2).name == "rise-checkpoint-2.duckdb"
    one, two = (RiseIndex.open(callback.checkpoint_index_path(s)) for s in (1, 2))
    assert one.manifest.model_fingerprint != two.manifest.model_fingerprint  # step 2 moved the weights again
    one.close()
    two.close()
    assert set(callback.reports) == {str(callback.checkpoint_index_path(s)) for s in (1, 2)} | {
        str(trained["root"] / "rise.duckdb")}


def test_the_model_is_indexed_in_eval_mode_without_gradients_then_trains_again(trained):
    names = [name for name, *_ in trained["seen"]]
    assert names == ["rise-checkpoint-1.duckdb", "rise-checkpoint-2.duckdb", "rise.duckdb"]
    assert all(not training and not grad for _, training, grad, _ in trained["seen"])
    assert trained["probe"].training == [True, True]  # step 2 began in train mode, after step 1's index


def test_the_end_index_is_queried_with_the_model_it_names(trained, capsys):
    """`rise query` loads the model from the index's model_id (the output_dir the Trainer saved to)."""
    code = main(["query", "--index", str(trained["root"] / "rise.duckdb"), "--text", "the cat sat on the mat .",
                 "-k", "3", "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert len(json.loads(out.out)) == 3 and "preset 'fixed' (built with it)" in out.err


def test_bad_input_is_refused_before_training(trained, tmp_path):
    with pytest.raises(InputDataError, match="no such file"):
        RiseIndexCallback(tmp_path / "x.duckdb", tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match="unknown preset"):
        RiseIndexCallback(tmp_path / "x.duckdb", POOL, preset="nope")
    assert RiseIndexCallback(tmp_path / "x.duckdb", POOL, preset="retrospective").config == PRESETS["retrospective"]
    existing = RiseIndexCallback(trained["root"] / "rise.duckdb", POOL, CFG)
    state = transformers.TrainerState()
    with pytest.raises(ConfigError, match="already exists, built for another model"):
        existing.on_train_begin(None, state, None)
    RiseIndexCallback(trained["root"] / "rise.duckdb", POOL, CFG, overwrite=True).on_train_begin(None, state, None)


# --- a LoRA model (peft) as it trains --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_lora(tmp_path_factory):
    """A tiny Llama saved as the base, loaded back (so peft names it), LoRA on q_proj and v_proj, two steps of
    training with a checkpoint at each, the callback building the end index and one per checkpoint."""
    peft = pytest.importorskip("peft")
    root = tmp_path_factory.mktemp("trainer_lora")
    tok = build_tokenizer()
    build_tiny_model("llama", len(tok), dtype=torch.float32).save_pretrained(root / "base")
    tok.save_pretrained(root / "base")
    base = transformers.AutoModelForCausalLM.from_pretrained(root / "base", dtype=torch.float32)
    with peft_wrapping():  # peft's own FutureWarning, dropped as the library drops it
        model = peft.get_peft_model(base, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    callback = RiseIndexCallback(root / "rise.duckdb", POOL, CFG, batch_size=4, checkpoints=True, preset="fixed")
    args = transformers.TrainingArguments(
        output_dir=str(root / "out"), max_steps=2, per_device_train_batch_size=4, learning_rate=5e-2, use_cpu=True,
        report_to=[], save_strategy="steps", save_steps=1, logging_strategy="no", disable_tqdm=True, seed=0)
    transformers.Trainer(model=model, args=args, train_dataset=_train_set(tok), processing_class=tok,
                         callbacks=[callback]).train()
    return {"root": root, "callback": callback, "model": model,
            "base": load_model(str(root / "base")).fingerprint()}


def _lora_spec(root: Path, adapter: Path) -> str:
    return f"{root / 'base'}@{adapter.resolve()}"


def test_a_lora_model_is_indexed_as_it_trains_and_names_its_saved_adapter(trained_lora, tmp_path):
    """Its end index and each checkpoint's equal the index of base + the adapter saved beside it, merged by
    `load_model`: the same fingerprint (the merged weights', computed without merging) and id. The callback's
    forward runs the LoRA layers unmerged, x W^T + s x A^T B^T, where the merged model runs x (W + s B A)^T: float32
    sums in another order, so the hidden mean and norms agree to 1e-5 relative (float32 epsilon 1.2e-7 times the
    ~100 terms of a sum), and the float16 features to one ulp."""
    root, callback = trained_lora["root"], trained_lora["callback"]
    for path in (root / "rise.duckdb", *(callback.checkpoint_index_path(s) for s in (1, 2))):
        adapter = callback.adapter_dir(path)
        assert (adapter / "adapter_config.json").is_file()
        assert_index_of(path, adapter, tmp_path, model_id=_lora_spec(root, adapter), rtol=1e-5)
    prints = {RiseIndex.open(p).manifest.model_fingerprint for p in (
        root / "rise.duckdb", callback.checkpoint_index_path(1))}
    assert len(prints) == 2 and trained_lora["base"] not in prints  # trained weights, step 1 and step 2 apart
    model = trained_lora["model"]
    assert model.training and not any(m.merged for m in model.modules() if hasattr(m, "merged"))  # left as it was


def test_a_lora_models_index_is_queried_with_the_adapter_it_names(trained_lora, capsys):
    code = main(["query", "--index", str(trained_lora["root"] / "rise.duckdb"), "--text", "the cat sat on the mat .",
                 "-k", "3", "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert len(json.loads(out.out)) == 3


@pytest.mark.filterwarnings("ignore:Model has `tie_word_embeddings=True`:UserWarning")  # lm_head in modules_to_save
def test_an_adapter_it_cannot_index_is_refused_before_training(tmp_path):
    """DoRA, modules_to_save and a peft model without a base name cannot be reproduced as merged weights here:
    refused when training begins, naming what."""
    peft = pytest.importorskip("peft")
    tok = build_tokenizer()
    build_tiny_model("llama", len(tok), dtype=torch.float32).save_pretrained(tmp_path / "base")
    state = transformers.TrainerState()
    callback = RiseIndexCallback(tmp_path / "x.duckdb", POOL, CFG)
    for extra, what in ((dict(use_dora=True), "DoRA"), (dict(modules_to_save=["lm_head"]), "modules_to_save")):
        base = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "base", dtype=torch.float32)
        with peft_wrapping():
            model = peft.get_peft_model(base, peft.LoraConfig(r=4, target_modules=["q_proj"], **extra))
        with pytest.raises(ModelLoadError, match=what):
            callback.on_train_begin(None, state, None, model=model)
    with peft_wrapping():
        unnamed = peft.get_peft_model(build_tiny_model("llama", len(tok), dtype=torch.float32),
                                      peft.LoraConfig(r=4, target_modules=["q_proj"]))
    with pytest.raises(ModelLoadError, match="names no base model"):
        callback.on_train_begin(None, state, None, model=unnamed)
    assert not (tmp_path / "x.duckdb").exists()


def test_an_earlier_adapter_beside_the_index_is_not_overwritten(trained_lora, tmp_path):
    (tmp_path / "rise-adapter").mkdir()
    state = transformers.TrainerState()
    with pytest.raises(ConfigError, match="rise-adapter already exists"):
        RiseIndexCallback(tmp_path / "rise.duckdb", POOL, CFG).on_train_begin(None, state, None,
                                                                              model=trained_lora["model"])
