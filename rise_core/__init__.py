"""RISE (Readout Influence Sketching Estimator): forward-only training-data attribution for causal LMs.

Quick start::

    from rise_core import load_model, RiseConfig, RiseExtractor
    lm = load_model()                       # embedded SmolLM2-135M-Instruct
    ex = RiseExtractor(lm, RiseConfig())
    feats = ex.extract(["some training text", {"prompt": "Q?", "completion": "A."}])
"""

from __future__ import annotations

from .config import PRESETS, RiseConfig, ScoreOptions, preset
from .engine import RiseExtractor, SampleFeatures
from .errors import RiseError
from .models import LoadedModel, load_model
from .samples import Sample
from .scoring import FeatureMatrix, score_pool, top_k

__version__ = "0.1.0"

__all__ = [
    "PRESETS", "FeatureMatrix", "LoadedModel", "RiseConfig", "RiseError", "RiseExtractor", "Sample",
    "SampleFeatures", "ScoreOptions", "load_model", "preset", "score_pool", "top_k", "__version__",
]
