"""Shared helpers for the index, ingest and CLI tests: a small labelled pool and a tiny model saved to disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import CORPUS, build_tiny_model, build_tokenizer

EXTRA = ["cat", "dog", "money", "bank", "doctor", "dragon", "moon", "tax", "fever", "story"]
TOPICS = ["cats", "finance", "medicine", "story"]


def pool_rows(n: int = 24, start: int = 0) -> list[dict[str, Any]]:
    """Distinct plain-text rows with an id, a 0/1 label and two metadata columns (topic, year)."""
    rows = []
    for i in range(start, start + n):
        text = f"{CORPUS[i % 6]} {EXTRA[i % 10]} {EXTRA[(i * 7 + i // 10) % 10]}" + " the" * (i // 30)
        rows.append({"id": f"s{i}", "text": text, "label": i % 2, "topic": TOPICS[i % 4], "year": 2000 + i})
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def save_tiny_model(directory: Path, arch: str = "llama") -> Path:
    """The conftest tiny model (same seed, so the same weights as the `tiny_llama` fixture) saved as a checkpoint."""
    tok = build_tokenizer()
    model = build_tiny_model(arch, len(tok))
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return directory
