"""The paper's evaluation: labelled pool + queries, every method of the registry (`rise_core.methods`), paper-style
tables.

Every LM-based method (RISE and its ablations, final-hidden-state cosine, exact LM-head gradient sketch) reads one
shared `ReadoutCache`, so the model runs once per sample however many methods or RISE variants are compared; the
shared forward time is charged to each LM method's build and query times.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .agreement import agreement_table
from .bundled import task_files
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError, InputDataError
from .methods import EVALUATE_METHODS, RISE, TaskSource, resolve, rise_variant
from .metrics import METRICS, EvalResult, binary_labels, evaluate_rankings
from .readout_cache import ReadoutCache, grad_sketch_dim
from .samples import Sample

if TYPE_CHECKING:
    from .ingest import PoolData

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
    # query rows of the file that could not be used and were left out: (row, reason), for the caller to report
    skipped_queries: list[tuple[int, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.pool or not self.queries:
            raise InputDataError(f"task {self.name!r} needs a non-empty pool and query set")
        if self.labels.shape != (len(self.pool),):
            raise InputDataError(f"task {self.name!r}: {len(self.pool)} pool samples but {self.labels.shape} labels")
        if self.labels.sum() == 0:
            raise InputDataError(f"task {self.name!r} has no positive (label 1) pool sample")


LABEL_WORDS = "0/1 (or 0.0/1.0), true/false, yes/no, positive/negative, pos/neg"
"""The labels a pool row may carry: those `metrics.binary_labels` reads (the Compare page), case-insensitive."""


def _read_labels(pool: list[Sample], rows: list[int], source: str) -> np.ndarray:
    """The pool's labels as 0/1 (`LABEL_WORDS`); InputDataError naming the file, the first bad row and its value
    when a row has none or another value (0.9 is not rounded, "maybe" not guessed)."""
    labels = binary_labels([s.label for s in pool]) if pool else np.zeros(0, dtype=np.int8)
    if labels is not None:
        return labels.astype(np.int64)
    bad = [(r, s) for r, s in zip(rows, pool, strict=True) if s.label is None or binary_labels([s.label]) is None]
    row, sample = bad[0]
    what = "has no label" if sample.label is None else f"has label {sample.label!r}"
    more = f" (and {len(bad) - 1} more row{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
    raise InputDataError(f"{source}: row {row} (id {sample.id!r}) {what}{more}; evaluation needs a binary label on "
                         f"every pool row: {LABEL_WORDS}")


def _used_skips(data: PoolData, limit: int | None) -> list[tuple[int, str]]:
    """The skipped rows of `data` among the rows the first `limit` samples span (all when there is no limit)."""
    if limit is None or limit >= len(data.samples):
        return list(data.skipped)
    last = data.rows[limit - 1] if limit > 0 else 0
    return [(r, why) for r, why in data.skipped if r < last]


def load_task(name: str | None = None, pool_path: str | Path | None = None, queries_path: str | Path | None = None,
              max_pool: int | None = None, max_queries: int | None = None) -> Task:
    """A bundled task by name (<data dir>/<name>_pool.jsonl + _queries.jsonl, see `bundled.data_dir`) or a user's labelled pool + queries.

    Every pool row (of the first `max_pool`) must be usable and labelled (`LABEL_WORDS`): a row left out would change
    the metrics, so an empty, duplicate or unlabelled row is an InputDataError. Unusable query rows are left out and
    listed in `Task.skipped_queries`."""
    from .ingest import first_reasons, read_pool

    if pool_path is None:
        if name not in TASK_KS:
            raise ConfigError(f"unknown task {name!r}; choose one of {sorted(TASK_KS)} or give --pool and --queries")
        pool_path, queries_path = task_files(name)
    if queries_path is None:
        raise ConfigError("a labelled pool needs a query file too (--queries)")
    pool_data = read_pool(pool_path)
    lost = _used_skips(pool_data, max_pool)
    if lost:
        more = f"; and {len(lost) - 3} more" if len(lost) > 3 else ""
        raise InputDataError(f"{pool_path}: {len(lost)} pool row{'s' if len(lost) > 1 else ''} cannot be used "
                             f"({first_reasons(lost)}{more}); evaluation ranks every labelled row, so fix or remove "
                             "them")
    pool_data.require_samples()
    query_data = read_pool(queries_path).require_samples()
    pool, rows = pool_data.samples[:max_pool], pool_data.rows[:max_pool]
    labels = _read_labels(pool, rows, str(pool_path))
    pool = [s if type(s.label) is int else dataclasses.replace(s, label=int(y))  # "yes" -> 1, as the labels say
            for s, y in zip(pool, labels, strict=True)]
    return Task(name=name or Path(pool_path).stem, pool=pool, labels=labels, queries=query_data.samples[:max_queries],
                ks=TASK_KS.get(name or "", DEFAULT_KS), skipped_queries=_used_skips(query_data, max_queries))


AGREEMENT_REFERENCE, AGREEMENT_K = RISE, 10  # every method's ranking is compared with RISE's top 10


@dataclass
class EvalReport:
    """Results of `evaluate`: the paper-style table and the per-method costs."""

    task: str
    table: pd.DataFrame  # rows: method x K; columns auPRC, auROC, precision@K, AP
    costs: pd.DataFrame  # rows: method; index size, build seconds, per-query seconds
    meta: dict = field(default_factory=dict)
    # rows: every other method; how far its ranking agrees with RISE's (top-k overlap, Spearman, Kendall), per query
    agreement: pd.DataFrame | None = None
    # the same table over a subset of the queries, by name (e.g. "shows the behaviour"); with its query count
    subsets: dict[str, pd.DataFrame] = field(default_factory=dict)
    subset_sizes: dict[str, int] = field(default_factory=dict)
    # rows: method x query x K; the values `table` macro-averages (query: the query's position in the task, query_id
    # its id)
    per_query: pd.DataFrame | None = None

    def per_query_wide(self, metric: str = "auPRC", k: int | None = None) -> pd.DataFrame:
        """Queries x methods for one metric at K (None: 10 where evaluated, else the first K; `attrs["K"]` says which),
        indexed by (query, query_id): which queries each method loses, that the macro average hides."""
        if self.per_query is None:
            raise InputDataError("this report has no per-query values")
        ks = list(dict.fromkeys(self.per_query["K"]))
        k = (10 if 10 in ks else ks[0]) if k is None else k
        if k not in ks:
            raise InputDataError(f"K={k} was not evaluated; evaluated: {', '.join(map(str, ks))}")
        rows = self.per_query[self.per_query["K"] == k]
        wide = rows.pivot(index=["query", "query_id"], columns="method", values=metric)
        wide = wide[[m for m in self.costs.index if m in wide.columns]]
        wide.attrs["K"] = int(k)
        return wide

    def wide(self, metric: str = "auPRC", subset: str | None = None) -> pd.DataFrame:
        """Methods x K for one metric, plus the paper's unified score (mean over K) for auPRC; over the queries of
        `subset` when given."""
        table = self.table if subset is None else self.subsets[subset]
        wide = table.pivot(index="method", columns="K", values=metric)
        wide.columns = [f"{metric}@{k}" for k in wide.columns]
        if metric == "auPRC":
            wide["unified"] = wide.mean(axis=1)
        return wide.loc[[m for m in self.costs.index if m in wide.index]]

    def markdown(self) -> str:
        header = [f"Setting: {self.meta['setting']}" + (f"; attack strength: {self.meta['attack']}"
                                                        if self.meta.get("attack") else ""), ""] \
            if self.meta.get("setting") else []
        parts = [f"### {self.task}", "", *header, self.wide("auPRC").round(3).to_markdown(), ""]
        by = f" ({self.meta['shown_by']})" if self.meta.get("shown_by") else ""
        for name in self.subsets:
            parts += [f"auPRC over the {self.subset_sizes[name]} of {self.meta.get('n_queries', '?')} queries whose "
                      f"answer {name}{by}:", "", self.wide("auPRC", name).round(3).to_markdown(), ""]
        parts += [self.wide("auROC").round(3).to_markdown(), "", self.wide("precision@K").round(3).to_markdown(), "",
                  self.costs.round(4).to_markdown()]
        if self.agreement is not None and len(self.agreement):
            parts += ["", f"Agreement with {AGREEMENT_REFERENCE} (mean over queries)", "",
                      self.agreement.round(3).to_markdown()]
        return "\n".join(parts)


def evaluate(task: Task, lm=None, methods: Sequence[str] = EVALUATE_METHODS, config: RiseConfig | None = None,
             options: ScoreOptions | None = None, cache: ReadoutCache | None = None, batch_size: int = 8,
             progress: Callable[[str], None] | None = None,
             forward_progress: Callable[[int], None] | None = None,
             query_subsets: Mapping[str, np.ndarray] | None = None) -> EvalReport:
    """Run `methods` on `task` and tabulate the paper's metrics (LM methods need `lm` or a `cache`).

    `progress` gets one line per stage; `forward_progress` the number of samples of each forward batch.
    `query_subsets` (name -> boolean mask over the queries) adds the same table over each subset's queries, e.g. the
    regenerated answers that show the behaviour; an empty subset is left out."""
    config, options = config or RiseConfig(), options or ScoreOptions()
    masks = {}
    for name, mask in (query_subsets or {}).items():
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (len(task.queries),):
            raise InputDataError(f"query subset {name!r} has {mask.size} entries for {len(task.queries)} queries")
        if mask.any():
            masks[name] = mask
    chosen = [m for m in resolve(methods) if m.applies(config)]
    lm_methods = [m.name for m in chosen if m.needs_lm]
    if lm_methods and cache is None:
        if lm is None:
            raise ConfigError(f"methods {lm_methods} need a model")
        cache = ReadoutCache.for_config(lm, config, grad_sketch_dim=grad_sketch_dim(config, lm.hidden_size))
    if cache is not None and lm_methods:
        if progress:
            progress(f"forward pass over {len(task.pool) + len(task.queries)} samples")
        cache.add(task.pool + task.queries, batch_size=batch_size, progress=forward_progress)
    tables, costs, scores, per_query = [], [], {}, []
    subset_tables: dict[str, list[pd.DataFrame]] = {name: [] for name in masks}
    for method in chosen:
        name = method.name
        if progress:
            progress(f"scoring with {name}")
        run = method.score(TaskSource(task.pool, task.queries, cache, config, options))
        scores[name] = run.scores
        result = EvalResult.from_scores(run.scores, task.labels, task.ks)
        tab = result.table
        tab.insert(0, "method", name)
        tables.append(tab)
        per_query.append(result.per_query.assign(method=name,
                                                 query_id=[task.queries[q].id for q in result.per_query["query"]]))
        for subset, mask in masks.items():
            sub = result.of_queries(mask)
            sub.insert(0, "method", name)
            subset_tables[subset].append(sub)
        costs.append({"method": name, "index_MB": run.index_bytes / 2**20, "build_s": run.build_seconds,
                      "query_s": run.query_seconds})
    table = pd.concat(tables, ignore_index=True)
    meta = {"n_pool": len(task.pool), "n_positive": int(task.labels.sum()), "n_queries": len(task.queries),
            "config": config.to_dict(), "options": vars(options) if hasattr(options, "__dict__") else str(options)}
    agreement = (agreement_table(scores, AGREEMENT_REFERENCE, AGREEMENT_K)
                 if AGREEMENT_REFERENCE in scores and len(scores) > 1 else None)
    return EvalReport(task=task.name, table=table, costs=pd.DataFrame(costs).set_index("method"), meta=meta,
                      agreement=agreement,
                      subsets={n: pd.concat(t, ignore_index=True) for n, t in subset_tables.items()},
                      subset_sizes={n: int(m.sum()) for n, m in masks.items()},
                      per_query=pd.concat(per_query, ignore_index=True)[["method", "query", "query_id", "K", *METRICS]]
                      if per_query else None)


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
        source = TaskSource(task.pool, task.queries, cache, base, options, memo={})  # features once per choice
        for score_values in itertools.product(*(grid[k] for k in score_keys)):
            choice = {**feature_choice, **dict(zip(score_keys, score_values, strict=False))}
            method = rise_variant(feature_choice, channels=choice.get("channels", "RH+GH").lower().split("+"),
                                  sample_norm=choice.get("sample_norm", options.sample_norm))
            tab = evaluate_rankings(method.score(source).scores, task.labels, task.ks)
            p10 = tab.loc[tab["K"] == 10, "precision@K"]
            rows.append({**choice, "unified_auPRC": tab["auPRC"].mean(), "AP": tab["AP"].iloc[0],
                         **{f"auPRC@{k}": v for k, v in zip(tab["K"], tab["auPRC"], strict=False)},
                         "P@10": float(p10.iloc[0]) if len(p10) else np.nan})
    return pd.DataFrame(rows).sort_values("unified_auPRC", ascending=False, ignore_index=True)
