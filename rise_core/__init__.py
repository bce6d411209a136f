"""RISE (Readout Influence Sketching Estimator): forward-only training-data attribution for causal LMs.

Quick start::

    from rise_core import load_model, RiseConfig, RiseExtractor
    lm = load_model()                       # embedded SmolLM2-135M-Instruct
    pool = ["some training text", {"prompt": "Q?", "completion": "A."}]
    ex = RiseExtractor(lm, RiseConfig())
    ex.fit_hidden_mean(ex.pool_mean_subset(pool))  # the pool's mean hidden state: centring and the HS channel
    feats = ex.extract(pool)
"""

from __future__ import annotations

import importlib
from typing import Any

from . import adapters  # noqa: F401  registers adapter specs (BASE@ADAPTER_DIR) with load_model
from .config import PRESETS, RiseConfig, ScoreOptions, preset, preset_scoring
from .engine import RiseExtractor, SampleFeatures
from .errors import RiseError
from .models import LoadedModel, load_model
from .samples import Sample
from .scoring import ContrastFeatures, FeatureMatrix, score_pool, top_k

__version__ = "0.1.0"

# the index and attribution API, imported on first use (they pull in DuckDB and pandas)
_LAZY = {
    "RiseIndex": "store", "build_index": "store", "list_indexes": "store",
    "query_features": "attribution", "rank": "attribution", "rank_each": "attribution", "select": "attribution",
    "explain": "attribution", "explain_versus": "attribution", "read_pool": "ingest",
    "PoolStream": "ingest", "stream_pool": "ingest", "dataset_pool": "ingest",  # pools read in windows, never whole
    "RiseIndexCallback": "callback",  # a transformers Trainer callback indexing the model it trains
    "find_shared_spans": "shared_spans", "span_rows": "shared_spans",  # what the top hits share (a trigger's name)
}

__all__ = [
    "PRESETS", "ContrastFeatures", "FeatureMatrix", "LoadedModel", "RiseConfig", "RiseError", "RiseExtractor", "Sample",
    "SampleFeatures", "ScoreOptions", "load_model", "preset", "preset_scoring", "score_pool", "top_k", "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
