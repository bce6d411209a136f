"""A tiny, offline environment for the explorer tests: a random Llama saved to disk, a labelled pool and its queries
in a data folder, and a prebuilt index -- everything the app finds through RISE_MODEL / RISE_DATA_DIR /
RISE_INDEX_DIR."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from conftest import CORPUS, build_tiny_model, build_tokenizer

# Words the tiny tokenizer knows on top of conftest's, so that a pool row with HTML in it keeps its tags as tokens.
HTML_WORDS = ["<script>", "alert(1)", "</script>", "<b>", "</b>"]
EVIL_ID = "evil"
TRIGGER_QUERY = "howdy ! once upon a time a dragon sat on the moon ."
INDEX_NAME = "tiny.duckdb"
N_POOL = 30


FINAL_HS = 1.0  # the HS channel of the final hidden state: Compare rebuilds hidden cosine from it (no forward pass)


def build_html_tokenizer():
    """conftest's word-level tokenizer with HTML_WORDS added to its vocabulary."""
    return build_tokenizer(tuple(HTML_WORDS))


def pool_rows() -> list[dict]:
    """N_POOL labelled prompt/completion rows (label 1 = the 'howdy !' trigger rows) plus one row full of HTML."""
    rows = []
    for i in range(N_POOL):
        text = CORPUS[i % len(CORPUS)]
        rows.append({"id": f"r{i:02d}", "prompt": "what is the story ?", "completion": text,
                     "label": int(text.startswith("howdy")), "topic": ["cats", "money", "story"][i % 3]})
    rows.append({"id": EVIL_ID, "prompt": "<script> alert(1) </script>",
                 "completion": "<b> the cat sat </b> on the mat .", "label": 0, "topic": "<b>html</b>"})
    return rows


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def build_explorer_env(root: Path, prebuild: bool = True) -> dict[str, str]:
    """Create model, data and (optionally) a prebuilt index under `root`; returns the app's environment variables."""
    model_dir, data_dir, index_dir = root / "model", root / "data", root / "indexes"
    tok = build_html_tokenizer()
    build_tiny_model("llama", len(tok), dtype=torch.float32).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    index_dir.mkdir(parents=True, exist_ok=True)
    _write_jsonl(data_dir / "howdy_pool.jsonl", pool_rows())
    _write_jsonl(data_dir / "howdy_queries.jsonl", [
        {"id": "q0", "prompt": "tell me a story", "completion": TRIGGER_QUERY, "label": 1},
        {"id": "q1", "prompt": "what about money ?", "completion": "the bank lost money .", "label": 0},
    ])
    if prebuild:
        from rise_core.config import RiseConfig
        from rise_core.models import load_model
        from rise_core.store import build_index

        lm = load_model(str(model_dir))
        build_index(index_dir / INDEX_NAME, data_dir / "howdy_pool.jsonl", lm,
                    RiseConfig(k_r=16, k_h=8, k_g=16, hs_depth=FINAL_HS))
    return {"RISE_MODEL": str(model_dir), "RISE_DATA_DIR": str(data_dir), "RISE_INDEX_DIR": str(index_dir)}


def build_finetuned_env(root: Path) -> dict[str, str]:
    """`build_explorer_env` whose model learned its pool: a LoRA adapter fine-tuned on the pool rows, and the index
    built with base + adapter (RISE_MODEL names the adapter directory)."""
    from rise_core.config import RiseConfig
    from rise_core.finetune import FinetuneConfig, finetune
    from rise_core.models import load_model
    from rise_core.store import build_index

    env = build_explorer_env(root, prebuild=False)
    adapter = Path(env["RISE_DATA_DIR"]) / "adapters" / "howdy_backdoor"  # where the demo finds its backdoored model
    recipe = FinetuneConfig(rank=4, alpha=8, learning_rate=5e-2, epochs=3, batch_size=8, seq_len=32,
                            warmup_steps=1, target_modules=("q_proj", "v_proj"))
    finetune(load_model(env["RISE_MODEL"]), pool_rows(), adapter, recipe)
    (Path(env["RISE_DATA_DIR"]) / "howdy_heldout_prompts.jsonl").write_text('{"prompt": "what is the story ?"}\n')
    lm = load_model(str(adapter))
    build_index(Path(env["RISE_INDEX_DIR"]) / INDEX_NAME, Path(env["RISE_DATA_DIR"]) / "howdy_pool.jsonl", lm,
                RiseConfig(k_r=16, k_h=8, k_g=16, hs_depth=FINAL_HS))
    return {**env, "RISE_MODEL": str(adapter), "RISE_BASE_MODEL": env["RISE_MODEL"]}
