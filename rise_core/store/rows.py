"""Rows of a batch as Arrow tables for one bulk insert, and the typed label/metadata columns they add to the view."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd
import torch

from ..errors import InputDataError
from ..ingest import content_hash, jsonable
from ..samples import Sample
from ..scoring import FeatureMatrix
from .schema import FEATURE_DTYPE, RESERVED_COLUMNS, Column, blob_array, merge_types, value_type

# a conversation's turns are stored in its row's metadata under this key (the `samples` view's JSON column of that
# name); its text, prompt and completion columns are NULL, which is how a row is read back as a conversation
CONVERSATION_KEY = "messages"


def stored_meta(sample: Sample) -> dict[str, Any]:
    meta = {k: v for k, v in jsonable(sample.meta).items() if v is not None}
    if sample.messages is not None:
        if CONVERSATION_KEY in meta:
            raise InputDataError(f"sample {sample.id!r} is a conversation and also has metadata {CONVERSATION_KEY!r}, "
                                 "where its turns are stored; rename that metadata key")
        meta[CONVERSATION_KEY] = [t.to_dict() for t in sample.messages]
    return meta


def samples_table(samples: Sequence[Sample], start: int, n_tokens: Sequence[int], truncated: Sequence[bool]
                  ) -> tuple[Any, list[Any], list[dict[str, Any]]]:
    """The rise_samples rows (numbered from `start`), with the JSON-ready label and metadata values of each."""
    import pyarrow as pa

    n = len(samples)
    label_values = [jsonable(s.label) for s in samples]
    meta_values = [stored_meta(s) for s in samples]
    labels = [None if v is None else json.dumps(v, ensure_ascii=False) for v in label_values]
    metas = [json.dumps(v, ensure_ascii=False) if v else None for v in meta_values]
    added_at = datetime.now(timezone.utc).replace(tzinfo=None)
    table = pa.table({
        "row": np.arange(start, start + n, dtype=np.int64), "id": pa.array([str(s.id) for s in samples], pa.string()),
        "text": pa.array([s.text for s in samples], pa.string()),
        "prompt": pa.array([s.prompt for s in samples], pa.string()),
        "completion": pa.array([s.completion for s in samples], pa.string()),
        "label": pa.array(labels, pa.string()), "meta": pa.array(metas, pa.string()),
        "content_sha1": pa.array([content_hash(s) for s in samples], pa.string()),
        "n_tokens": pa.array(np.asarray(n_tokens, dtype=np.int32)),
        "truncated": pa.array(np.asarray(truncated, dtype=bool)),
        "added_at": pa.array([added_at] * n, pa.timestamp("us")),
    })
    return table, label_values, meta_values


def features_table(features: FeatureMatrix, start: int, n_counted: Sequence[int], mean_support: Sequence[float],
                   loss: Sequence[float]) -> Any:
    """The rise_features rows (numbered from `start`): fp16 unit vectors as blobs, their norms and the stats (the HS
    columns only when the features have that channel)."""
    import pyarrow as pa

    def blobs(x: torch.Tensor) -> Any:
        return blob_array(x.detach().cpu().to(torch.float16).numpy().astype(FEATURE_DTYPE))

    columns = {
        "row": np.arange(start, start + len(features), dtype=np.int64),
        "rh": blobs(features.rh), "gh": blobs(features.gh),
        "rh_norm": np.asarray(features.rh_norm.detach().cpu(), dtype=np.float32),
        "gh_norm": np.asarray(features.gh_norm.detach().cpu(), dtype=np.float32),
        "n_counted": np.asarray(n_counted, dtype=np.int32),
        "mean_support": np.asarray(mean_support, dtype=np.float32),
        "loss": pa.array([None if not math.isfinite(float(v)) else float(v) for v in loss], pa.float32()),
    }
    if features.has_hs:
        columns.update(hs=blobs(features.hs), hs_norm=np.asarray(features.hs_norm.detach().cpu(), dtype=np.float32))
    return pa.table(columns)


def merge_columns(existing: Sequence[Column], labels: Sequence[Any], metas: Sequence[dict[str, Any]]
                  ) -> list[Column] | None:
    """The view's label/metadata columns after adding these values; None when unchanged."""
    cols = {(c.source, c.key): Column(**asdict(c)) for c in existing}
    changed = False
    taken = {c.name.lower() for c in cols.values()} | {n.lower() for n in RESERVED_COLUMNS}

    def add(source: str, key: str | None, value: Any) -> None:
        nonlocal changed
        typ = value_type(value)
        if typ is None:
            return
        col = cols.get((source, key))
        if col is None:
            if source == "label":
                name = "label"
            else:
                base = key if key.lower() not in RESERVED_COLUMNS else f"meta_{key}"
                name, k = base, 2
                while name.lower() in taken:
                    name, k = f"{base}_{k}", k + 1
                taken.add(name.lower())
            cols[(source, key)] = Column(name, source, key, typ, len(cols))
            changed = True
        else:
            merged = merge_types(col.sql_type, typ)
            if merged != col.sql_type:
                col.sql_type, changed = merged, True

    for label, meta in zip(labels, metas, strict=True):
        add("label", None, label)
        for key, value in meta.items():
            add("meta", key, value)
    return sorted(cols.values(), key=lambda c: c.position) if changed else None


def stored_messages(value: Any) -> list[dict[str, Any]] | None:
    """The turns of a stored conversation: the `messages` value of a row (JSON text or a list), None when absent."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    return json.loads(value) if isinstance(value, str) else list(value)


def row_text(row: dict[str, Any] | pd.Series, turn_separator: str = "\n") -> str:
    """A row's text as people read it (`sample_from_row`): plain text, or prompt, newline, completion as the model
    reads it; a conversation as one `role: text` per turn, joined by `turn_separator`."""
    sample = sample_from_row(row)
    if sample.messages is not None:
        return turn_separator.join(f"{t.role}: {t.content}" for t in sample.messages)
    return sample.full_text


def sample_from_row(row: dict[str, Any] | pd.Series) -> Sample:
    """A Sample from a row of `RiseIndex.samples()` / `attribution.rank()` (text, prompt + completion, or a
    conversation)."""
    get = row.get

    def clean(v: Any) -> Any:
        return None if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else v

    text, prompt, completion = clean(get("text")), clean(get("prompt")), clean(get("completion"))
    if completion is not None:
        return Sample(prompt=prompt, completion=str(completion), id=clean(get("id")))
    if text is not None:
        return Sample(text=str(text), id=clean(get("id")))
    messages = stored_messages(get(CONVERSATION_KEY))
    if messages is not None:
        return Sample(messages=messages, id=clean(get("id")))
    raise InputDataError(f"row {clean(get('id'))!r} has neither text, a completion nor a conversation")
