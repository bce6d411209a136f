"""Several attribution methods' scores of one index's pool for a query set, side by side.

- RISE: the index's stored features, scored by `scoring.score_pool` (what `attribution.rank` ranks).
- Hidden cosine: the cosine of mean final hidden states (over the config's counted positions), rebuilt from the
  index's HS channel and stored pool mean (mean hidden = hs_unit * hs_norm + mean) when the index has one.
- BM25 and MiniLM embeddings: the stored texts (`baselines.BM25Scorer`, `baselines.EmbeddingScorer`).
- Grad-Sketch: the exact LM-head gradient sum_t r_t h_t^T, TensorSketched to as many values per sample as the index
  stores (equal bytes), cosine-scored. It needs one forward pass over the whole pool (`forward_vectors`), which a
  caller runs on demand; that pass also gives hidden cosine for an index without the HS channel.

Scores are (Q, N) float64 matrices, one row per query, column j = feature row j (`RiseIndex.samples()` order). A
query set's ranking is the mean over its rows (for RISE exactly the score of the set's mean features).

These are the index-side scoring functions; which method uses which, and the names shown, live in the one method
registry, `rise_core.methods` (its `compare_methods` scores a query set with several methods for the Compare page, as
`rise evaluate` does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .baselines import BM25Scorer, EmbeddingScorer, Scorer
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError, InputDataError
from .models import LoadedModel
from .readout_cache import ReadoutCache, grad_sketch_dim
from .samples import Sample
from .scoring import FeatureMatrix, score_each_query
from .store import RiseIndex

FORWARD_CHUNK = 256  # pool samples whose readouts are held at once by `forward_vectors`
ROW_CHUNK = 8192  # pool rows widened (or rebuilt from the HS channel) at a time by `cosine_scores`
# `forward_vectors` reads hidden states only, never the candidate lists: the shortest list a ReadoutCache accepts
_FORWARD_K_MAX = RiseConfig().min_top_l


# --- from the index alone -------------------------------------------------------------------------------------------


def rise_scores(index: RiseIndex, query_fm: FeatureMatrix, options: ScoreOptions | None = None) -> np.ndarray:
    """(Q, N) RISE scores of every pool row for each query, with `options` as they apply to the index
    (`ScoreOptions.applied_to`: lambda_hs dropped for an index without the HS channel)."""
    options = (options or ScoreOptions()).applied_to(index.config).options
    return score_each_query(index.feature_matrix(), query_fm, options).double().numpy()


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit length (a zero row stays zero)."""
    return x / x.norm(dim=1, keepdim=True).clamp_min(1e-300)


def no_hs_reason(index: RiseIndex) -> str:
    """Why hidden cosine cannot be rebuilt from this index (no HS channel, or one of another layer than the final),
    and what it needs instead."""
    why = ("has no HS channel (built with hidden_channel off, or before it existed)" if not index.config.hidden_channel
           else f"stores the HS channel of another layer (hs_depth={index.config.hs_depth:g}), not the final hidden "
           "state")
    return f"{index.path.name} {why}: hidden cosine needs a forward pass over its {len(index)} pool samples"


class StoredHidden:
    """An index's pool mean final hidden states as unit rows, rebuilt from the stored HS channel and pool mean (mean
    hidden = hs_unit * hs_norm + mean) when sliced; a pool sample with no counted token is zero. `streamed`: each
    slice's HS columns alone are read from the file (`RiseIndex.load_hidden`) rather than from the feature matrix, so
    a large pool is never held whole."""

    def __init__(self, index: RiseIndex, streamed: bool = False) -> None:
        self.index, self.streamed = index, streamed
        self.fm, mean = (None if streamed else index.feature_matrix()), index.hidden_mean
        has_hs = index.config.hidden_channel if self.fm is None else self.fm.has_hs
        if not has_hs or not index.stores_final_hidden or mean is None:
            raise ConfigError(no_hs_reason(index))
        self.n_rows = len(index) if self.fm is None else len(self.fm)
        self.mean = mean.double()
        self.empty = index.row_mask("n_counted = 0")  # their HS is zero, not a mean hidden state

    def __len__(self) -> int:
        return self.n_rows

    def _hs(self, rows: slice | Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        if self.fm is not None:
            return self.fm.hs[rows], self.fm.hs_norm[rows]
        if isinstance(rows, slice):
            start, stop, step = rows.indices(self.n_rows)
            if step != 1:
                raise ValueError("StoredHidden reads contiguous slices")
            return self.index.load_hidden(start, stop)
        parts = [self.index.row_features(int(r)) for r in rows]
        return torch.cat([p.hs for p in parts]), torch.cat([p.hs_norm for p in parts])

    def __getitem__(self, rows: slice | Sequence[int]) -> torch.Tensor:
        hs, hs_norm = self._hs(rows)
        out = hs.double() * hs_norm.double()[:, None] + self.mean
        out[self.empty[rows]] = 0.0
        return unit_rows(out)

    def rebuild(self, query_fm: FeatureMatrix) -> torch.Tensor:
        """The queries' mean hidden states (unit rows) from their HS features and this pool's mean."""
        if not query_fm.has_hs:
            raise ConfigError("the query features have no HS channel; compute them with the index's extractor")
        return unit_rows(query_fm.hs.double() * query_fm.hs_norm.double()[:, None] + self.mean)


def hidden_cosine_scores(index: RiseIndex, query_fm: FeatureMatrix) -> np.ndarray:
    """(Q, N) cosine of each query's mean final hidden state with each pool sample's, rebuilt from the stored HS
    channel and pool mean (`StoredHidden`); a pool sample with no counted token scores 0. ConfigError without HS."""
    pool = StoredHidden(index)
    return cosine_scores(pool.rebuild(query_fm), pool)


def fit_bm25(index: RiseIndex) -> BM25Scorer:
    """A BM25 scorer fitted on the index's pool texts, columns in row order."""
    scorer = BM25Scorer()
    scorer.fit(index.sample_list())
    return scorer


def fit_embeddings(index: RiseIndex, model_path: str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> EmbeddingScorer:
    """MiniLM (or `model_path`) embeddings of the index's pool texts (`progress(done, total)` after each batch);
    raises ModelLoadError, naming the install command, when the embedding model is not available."""
    scorer = EmbeddingScorer(model_path=model_path)
    scorer.fit(index.sample_list(), progress)
    return scorer


def text_scores(scorer: Scorer, queries: Sequence[Sample]) -> np.ndarray:
    """(Q, N) scores of a text scorer fitted on the pool."""
    return np.asarray(scorer.score(list(queries)), dtype=np.float64)


# --- from a forward pass --------------------------------------------------------------------------------------------


@dataclass
class ForwardVectors:
    """Per-sample unit vectors from one forward pass, float16 like an index's features: the Grad-Sketch (N, dim)
    and the mean final hidden state (N, d), both over the config's counted positions within seq_len."""

    grad: torch.Tensor
    hidden: torch.Tensor

    def __len__(self) -> int:
        return int(self.grad.shape[0])


def forward_vectors(lm: LoadedModel, samples: Sequence[Sample], config: RiseConfig, batch_size: int = 8,
                    progress: Callable[[int, int], None] | None = None) -> ForwardVectors:
    """Grad-Sketch and mean-hidden vectors of `samples` (the pool, or queries), as a `TaskSource` computes them
    from a readout cache: Grad-Sketch in `grad_sketch_dim(config, hidden_size)` values, the index's
    bytes per sample. Readouts are held for FORWARD_CHUNK samples at a time; `progress(done, total)` after each."""
    samples = [Sample.coerce(s) for s in samples]
    if not samples:
        raise InputDataError("no samples to run the model on")
    dim, counted = grad_sketch_dim(config, lm.hidden_size), config.counted_positions
    grads, hiddens = [], []
    for start in range(0, len(samples), FORWARD_CHUNK):
        part = samples[start:start + FORWARD_CHUNK]
        cache = ReadoutCache.for_config(lm, config, k_max=_FORWARD_K_MAX, grad_sketch_dim=dim)
        cache.add(part, batch_size=batch_size)
        grads.append(unit_rows(cache.grad_sketch(part, counted, dim).double()).half())
        hiddens.append(unit_rows(cache.mean_hidden(part, counted).double()).half())
        if progress is not None:
            progress(start + len(part), len(samples))
    return ForwardVectors(grad=torch.cat(grads), hidden=torch.cat(hiddens))


def cosine_scores(queries: torch.Tensor, pool: torch.Tensor | StoredHidden) -> np.ndarray:
    """(Q, N) products of unit query rows with unit pool rows in float64: the one cosine of every vector method (a
    zero row scores 0). `pool`: unit rows (float16 ones widened ROW_CHUNK at a time) or an index's `StoredHidden`."""
    queries = queries.double()
    out = np.empty((len(queries), len(pool)))
    for start in range(0, len(pool), ROW_CHUNK):
        stop = min(start + ROW_CHUNK, len(pool))
        out[:, start:stop] = (queries @ pool[start:stop].double().T).numpy()
    return out
