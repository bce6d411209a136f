"""Shared helpers for the index, ingest, scoring and CLI tests: a small labelled pool, a tiny model saved to disk, and
random pool features."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from conftest import CORPUS, build_tiny_model, build_tokenizer

from rise_core.scoring import FeatureMatrix

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


def random_features(n: int, seed: int, loss: torch.Tensor | None | str = "default") -> FeatureMatrix:
    """n rows of seeded random unit features (RH 12, GH 8, HS 6 values) with norms in [0.5, 1.5); `loss` per row
    ("default": 2.0 for every row)."""
    g = torch.Generator().manual_seed(seed)

    def unit(d: int) -> torch.Tensor:
        x = torch.randn(n, d, generator=g)
        return x / x.norm(dim=1, keepdim=True)

    rh, gh = unit(12), unit(8)
    rh_norm, gh_norm = torch.rand(n, generator=g) + 0.5, torch.rand(n, generator=g) + 0.5
    hs, hs_norm = unit(6), torch.rand(n, generator=g) + 0.5
    return FeatureMatrix(rh=rh, gh=gh, rh_norm=rh_norm, gh_norm=gh_norm, hs=hs, hs_norm=hs_norm,
                         loss=torch.full((n,), 2.0) if isinstance(loss, str) else loss)


def patch_finding(monkeypatch: Any, finding: Any) -> None:
    """Replace the spans the behaviour test finds (`behaviour.candidates`, for the gradient view and for the rival)
    with `finding(spans, gradient_hits, representation_hits, query)`: None (nothing shared) or one
    BehaviourEvidence, the test's only candidate."""
    from rise_core import behaviour

    def candidates(spans, gradient_hits, representation_hits, query=None, limit=behaviour.SPANS_READ, order=None):
        found = finding(spans, gradient_hits, representation_hits, query)
        return [] if found is None else [found]

    monkeypatch.setattr(behaviour, "candidates", candidates)
