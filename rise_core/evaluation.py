"""The paper's evaluation: labelled pool + queries, RISE and baselines behind one interface, paper-style tables.

Every LM-based method (RISE and its ablations, final-hidden-state cosine, exact LM-head gradient sketch) reads one
shared `ReadoutCache`, so the model runs once per sample however many methods or RISE variants are compared; the
shared forward time is charged to each LM method's build and query times.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .agreement import agreement_table
from .baselines import BM25Scorer, EmbeddingScorer, Scorer
from .bundled import task_files
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError, InputDataError
from .fusion import FusionScorer
from .metrics import evaluate_rankings
from .readout_cache import ReadoutCache
from .samples import Sample
from .scoring import FeatureMatrix, score_each_query

TASK_KS = {"howdy": (5, 10, 50, 100), "finmed": (5, 10, 50, 100), "brainrot": (5, 10, 25, 50)}
DEFAULT_KS = (5, 10, 50, 100)


@dataclass
class Task:
    """A labelled attribution task: pool samples with binary labels and a query set."""

    name: str
    pool: list[Sample]
    labels: np.ndarray
    queries: list[Sample]
    ks: tuple[int, ...] = DEFAULT_KS

    def __post_init__(self) -> None:
        if not self.pool or not self.queries:
            raise InputDataError(f"task {self.name!r} needs a non-empty pool and query set")
        if self.labels.shape != (len(self.pool),):
            raise InputDataError(f"task {self.name!r}: {len(self.pool)} pool samples but {self.labels.shape} labels")
        if self.labels.sum() == 0:
            raise InputDataError(f"task {self.name!r} has no positive (label 1) pool sample")


def load_task(name: str | None = None, pool_path: str | Path | None = None, queries_path: str | Path | None = None,
              max_pool: int | None = None, max_queries: int | None = None) -> Task:
    """A bundled task by name (<data dir>/<name>_pool.jsonl + _queries.jsonl, see `bundled.data_dir`) or a user's labelled pool + queries."""
    from .ingest import read_pool

    if pool_path is None:
        if name not in TASK_KS:
            raise ConfigError(f"unknown task {name!r}; choose one of {sorted(TASK_KS)} or give --pool and --queries")
        pool_path, queries_path = task_files(name)
    if queries_path is None:
        raise ConfigError("a labelled pool needs a query file too (--queries)")
    pool = read_pool(pool_path).samples[:max_pool]
    queries = read_pool(queries_path).samples[:max_queries]
    missing = [s.id for s in pool if s.label is None]
    if missing:
        raise InputDataError(f"{len(missing)} pool rows have no label (first: {missing[0]!r}); evaluation needs 0/1")
    labels = np.array([int(s.label) for s in pool])
    return Task(name=name or Path(pool_path).stem, pool=pool, labels=labels, queries=queries,
                ks=TASK_KS.get(name or "", DEFAULT_KS))


@dataclass
class MethodRun:
    """Scores of one method on a task, with its costs."""

    name: str
    scores: np.ndarray  # (Q, N)
    build_seconds: float
    query_seconds: float  # per query
    index_bytes: int


class CachedLMScorer(Scorer):
    """Base for scorers that derive pool/query vectors from a shared ReadoutCache."""

    def __init__(self, cache: ReadoutCache) -> None:
        self.cache = cache
        self.pool: list[Sample] = []

    def fit(self, pool: Sequence[Sample]) -> None:
        self.pool = list(pool)
        self.cache.add(self.pool)


class RiseScorer(CachedLMScorer):
    """RISE with a given config and scoring options; `channels` selects RH+GH, RH only or GH only."""

    def __init__(self, cache: ReadoutCache, config: RiseConfig, options: ScoreOptions, name: str = "RISE") -> None:
        super().__init__(cache)
        self.config, self.options, self.name = config, options, name
        self.hidden_mean: torch.Tensor | None = None
        self.pool_fm: FeatureMatrix | None = None

    def fit(self, pool: Sequence[Sample]) -> None:
        super().fit(pool)
        # the pool's mean is fixed once, from the seeded subset an index build fits it on
        self.hidden_mean = (self.cache.pool_hidden_mean(self.pool, self.config) if self.config.needs_hidden_mean
                            else None)
        self.pool_fm = self.cache.rise_features(self.pool, self.config, self.hidden_mean)

    def score(self, queries: Sequence[Sample]) -> np.ndarray:
        self.cache.add(list(queries))
        q_fm = self.cache.rise_features(list(queries), self.config, self.hidden_mean)
        return score_each_query(self.pool_fm, q_fm, self.options).numpy()

    @property
    def index_bytes(self) -> int:
        return len(self.pool) * self.config.bytes_per_sample(self.cache.lm.hidden_size)


class CachedCosineScorer(CachedLMScorer):
    """Cosine similarity of one vector per sample derived from the cache (`_vectors`)."""

    def _vectors(self, samples: Sequence[Sample]) -> torch.Tensor:
        raise NotImplementedError

    def _unit(self, samples: Sequence[Sample]) -> torch.Tensor:
        x = self._vectors(samples).double()
        return x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)

    def fit(self, pool: Sequence[Sample]) -> None:
        super().fit(pool)
        self.pool_vecs = self._unit(self.pool)

    def score(self, queries: Sequence[Sample]) -> np.ndarray:
        self.cache.add(list(queries))
        return (self._unit(queries) @ self.pool_vecs.T).float().numpy()

    @property
    def index_bytes(self) -> int:
        return len(self.pool) * int(self.pool_vecs.shape[1]) * 2


class HiddenCosineScorer(CachedCosineScorer):
    """Cosine of mean final hidden states over the counted positions (the 'representation' baseline)."""

    name = "Hidden-cosine"

    def __init__(self, cache: ReadoutCache, counted: str = "completion") -> None:
        super().__init__(cache)
        self.counted = counted

    def _vectors(self, samples: Sequence[Sample]) -> torch.Tensor:
        return self.cache.mean_hidden(samples, self.counted)


def grad_sketch_dim(config: RiseConfig, hidden_size: int) -> int:
    """The Grad-Sketch dimension at RISE's index size: as many values per sample as `config` stores."""
    return config.feature_values(hidden_size)


class GradSketchScorer(CachedCosineScorer):
    """Exact dense LM-head gradient sum_t r_t h_t^T, TensorSketched to RISE's index size, cosine-scored."""

    name = "Grad-Sketch"

    def __init__(self, cache: ReadoutCache, counted: str = "completion") -> None:
        super().__init__(cache)
        if not cache.grad_sketch_dim:
            raise ConfigError("the readout cache was built without a gradient sketch dimension")
        self.counted = counted

    def _vectors(self, samples: Sequence[Sample]) -> torch.Tensor:
        return self.cache.grad_sketch(samples, self.counted)


METHODS = ("RISE", "RISE-RH+GH", "RISE-RH", "RISE-GH", "RISE-HS", "Hidden-cosine", "Grad-Sketch", "BM25", "Embedding",
           "RISE+BM25")
TEXT_METHODS = ("BM25", "Embedding")  # need no model
AGREEMENT_REFERENCE, AGREEMENT_K = "RISE", 10  # every method's ranking is compared with RISE's top 10
# RISE's own channels, each alone, and pure RISE (the paper's two channels, no HS): weights kept from `options`
CHANNEL_ABLATIONS = {"RISE-RH+GH": ("rh", "gh"), "RISE-RH": ("rh",), "RISE-GH": ("gh",), "RISE-HS": ("hs",)}


def channel_options(options: ScoreOptions, channels: Sequence[str]) -> ScoreOptions:
    """`options` with every channel outside `channels` weighted 0 (a channel in `channels` weighted 0 gets 1)."""
    lam = {c: getattr(options, f"lambda_{c}") for c in ("rh", "gh", "hs")}
    return dataclasses.replace(options, **{f"lambda_{c}": (lam[c] or 1.0) if c in channels else 0.0 for c in lam})


def make_scorers(methods: Sequence[str], cache: ReadoutCache | None, config: RiseConfig, options: ScoreOptions,
                 fusion: str = "rrf") -> dict[str, Scorer]:
    """Scorers by method name (see METHODS); RISE-HS only when `config` stores the HS channel."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ConfigError(f"unknown methods {unknown}; choose from {list(METHODS)}")
    options = options.applied_to(config).options  # the one channel rule (ScoreOptions.for_channels)
    out: dict[str, Scorer] = {}
    for m in methods:
        if m == "RISE":
            out[m] = RiseScorer(cache, config, options, m)
        elif m in CHANNEL_ABLATIONS:
            if m == "RISE-HS" and not config.hidden_channel:
                continue
            out[m] = RiseScorer(cache, config, channel_options(options, CHANNEL_ABLATIONS[m]), m)
        elif m == "Hidden-cosine":
            out[m] = HiddenCosineScorer(cache, config.counted_positions)
        elif m == "Grad-Sketch":
            out[m] = GradSketchScorer(cache, config.counted_positions)
        elif m == "BM25":
            out[m] = BM25Scorer()
        elif m == "Embedding":
            out[m] = EmbeddingScorer()
        elif m == "RISE+BM25":  # query-time fusion of RISE's ranking and BM25's, equally weighted
            out[m] = FusionScorer([RiseScorer(cache, config, options), BM25Scorer()], fusion, name=m)
    return out


def _index_bytes(scorer: Scorer, task: Task) -> int:
    if hasattr(scorer, "index_bytes"):
        return int(scorer.index_bytes)
    if isinstance(scorer, EmbeddingScorer):
        return len(task.pool) * 384 * 2
    return 0  # BM25: an inverted index, not a fixed-size vector per sample


def _shared_cache(scorer: Scorer) -> ReadoutCache | None:
    """The readout cache an LM scorer (or a fusion with one) reads its forward passes from."""
    if isinstance(scorer, CachedLMScorer):
        return scorer.cache
    if isinstance(scorer, FusionScorer):
        return next((c for c in map(_shared_cache, scorer.parts) if c is not None), None)
    return None


def run_method(scorer: Scorer, task: Task) -> MethodRun:
    """Fit on the pool and score the queries, timing both (shared forward time included for LM methods)."""
    cache = _shared_cache(scorer)
    fwd0 = cache.forward_seconds if cache else 0.0
    t0 = time.perf_counter()
    scorer.fit(task.pool)
    build = time.perf_counter() - t0
    fwd1 = cache.forward_seconds if cache else 0.0
    t1 = time.perf_counter()
    scores = scorer.score(task.queries)
    query = time.perf_counter() - t1
    fwd2 = cache.forward_seconds if cache else 0.0
    if cache is not None:
        # charge the shared forward time of pool and queries even when another method already paid it
        build += cache_time(cache, task.pool) - (fwd1 - fwd0)
        query += cache_time(cache, task.queries) - (fwd2 - fwd1)
    return MethodRun(scorer.name, np.asarray(scores, dtype=np.float64), build, query / len(task.queries),
                     _index_bytes(scorer, task))


def cache_time(cache: ReadoutCache, samples: Sequence[Sample]) -> float:
    """Forward seconds attributable to `samples` (by token share of the cache's total)."""
    total = sum(r.completion.numel() for r in cache.readouts.values())
    mine = sum(cache.readouts[cache.key(s)].completion.numel() for s in samples)
    return cache.forward_seconds * mine / max(total, 1)


@dataclass
class EvalReport:
    """Results of `evaluate`: the paper-style table and the per-method costs."""

    task: str
    table: pd.DataFrame  # rows: method x K; columns auPRC, auROC, precision@K, AP
    costs: pd.DataFrame  # rows: method; index size, build seconds, per-query seconds
    meta: dict = field(default_factory=dict)
    # rows: every other method; how far its ranking agrees with RISE's (top-k overlap, Spearman, Kendall), per query
    agreement: pd.DataFrame | None = None

    def wide(self, metric: str = "auPRC") -> pd.DataFrame:
        """Methods x K for one metric, plus the paper's unified score (mean over K) for auPRC."""
        wide = self.table.pivot(index="method", columns="K", values=metric)
        wide.columns = [f"{metric}@{k}" for k in wide.columns]
        if metric == "auPRC":
            wide["unified"] = wide.mean(axis=1)
        return wide.loc[[m for m in self.costs.index if m in wide.index]]

    def markdown(self) -> str:
        header = [f"Setting: {self.meta['setting']}" + (f"; attack strength: {self.meta['attack']}"
                                                        if self.meta.get("attack") else ""), ""] \
            if self.meta.get("setting") else []
        parts = [f"### {self.task}", "", *header, self.wide("auPRC").round(3).to_markdown(), "",
                 self.wide("auROC").round(3).to_markdown(), "", self.wide("precision@K").round(3).to_markdown(), "",
                 self.costs.round(4).to_markdown()]
        if self.agreement is not None and len(self.agreement):
            parts += ["", f"Agreement with {AGREEMENT_REFERENCE} (mean over queries)", "",
                      self.agreement.round(3).to_markdown()]
        return "\n".join(parts)


def evaluate(task: Task, lm=None, methods: Sequence[str] = METHODS, config: RiseConfig | None = None,
             options: ScoreOptions | None = None, cache: ReadoutCache | None = None, batch_size: int = 8,
             progress: Callable[[str], None] | None = None,
             forward_progress: Callable[[int], None] | None = None) -> EvalReport:
    """Run `methods` on `task` and tabulate the paper's metrics (LM methods need `lm` or a `cache`).

    `progress` gets one line per stage; `forward_progress` the number of samples of each forward batch."""
    config, options = config or RiseConfig(), options or ScoreOptions()
    lm_methods = [m for m in methods if m not in TEXT_METHODS]
    if lm_methods and cache is None:
        if lm is None:
            raise ConfigError(f"methods {lm_methods} need a model")
        cache = ReadoutCache(lm, seq_len=config.seq_len, k_max=config.k_max, seed=config.seed,
                             grad_sketch_dim=grad_sketch_dim(config, lm.hidden_size))
    if cache is not None and lm_methods:
        if progress:
            progress(f"forward pass over {len(task.pool) + len(task.queries)} samples")
        cache.add(task.pool + task.queries, batch_size=batch_size, progress=forward_progress)
    tables, costs, scores = [], [], {}
    for name, scorer in make_scorers(methods, cache, config, options).items():
        if progress:
            progress(f"scoring with {name}")
        run = run_method(scorer, task)
        scores[name] = run.scores
        tab = evaluate_rankings(run.scores, task.labels, task.ks)
        tab.insert(0, "method", name)
        tables.append(tab)
        costs.append({"method": name, "index_MB": run.index_bytes / 2**20, "build_s": run.build_seconds,
                      "query_s": run.query_seconds})
    table = pd.concat(tables, ignore_index=True)
    meta = {"n_pool": len(task.pool), "n_positive": int(task.labels.sum()), "n_queries": len(task.queries),
            "config": config.to_dict(), "options": vars(options) if hasattr(options, "__dict__") else str(options)}
    agreement = (agreement_table(scores, AGREEMENT_REFERENCE, AGREEMENT_K)
                 if AGREEMENT_REFERENCE in scores and len(scores) > 1 else None)
    return EvalReport(task=task.name, table=table, costs=pd.DataFrame(costs).set_index("method"), meta=meta,
                      agreement=agreement)


SWEEP_GRID = {
    "counted_positions": ("completion", "all"),
    "token_norm": (True, False),
    "center_hidden": (False, True),
    "sample_norm": ("channel", "joint"),
    "channels": ("RH+GH", "RH", "GH"),
}


FEATURE_FIELDS = ("counted_positions", "token_norm", "center_hidden")


def sweep(task: Task, cache: ReadoutCache, base: RiseConfig | None = None, options: ScoreOptions | None = None,
          grid: dict[str, Sequence] | None = None) -> pd.DataFrame:
    """auPRC (unified over K), AP and precision@10 of every RISE variant in `grid`, from one forward pass.

    Features are computed once per index-time choice (counted positions, per-token normalisation, centring); the
    query-time choices (sample normalisation, channels) only rescore them."""
    base, options = base or RiseConfig(), options or ScoreOptions()
    grid = grid or SWEEP_GRID
    cache.add(task.pool + task.queries)
    feature_keys = [k for k in grid if k in FEATURE_FIELDS]
    score_keys = [k for k in grid if k not in FEATURE_FIELDS]
    rows = []
    for feature_values in itertools.product(*(grid[k] for k in feature_keys)):
        feature_choice = dict(zip(feature_keys, feature_values, strict=False))
        scorer = RiseScorer(cache, base.replace(**feature_choice), options)
        scorer.fit(task.pool)
        query_fm = cache.rise_features(list(task.queries), scorer.config, scorer.hidden_mean)
        for score_values in itertools.product(*(grid[k] for k in score_keys)):
            choice = {**feature_choice, **dict(zip(score_keys, score_values, strict=False))}
            channels = choice.get("channels", "RH+GH")
            opts = channel_options(dataclasses.replace(options, sample_norm=choice.get("sample_norm",
                                                                                      options.sample_norm)),
                                   channels.lower().split("+"))
            tab = evaluate_rankings(score_each_query(scorer.pool_fm, query_fm, opts).numpy(), task.labels, task.ks)
            p10 = tab.loc[tab["K"] == 10, "precision@K"]
            rows.append({**choice, "unified_auPRC": tab["auPRC"].mean(), "AP": tab["AP"].iloc[0],
                         **{f"auPRC@{k}": v for k, v in zip(tab["K"], tab["auPRC"], strict=False)},
                         "P@10": float(p10.iloc[0]) if len(p10) else np.nan})
    return pd.DataFrame(rows).sort_values("unified_auPRC", ascending=False, ignore_index=True)
