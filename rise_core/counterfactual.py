"""Leave-k-out retraining: does removing the training examples a ranking names remove the behaviour they explain?

An attribution claims that some training rows caused a behaviour; the counterfactual test retrains without them. A
check starts from a model fine-tuned on a pool (a `rise finetune` adapter: its manifest holds the base, the pool
hash and the recipe), queries that show the behaviour, and ranking methods, and:

1. ranks the pool for the queries with every method and aggregates the query rankings into one (`aggregate_ranking`:
   by default each row by the best rank it reaches for any query, ties by its mean rank over the queries);
2. plans the arms: the original model (k = 0, no retrain); for every method and k, its top-k rows; for every random
   seed and k, k rows drawn without replacement (`numpy.random.default_rng(seed).permutation`, so a seed's draws are
   nested across k); k = 0 in `ks` adds one retrain on the whole pool, which must reproduce the original adapter bit
   for bit on the machine and settings that made it (`reproduces_original`);
3. re-runs the adapter's own recipe (same base, seed, epochs, learning rate, ...) on the pool minus each arm's rows,
   each retrain a resumable `finetune` in `<out>/arms/<arm>/adapter`;
4. answers held-out prompts with and without the trigger with the original model (once) and every retrained one, and
   measures the behaviour rate with the criterion `rise evaluate --retrospective` uses (`BehaviourClassifier`, fitted
   once on the whole pool: the same instrument for every arm), writing the generations next to the numbers;
5. writes `results.csv`, `results.json` (with the generations) and `curve.html`: the behaviour rate on triggered
   prompts against k per method, the leave-k-out curve.

Run directory: `plan.json` (the request, the original adapter's identity, the rows each arm removes),
`arms/<arm>/{adapter/, generations.jsonl, arm.json}`, `results.csv`, `results.json`, `curve.html`. Running the same
check again resumes it: finished arms are skipped, an interrupted retrain resumes from its checkpoint and an
interrupted generation from its last answer; a directory holding another check is refused.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .adapters import MANIFEST_NAME, read_manifest, split_model_spec
from .config import RiseConfig, ScoreOptions
from .errors import ConfigError, FinetuneError, InputDataError
from .finetune import CHECKPOINT_DIR, FinetuneConfig, FinetuneProgress, finetune, pool_hash
from .generation import GenerationSettings, answer
from .ingest import content_hash
from .methods import GRAD_SKETCH, HIDDEN_COSINE, RISE, canonical, resolve
from .retrospective import (
    TRIGGER_TEMPLATE_DEFAULT,
    BehaviourClassifier,
    apply_trigger,
    check_heldout,
    check_template,
    regenerate,
)
from .samples import Sample
from .units import format_seconds

FORMAT = 1
ORIGINAL = "Original"  # the arm of the model as it is (no retrain)
RANDOM = "Random"  # the control: k rows drawn at random
FULL = "Full pool"  # the retrain on every row (k = 0): reproduces the original adapter
AGGREGATES = ("best_rank", "mean_score")
PLAN_FILE, RESULTS_JSON, RESULTS_CSV, CURVE_HTML = "plan.json", "results.json", "results.csv", "curve.html"
ARMS_DIR, ARM_FILE, GENERATIONS, PARTIAL = "arms", "arm.json", "generations.jsonl", "generations.partial.jsonl"
# what of the original adapter's manifest makes a check the same check (paths may move; these may not)
ORIGINAL_IDENTITY = ("adapter_digest", "base_fingerprint", "pool_hash", "recipe")


# --- configuration --------------------------------------------------------------------------------------------------


def _whole_numbers(values: Any, name: str) -> tuple[int, ...]:
    """The distinct whole numbers of `values`, ascending; a ConfigError naming `name` otherwise."""
    try:
        return tuple(sorted({int(k) for k in values}))
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be whole numbers, got {values!r}") from None


@dataclass(frozen=True)
class CounterfactualConfig:
    """What a leave-k-out check removes, retrains and measures; saved in the run's plan and compared on resume."""

    ks: tuple[int, ...] = (10, 25)
    """how many top-ranked rows each arm removes (0: one retrain on the whole pool, the reproduction check)."""
    methods: tuple[str, ...] = (RISE, "BM25")
    """ranking methods of the registry (`rise_core.methods`), by display name or alias; the first is the one checked,
    the others are its controls."""
    control_ks: tuple[int, ...] | None = None
    """the ks of the controls (the methods after the first, and the random draws); None: every k. A cheaper check:
    the first method's curve at several k, each control at the one k the headline compares."""
    n_random_seeds: int = 3
    """random arms per k (the control): seeds random_seed, random_seed + 1, ..."""
    random_seed: int = 0
    aggregate: Literal["best_rank", "mean_score"] = "best_rank"
    """how several queries' rankings become one: 'best_rank' (each row by the best rank it reaches for any query,
    ties by its mean rank: every query's top rows go first) or 'mean_score' (the query set's mean score: the Select
    page's valuation order)."""
    heldout_prompts: tuple[str, ...] = ()
    """prompts not in the pool, answered with and without the trigger by every arm's model."""
    template: str = TRIGGER_TEMPLATE_DEFAULT
    """the triggered prompt, with {prompt} where the held-out prompt goes."""
    generation: GenerationSettings = field(default_factory=GenerationSettings)
    options: ScoreOptions = field(default_factory=ScoreOptions)
    """scoring options of the RISE methods."""
    where: str | None = None
    """rank only the rows matching this condition over the index's columns (the pages' filter); random draws stay
    over the whole pool."""
    regenerate_queries: bool = False
    """replace each query's completion with the model's own answer to its prompt (the retrospective setting)."""

    def __post_init__(self) -> None:
        ks = _whole_numbers(self.ks, "ks")
        if not ks or ks[0] < 0:
            raise ConfigError(f"ks must be one or more numbers >= 0, got {self.ks!r}")
        object.__setattr__(self, "ks", ks)
        if self.control_ks is not None:
            control = _whole_numbers(self.control_ks, "control_ks")
            if not control or not set(control) <= set(ks) - {0}:
                raise ConfigError(f"control_ks must be some of the ks above 0 ({', '.join(map(str, ks))}), "
                                  f"got {self.control_ks!r}")
            object.__setattr__(self, "control_ks", control)
        names = []
        for name in self.methods:
            found = canonical(str(name))
            if found is None:
                resolve([str(name)])  # raises, listing the valid names
            names.append(found)
        object.__setattr__(self, "methods", tuple(dict.fromkeys(names)))
        if self.n_random_seeds < 0:
            raise ConfigError(f"n_random_seeds must be >= 0, got {self.n_random_seeds}")
        if not self.methods and not self.n_random_seeds and ks != (0,):
            raise ConfigError("give at least one ranking method or a random seed: there is nothing to remove")
        if self.aggregate not in AGGREGATES:
            raise ConfigError(f"unknown aggregate {self.aggregate!r}; choose one of {', '.join(AGGREGATES)}")
        prompts = tuple(str(p).strip() for p in self.heldout_prompts if str(p).strip())
        if not prompts:
            raise ConfigError("give held-out prompts (not in the pool): the check measures the behaviour on their "
                              "answers, with and without the trigger")
        object.__setattr__(self, "heldout_prompts", prompts)
        check_template(self.template)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(self.random_seed + i for i in range(self.n_random_seeds))

    def ks_of(self, method: str) -> tuple[int, ...]:
        """The ks (above 0) at which `method` (a ranking method of the check, or RANDOM) removes rows."""
        checked = bool(self.methods) and method == self.methods[0]
        ks = self.ks if checked or self.control_ks is None else self.control_ks
        return tuple(k for k in ks if k > 0)

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CounterfactualConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        d = {k: v for k, v in d.items() if k in known}
        if isinstance(d.get("generation"), dict):
            d["generation"] = GenerationSettings(**d["generation"])
        if isinstance(d.get("options"), dict):
            d["options"] = ScoreOptions(**d["options"])
        for name in ("ks", "methods", "heldout_prompts", "control_ks"):
            if d.get(name) is not None:
                d[name] = tuple(d[name])
        return cls(**d)


@dataclass(frozen=True)
class Arm:
    """One model of a check: the original, or a retrain without `removed` (pool ids, in ranking order)."""

    arm_id: str
    method: str
    k: int
    seed: int | None = None
    removed: tuple[str, ...] = ()

    @property
    def retrains(self) -> bool:
        return self.method != ORIGINAL

    def to_dict(self) -> dict[str, Any]:
        return {"arm": self.arm_id, "method": self.method, "k": self.k, "seed": self.seed,
                "removed": list(self.removed)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Arm:
        return cls(d["arm"], d["method"], int(d["k"]), d.get("seed"), tuple(d.get("removed", ())))


@dataclass(frozen=True)
class CounterfactualPlan:
    """Everything a check does, fixed before the first retrain: written to `<out>/plan.json`."""

    request: dict[str, Any]
    """what makes two runs the same check: config, original adapter identity, ranking source, queries."""
    original: dict[str, Any]
    """the original adapter: path, digest, base model, pool hash and source, recipe, training time."""
    arms: tuple[Arm, ...]
    queries: tuple[dict[str, Any], ...] = ()
    """the queries as ranked (after regeneration, when asked)."""
    n_pool: int = 0
    created: str = ""

    @property
    def config(self) -> CounterfactualConfig:
        return CounterfactualConfig.from_dict(self.request["config"])

    @property
    def digest(self) -> str:
        return request_digest(self.request)

    def arm(self, arm_id: str) -> Arm:
        return next(a for a in self.arms if a.arm_id == arm_id)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "request": self.request, "request_digest": self.digest, "original": self.original,
                "n_pool": self.n_pool, "queries": list(self.queries), "arms": [a.to_dict() for a in self.arms],
                "created": self.created}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CounterfactualPlan:
        return cls(request=d["request"], original=d["original"], arms=tuple(Arm.from_dict(a) for a in d["arms"]),
                   queries=tuple(d.get("queries", ())), n_pool=int(d.get("n_pool", 0)), created=d.get("created", ""))


@dataclass
class CounterfactualProgress:
    """One report of a running check: which arm, which stage, how far, and the time left for the whole check."""

    arm_id: str
    arm_index: int
    """1-based position of the arm in the plan."""
    n_arms: int
    stage: Literal["train", "generate", "done"]
    step: int = 0
    total: int = 0
    eta_s: float | None = None
    resumed_from: int = 0
    """the training step the retrain resumed from (0: it started fresh)."""
    loss: float | None = None

    def message(self) -> str:
        where = f"Arm {self.arm_index}/{self.n_arms} ({self.arm_id})"
        if self.stage == "train":
            what = f"retraining, step {self.step}/{self.total}" + (
                f" (resumed from step {self.resumed_from})" if self.resumed_from else "")
        elif self.stage == "generate":
            what = f"answering the held-out prompts, {self.step}/{self.total}"
        else:
            what = "done"
        tail = f"; about {format_seconds(self.eta_s)} left for the check" if self.eta_s is not None else ""
        return f"{where}: {what}{tail}."


@dataclass(eq=False)
class CounterfactualResult:
    """A check's results so far: one row per finished arm, the leave-k-out curve, every arm's generations."""

    out_dir: Path
    plan: CounterfactualPlan
    arms: pd.DataFrame
    """one row per finished arm: method, k, seed, rows removed (and how many were positives), the retrain's pool
    hash and size, adapter digest, behaviour rates, time."""
    curve: pd.DataFrame
    """method x k: behaviour rates (random: mean, min and max over the seeds), training time."""
    generations: dict[str, list[dict[str, Any]]]
    stopped: bool = False

    @property
    def complete(self) -> bool:
        return len(self.arms) == len(self.plan.arms)

    def headline(self, method: str = RISE, k: int | None = None, behaviour: str = "behaviour") -> str | None:
        return headline(self, method, k, behaviour)


# --- rankings -------------------------------------------------------------------------------------------------------


def aggregate_ranking(scores: np.ndarray, ids: Sequence[str], how: str = "best_rank") -> list[str]:
    """Pool ids, best first, from (Q, N) scores of N rows (column j: `ids[j]`) for Q queries.

    'best_rank': by the best (lowest) rank a row reaches over the queries, ties by its mean rank, then by column; with
    one query, that query's ranking. 'mean_score': by the mean score over the queries (ties by column)."""
    s = np.asarray(scores, dtype=np.float64)
    s = s[None] if s.ndim == 1 else s
    if s.shape[1] != len(ids):
        raise InputDataError(f"{s.shape[1]} score columns but {len(ids)} ids")
    s = np.where(np.isnan(s), -np.inf, s)
    n = s.shape[1]
    if how == "mean_score":
        order = np.argsort(-s.mean(axis=0), kind="stable")
    elif how == "best_rank":
        ranks = np.empty(s.shape, dtype=np.int64)
        for q in range(len(s)):
            ranks[q, np.argsort(-s[q], kind="stable")] = np.arange(n)
        order = np.lexsort((np.arange(n), ranks.mean(axis=0), ranks.min(axis=0)))  # last key is the primary one
    else:
        raise ConfigError(f"unknown aggregate {how!r}; choose one of {', '.join(AGGREGATES)}")
    return [str(ids[i]) for i in order]


def index_rankings(index: Any, lm: Any, queries: Sequence[Sample], methods: Sequence[str],
                   options: ScoreOptions | None = None, aggregate: str = "best_rank", *, where: str | None = None,
                   bm25: Any = None, embeddings: Any = None) -> dict[str, list[str]]:
    """Each method's ranking of the index's pool for the queries (ids, best first), aggregated over the queries.

    `bm25`, `embeddings`: scorers fitted on the index's pool (or functions returning one); fitted here when a method
    needs them. Grad-Sketch (and hidden cosine on an index without the HS channel) runs one forward pass over the
    pool. A method that cannot rank this index raises ConfigError saying why."""
    from . import compare
    from .attribution import query_features
    from .methods import IndexSource

    chosen = resolve(methods)
    if not chosen:
        return {}
    queries = [Sample.coerce(q) for q in queries]
    query_fm = query_features(index, lm, queries)
    forward = None
    if any(m.name == GRAD_SKETCH or (m.name == HIDDEN_COSINE and not index.config.hidden_channel) for m in chosen):
        forward = compare.forward_vectors(lm, index.sample_list(), index.config)
    source = IndexSource(index, queries, query_fm, options,
                         bm25=bm25 if bm25 is not None else (lambda: compare.fit_bm25(index)),
                         embeddings=embeddings if embeddings is not None else (lambda: compare.fit_embeddings(index)),
                         forward=forward, lm=lm)
    keep = None if where is None else index.row_mask(where).numpy()
    out = {}
    for method in chosen:
        scores = method.score(source)
        if not scores.available:
            raise ConfigError(f"{method.name} cannot rank this index: {scores.missing}")
        matrix, ids = scores.scores, list(scores.ids)
        if keep is not None:
            matrix, ids = matrix[:, keep], [i for i, k in zip(ids, keep, strict=True) if k]
        out[method.name] = aggregate_ranking(matrix, ids, aggregate)
    return out


def task_rankings(pool: Sequence[Sample], queries: Sequence[Sample], lm: Any, methods: Sequence[str],
                  rise_config: RiseConfig | None = None, options: ScoreOptions | None = None,
                  aggregate: str = "best_rank", cache: Any = None) -> dict[str, list[str]]:
    """Each method's ranking of a labelled task's pool (ids, best first), scored as `rise evaluate` scores it (one
    shared forward pass, `cache`, made here when None and a method needs the model)."""
    from .methods import TaskSource
    from .readout_cache import ReadoutCache, grad_sketch_dim

    config, options = rise_config or RiseConfig(), options or ScoreOptions()
    chosen = [m for m in resolve(methods) if m.applies(config)]
    if cache is None and any(m.needs_lm for m in chosen):
        if lm is None:
            raise ConfigError(f"methods {[m.name for m in chosen if m.needs_lm]} need a model")
        cache = ReadoutCache.for_config(lm, config, grad_sketch_dim=grad_sketch_dim(config, lm.hidden_size))
    source = TaskSource(list(pool), list(queries), cache, config, options, memo={})
    if cache is not None and any(m.needs_lm for m in chosen):
        cache.add(source.pool + source.queries)
    return {m.name: aggregate_ranking(run.scores, run.ids, aggregate)
            for m in chosen for run in [m.score(source)]}


# --- the original model and its pool --------------------------------------------------------------------------------


def original_model(lm: Any) -> dict[str, Any]:
    """The identity of `lm`'s adapter, checked to be a `rise finetune` adapter whose manifest holds its recipe."""
    adapter = getattr(lm, "adapter", None)
    if not adapter:
        raise ConfigError("the check retrains the model without the rows a ranking names, so it needs a model "
                          "fine-tuned on the index's pool: an index built with a `rise finetune` adapter "
                          "(rise build POOL --model ADAPTER_DIR)")
    manifest = read_manifest(adapter["path"])
    missing = [k for k in ("recipe", "pool_hash", "base_fingerprint") if not manifest.get(k)]
    if missing:
        raise ConfigError(f"adapter {adapter['path']} has no `rise finetune` manifest ({MANIFEST_NAME} lacks "
                          f"{', '.join(missing)}): the check re-runs the adapter's own recipe, so it needs an adapter "
                          "made by `rise finetune`")
    base, _ = split_model_spec(lm.model_id)
    return {"adapter": adapter["path"], "adapter_digest": adapter["digest"], "base_model": base,
            "base_fingerprint": manifest["base_fingerprint"], "pool_hash": manifest["pool_hash"],
            "n_samples": manifest.get("n_samples"), "pool_source": manifest.get("pool_source"),
            "recipe": manifest["recipe"], "train_s": manifest.get("train_s"), "steps": manifest.get("steps"),
            "device": str(lm.device), "dtype": str(lm.dtype).removeprefix("torch.")}


def _pool_candidates(original: dict[str, Any]) -> list[Path]:
    from .bundled import data_dir

    source = original.get("pool_source")
    if not source:
        return []
    path = Path(str(source)).expanduser()
    return list(dict.fromkeys([path, data_dir() / path.name]))


def training_pool(original: dict[str, Any], pool: str | Path | Sequence[Sample | dict] | None = None
                  ) -> tuple[list[Sample], str]:
    """(samples in training order, where they came from) of the pool the original adapter was fine-tuned on.

    `pool`: the pool file or samples; None: the manifest's `pool_source` (as a path, or by name in the bundled data
    folder). Refused unless its hash is the manifest's pool hash: the retrains must start from exactly that pool."""
    from .ingest import read_pool

    if pool is not None and not isinstance(pool, (str, Path)):
        samples, source = [Sample.coerce(s) for s in pool], str(original.get("pool_source") or "the given samples")
    else:
        if pool is not None:
            paths = [Path(pool).expanduser()]
        else:
            paths = [p for p in _pool_candidates(original) if p.is_file()]
            if not paths:
                raise InputDataError(
                    f"the pool adapter {original['adapter']} was fine-tuned on ({original.get('pool_source')!r}, "
                    f"{original.get('n_samples')} samples, hash {original['pool_hash']}) is not here; give it "
                    "(--pool FILE): the retrains start from exactly that pool")
        samples, source = [], ""
        for path in paths:
            samples, source = read_pool(path).samples, str(path)
            if pool_hash(samples) == original["pool_hash"]:
                break
    if pool_hash(samples) != original["pool_hash"]:
        raise ConfigError(f"adapter {original['adapter']} was fine-tuned on another pool "
                          f"({original.get('pool_source')}, {original.get('n_samples')} samples, hash "
                          f"{original['pool_hash']}); {source} has {len(samples)} samples, hash {pool_hash(samples)}. "
                          "The check retrains on the adapter's own pool, in its order")
    return samples, source


def check_index_pool(index: Any, pool: Sequence[Sample]) -> None:
    """Refuse an index whose rows are not exactly `pool` (the adapter's training pool): same ids, same texts."""
    stored = index.id_hashes()
    ours = {s.id: content_hash(s) for s in pool}
    if stored == ours:
        return
    missing = [i for i in ours if i not in stored]
    extra = [i for i in stored if i not in ours]
    changed = [i for i in ours if i in stored and stored[i] != ours[i]]
    first = (f"{len(missing)} pool rows missing from the index (first: {missing[0]!r})" if missing else
             f"{len(extra)} index rows not in the pool (first: {extra[0]!r})" if extra else
             f"{len(changed)} rows with other text (first: {changed[0]!r})")
    raise ConfigError(f"the index {index.path.name} does not hold the pool its model was fine-tuned on ({first}): "
                      "its model is not a fine-tune of this index's pool. Build the index of that pool with the "
                      "adapter")


def _query_key(q: Sample) -> dict[str, Any]:
    """A query as the request names it: as given (a regenerated query by its prompt and given completion)."""
    return {"prompt": q.prompt, "completion": q.meta.get("given_completion", q.completion), "text": q.text}


def _ranked_query(q: Sample) -> dict[str, Any]:
    """A query as it was ranked (its completion regenerated, when asked)."""
    return {"prompt": q.prompt, "completion": q.completion, "text": q.text}


def _regenerated(lm: Any, queries: list[Sample], config: CounterfactualConfig) -> list[Sample]:
    """The queries answered by the model itself when the config asks (queries regenerated before, whose meta holds
    the given completion, are kept as they are)."""
    if not config.regenerate_queries or all("given_completion" in q.meta for q in queries):
        return queries
    return regenerate(lm, queries, config.generation)


def check_request(config: CounterfactualConfig, original: dict[str, Any], queries: Sequence[Sample],
                  source: dict[str, Any] | None = None) -> dict[str, Any]:
    """What makes two runs the same check (JSON-normal): the config, the original adapter's identity, the ranking
    source (the index, or the task's RISE config) and the queries."""
    request = {"config": config.to_dict(), "original": {k: original.get(k) for k in ORIGINAL_IDENTITY},
               "source": source or {}, "queries": [_query_key(Sample.coerce(q)) for q in queries]}
    return json.loads(json.dumps(request, default=str))


def request_digest(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:16]


def index_source(index: Any) -> dict[str, Any]:
    m = index.manifest
    return {"index_uuid": m.index_uuid, "model_fingerprint": m.model_fingerprint, "config": m.config.fingerprint(),
            "n_samples": m.n_samples}


# --- the plan -------------------------------------------------------------------------------------------------------


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "method"


def make_plan(pool: Sequence[Sample], rankings: Mapping[str, Sequence[str]], config: CounterfactualConfig,
              original: dict[str, Any], request: dict[str, Any], queries: Sequence[Sample] = ()) -> CounterfactualPlan:
    """The arms of a check: the original; each ranking's top k for every k > 0; k random rows per seed and k (one
    permutation per seed, so the draws are nested across k); the full-pool retrain when 0 is among the ks."""
    ids = [s.id for s in pool]
    n = len(ids)
    if len(set(ids)) != n:
        raise InputDataError("the pool has duplicate ids; the check names the rows it removes by id")
    k_max = max(config.ks)
    if k_max >= n:
        raise ConfigError(f"k = {k_max} would remove the whole pool of {n} rows (or more); give ks below {n}")
    known = set(ids)
    arms = [Arm("original", ORIGINAL, 0)]
    taken = {"original", "full-k0"}
    for method, ranking in rankings.items():
        head = [str(r) for r in list(ranking)[:k_max]]
        if len(head) < k_max:
            raise ConfigError(f"{method} ranks only {len(head)} rows (after the filter); k goes up to {k_max}")
        if len(set(head)) != len(head) or not set(head) <= known:
            bad = next((r for r in head if r not in known), None)
            raise InputDataError(f"{method}'s ranking names " + (f"{bad!r}, not a pool id" if bad is not None
                                                                 else "a row twice"))
        stem = _slug(method)
        while any(f"{stem}-k{k}" in taken for k in config.ks):
            stem += "-"
        for k in config.ks_of(method):
            arms.append(Arm(f"{stem}-k{k}", method, k, None, tuple(head[:k])))
            taken.add(arms[-1].arm_id)
    for seed in config.seeds:
        order = np.random.default_rng(seed).permutation(n)
        for k in config.ks_of(RANDOM):
            arms.append(Arm(f"random-s{seed}-k{k}", RANDOM, k, seed, tuple(ids[i] for i in order[:k])))
    if 0 in config.ks:
        arms.append(Arm("full-k0", FULL, 0))
    return CounterfactualPlan(request=request, original=dict(original), arms=tuple(arms),
                              queries=tuple(_ranked_query(Sample.coerce(q)) for q in queries),
                              n_pool=n, created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))


def load_plan(out_dir: str | Path) -> CounterfactualPlan | None:
    path = Path(out_dir) / PLAN_FILE
    if not path.is_file():
        return None
    try:
        return CounterfactualPlan.from_dict(json.loads(path.read_text()))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputDataError(f"{path} is damaged ({exc}); remove the run directory to start the check again") from None


def _differences(saved: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(saved, dict) and isinstance(new, dict):
        return [d for k in dict.fromkeys([*saved, *new])
                for d in _differences(saved.get(k), new.get(k), f"{prefix}{k}.")]
    return [] if saved == new else [prefix.rstrip(".")]


def _same_request(saved: CounterfactualPlan, request: dict[str, Any], out: Path) -> None:
    if saved.request != request:
        diff = _differences(saved.request, request)
        raise ConfigError(f"{out} holds another check (it differs in: {', '.join(diff[:6])}"
                          f"{', ...' if len(diff) > 6 else ''}); give another output directory, or remove it to "
                          "start over")


def claim(out_dir: str | Path, plan: CounterfactualPlan) -> CounterfactualPlan:
    """The plan of the run in `out_dir`: the saved one when it is the same check (resume), else `plan`, written to
    a new or empty directory. Another check's directory, or a non-empty one without a plan, is refused."""
    out = Path(out_dir)
    saved = load_plan(out)
    if saved is not None:
        _same_request(saved, plan.request, out)
        return saved
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} exists and holds no {PLAN_FILE}: the check writes only into a new or empty "
                          "directory (give another output directory)")
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / PLAN_FILE, plan.to_dict())
    return plan


def prepare_check(index: Any, lm: Any, queries: Sequence[Sample | dict | str], config: CounterfactualConfig,
                  out_dir: str | Path | None = None, *, pool: str | Path | Sequence[Sample] | None = None,
                  rankings: Mapping[str, Sequence[str]] | None = None, bm25: Any = None, embeddings: Any = None
                  ) -> tuple[list[Sample], CounterfactualPlan]:
    """(training pool, plan) of a check on an index built with a fine-tuned model.

    Refuses a model that is not a `rise finetune` adapter, a pool whose hash is not the manifest's, an index whose
    rows are not that pool, and held-out prompts that are pool prompts. A saved plan of the same check in `out_dir`
    is reused without ranking again (a resumed check removes exactly the rows it planned). `rankings` gives some
    methods' rankings (ids, best first: the page's own ranking); the other methods of `config` are ranked here."""
    original = original_model(lm)
    index.check_model(lm)
    samples, source = training_pool(original, pool)
    original["pool_source"] = source
    check_index_pool(index, samples)
    check_heldout(config.heldout_prompts, samples, config.template, source="the held-out prompts")
    queries = [Sample.coerce(q) for q in queries]
    if not queries:
        raise InputDataError("give the queries (the behaviour to explain)")
    request = check_request(config, original, queries, index_source(index) | {"where": config.where})
    saved = load_plan(out_dir) if out_dir is not None else None
    if saved is not None:
        _same_request(saved, request, Path(out_dir))
        return samples, saved
    queries = _regenerated(lm, queries, config)
    given = {canonical(m) or m: list(r) for m, r in (rankings or {}).items()}
    todo = [m for m in config.methods if m not in given]
    given.update(index_rankings(index, lm, queries, todo, config.options, config.aggregate, where=config.where,
                                bm25=bm25, embeddings=embeddings))
    ordered = {m: given[m] for m in config.methods}
    return samples, make_plan(samples, ordered, config, original, request, queries)


def prepare_task_check(pool: Sequence[Sample], queries: Sequence[Sample], lm: Any, config: CounterfactualConfig,
                       out_dir: str | Path | None = None, *, rise_config: RiseConfig | None = None, cache: Any = None,
                       pool_source: str | None = None) -> tuple[list[Sample], CounterfactualPlan]:
    """(pool, plan) of a check on a labelled task (`rise evaluate --counterfactual`): the pool is the task's, in file
    order, and must be the one `lm`'s adapter was fine-tuned on; the methods rank it as the evaluation does."""
    original = original_model(lm)
    samples, source = training_pool(original, list(pool))
    original["pool_source"] = pool_source or source
    check_heldout(config.heldout_prompts, samples, config.template, source="the held-out prompts")
    queries = [Sample.coerce(q) for q in queries]
    rise_config = rise_config or RiseConfig()
    request = check_request(config, original, queries, {"task_config": rise_config.to_dict()})
    saved = load_plan(out_dir) if out_dir is not None else None
    if saved is not None:
        _same_request(saved, request, Path(out_dir))
        return samples, saved
    queries = _regenerated(lm, queries, config)
    rankings = task_rankings(samples, queries, lm, config.methods, rise_config, config.options, config.aggregate,
                             cache)
    return samples, make_plan(samples, rankings, config, original, request, queries)


# --- running it -----------------------------------------------------------------------------------------------------


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _steps(n_train: int, recipe: FinetuneConfig) -> int:
    return math.ceil(n_train / recipe.batch_size) * recipe.epochs


def _jsonable(value: Any) -> Any:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


class _Clock:
    """The time left for a check: the steps and answers still to do, at the rates seen so far in this run."""

    def __init__(self, steps_left: int, answers_left: int) -> None:
        self.steps_left, self.answers_left = steps_left, answers_left
        self.step_s: float | None = None
        self.answer_s: float | None = None
        self._last: float | None = None
        self._measured: set[str] = set()  # rates seen in this run (a first guess is replaced, not averaged)

    def tick(self, kind: str) -> None:
        """One training step or one answer just finished."""
        now = time.perf_counter()
        if self._last is not None:
            seconds = now - self._last
            rate = "step_s" if kind == "step" else "answer_s"
            old = getattr(self, rate) if rate in self._measured else None
            setattr(self, rate, seconds if old is None else 0.8 * old + 0.2 * seconds)
            self._measured.add(rate)
        self._last = now
        if kind == "step":
            self.steps_left = max(0, self.steps_left - 1)
        else:
            self.answers_left = max(0, self.answers_left - 1)

    def pause(self) -> None:
        """Between stages: the next tick measures from here (model loading is not a step)."""
        self._last = time.perf_counter()

    def eta(self) -> float | None:
        if (self.steps_left and self.step_s is None) or (self.answers_left and self.answer_s is None):
            return None
        return self.steps_left * (self.step_s or 0.0) + self.answers_left * (self.answer_s or 0.0)


def _expected_answers(config: CounterfactualConfig) -> list[tuple[str, str]]:
    """(kind, prompt) of every answer an arm gives, in order: each held-out prompt triggered, then clean."""
    out = []
    for p in config.heldout_prompts:
        out += [("triggered", apply_trigger(config.template, p)), ("clean", p)]
    return out


def run_counterfactual(lm: Any, pool: Sequence[Sample], plan: CounterfactualPlan, out_dir: str | Path, *,
                       classifier: Any = None, load: Callable[[str], Any] | None = None,
                       progress: Callable[[CounterfactualProgress], None] | None = None,
                       should_stop: Callable[[], bool] | None = None,
                       keep_adapters: bool = True) -> CounterfactualResult:
    """Run (or resume) the check `plan` in `out_dir`; `lm` is the original model (base + the original adapter).

    `classifier` (anything with `shows(texts) -> bool array`; default `BehaviourClassifier.fit(pool)`, MiniLM) judges
    every answer. `load(spec)` loads a model (default `load_model` on `lm`'s device and dtype): the base for the
    retrains, then each retrained adapter. `should_stop` is asked after every training step and answer: the run
    checkpoints and returns with `stopped` set; calling again resumes. `keep_adapters=False` deletes each retrained
    adapter once its answers are written (its manifest is kept beside them)."""
    from .models import load_model

    out = Path(out_dir)
    plan = claim(out, plan)
    pool = [Sample.coerce(s) for s in pool]
    if pool_hash(pool) != plan.original["pool_hash"]:
        raise ConfigError(f"the pool given has hash {pool_hash(pool)}, not the plan's {plan.original['pool_hash']}")
    config, recipe = plan.config, FinetuneConfig.from_dict(plan.original["recipe"])
    device, dtype = str(lm.device), str(lm.dtype).removeprefix("torch.")
    load = load or (lambda spec: load_model(spec, device=device, dtype=dtype))
    judges: list[Any] = [classifier]  # the default classifier loads MiniLM: only when an arm has answers to judge

    def shows(texts: list[str]) -> np.ndarray:
        if judges[0] is None:
            judges[0] = BehaviourClassifier.fit(pool)
        return np.asarray(judges[0].shows(texts), dtype=bool)

    expected = _expected_answers(config)
    labels = {s.id: s.label for s in pool}
    has_labels = any(v is not None for v in labels.values())

    done: dict[str, dict[str, Any]] = {}
    for arm in plan.arms:
        row = _read_json(out / ARMS_DIR / arm.arm_id / ARM_FILE)
        if row is not None:
            done[arm.arm_id] = row
    pending = [a for a in plan.arms if a.arm_id not in done]
    clock = _Clock(sum(_steps(plan.n_pool - a.k, recipe) for a in pending if a.retrains),
                   len(expected) * len(pending))
    if done.get("original", {}).get("wall_s"):  # first guesses, until this run has measured its own rates
        clock.answer_s = done["original"]["wall_s"] / max(1, len(expected))
    if plan.original.get("train_s") and plan.original.get("steps"):
        clock.step_s = plan.original["train_s"] / plan.original["steps"]
    base: Any = None
    stopped = False
    n_arms = len(plan.arms)

    def report(arm_index: int, arm: Arm, stage: str, step: int = 0, total: int = 0, resumed: int = 0,
               loss: float | None = None) -> None:
        if progress is not None:
            progress(CounterfactualProgress(arm.arm_id, arm_index, n_arms, stage, step, total, clock.eta(), resumed,
                                            loss))

    for arm_index, arm in enumerate(plan.arms, 1):
        if arm.arm_id in done:
            continue
        if should_stop is not None and should_stop():
            stopped = True
            break
        arm_dir = out / ARMS_DIR / arm.arm_id
        arm_dir.mkdir(parents=True, exist_ok=True)
        removed = set(arm.removed)
        train = [s for s in pool if s.id not in removed]
        manifest: dict[str, Any] = {}
        started = time.perf_counter()
        if arm.retrains:
            adapter_dir = arm_dir / "adapter"
            if (adapter_dir / MANIFEST_NAME).exists() and not (adapter_dir / CHECKPOINT_DIR).exists():
                manifest = read_manifest(adapter_dir)
                clock.steps_left = max(0, clock.steps_left - _steps(len(train), recipe))
            else:
                if base is None:
                    base = load(plan.original["base_model"])
                    if base.fingerprint() != plan.original["base_fingerprint"]:
                        raise ConfigError(
                            f"the base model {plan.original['base_model']!r} loaded here (fingerprint "
                            f"{base.fingerprint()}, {device}, {dtype}) is not the one adapter "
                            f"{plan.original['adapter']} was trained on ({plan.original['base_fingerprint']}): the "
                            "retrains would not re-run its recipe. Load the model with the dtype it was trained in")
                clock.pause()
                resumed_at = 0

                def on_step(p: FinetuneProgress, arm_index: int = arm_index, arm: Arm = arm) -> None:
                    nonlocal resumed_at
                    if p.resumed_from and p.step == p.resumed_from + 1:
                        resumed_at = p.resumed_from
                        clock.steps_left = max(0, clock.steps_left - p.resumed_from)
                    clock.tick("step")
                    report(arm_index, arm, "train", p.step, p.total_steps, resumed_at, p.loss)

                result = finetune(base, train, adapter_dir, recipe, progress=on_step, should_stop=should_stop,
                                  pool_source=f"{plan.original.get('pool_source')} without {arm.k} rows ({arm.arm_id})")
                if result.stopped:
                    stopped = True
                    break
                manifest = result.manifest
            if manifest.get("pool_hash") != pool_hash(train) or manifest.get("n_samples") != len(train):
                raise FinetuneError(f"{adapter_dir} holds an adapter of another pool (hash {manifest.get('pool_hash')}, "
                                    f"not {pool_hash(train)}); remove it to retrain this arm")
        get_model = partial(load, str(arm_dir / "adapter")) if arm.retrains else partial(lambda m: m, lm)
        answers = _answers(arm_dir, expected, get_model, config.generation, clock, should_stop,
                           lambda step, total, i=arm_index, a=arm: report(i, a, "generate", step, total))
        if answers is None:
            stopped = True
            break
        judged = shows([a["generation"] for a in answers])
        generations = [{**a, "shows": bool(s)} for a, s in zip(answers, judged, strict=True)]
        (arm_dir / GENERATIONS).write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in generations),
                                           encoding="utf-8")
        (arm_dir / PARTIAL).unlink(missing_ok=True)
        row = _arm_row(arm, plan, manifest, generations, labels if has_labels else None, len(train),
                       time.perf_counter() - started)
        _write_json(arm_dir / ARM_FILE, row)
        done[arm.arm_id] = row
        if arm.retrains and not keep_adapters:
            shutil.copy2(arm_dir / "adapter" / MANIFEST_NAME, arm_dir / MANIFEST_NAME)
            shutil.rmtree(arm_dir / "adapter", ignore_errors=True)
        report(arm_index, arm, "done")
    result = _result(out, plan, done, stopped)
    write_results(result)
    return result


def _answers(arm_dir: Path, expected: list[tuple[str, str]], get_model: Callable[[], Any],
             settings: GenerationSettings, clock: _Clock, should_stop: Callable[[], bool] | None,
             report: Callable[[int, int], None]) -> list[dict[str, str]] | None:
    """The arm's answers to the held-out prompts, resumed from its partial file; None when stopped."""
    final = arm_dir / GENERATIONS
    partial = arm_dir / PARTIAL
    have: list[dict[str, str]] = []
    if final.is_file():  # answered and judged before the arm's results were written
        have = [json.loads(line) for line in final.read_text(encoding="utf-8").splitlines() if line.strip()]
    elif partial.is_file():
        have = [json.loads(line) for line in partial.read_text(encoding="utf-8").splitlines() if line.strip()]
    if [(a.get("kind"), a.get("prompt")) for a in have] != expected[:len(have)]:
        have = []  # written for other prompts: start over
    have = [{"kind": a["kind"], "prompt": a["prompt"], "generation": a["generation"]} for a in have]
    clock.answers_left = max(0, clock.answers_left - len(have))
    if len(have) == len(expected):
        return have
    model = get_model()
    clock.pause()
    with partial.open("w", encoding="utf-8") as fh:
        for a in have:
            fh.write(json.dumps(a, ensure_ascii=False) + "\n")
        for kind, prompt in expected[len(have):]:
            have.append({"kind": kind, "prompt": prompt, "generation": answer(model, prompt, settings)})
            fh.write(json.dumps(have[-1], ensure_ascii=False) + "\n")
            fh.flush()
            clock.tick("answer")
            report(len(have), len(expected))
            if should_stop is not None and should_stop() and len(have) < len(expected):
                return None
    return have


def _rate(generations: list[dict[str, Any]], kind: str) -> float | None:
    values = [g["shows"] for g in generations if g["kind"] == kind]
    return float(np.mean(values)) if values else None


def _arm_row(arm: Arm, plan: CounterfactualPlan, manifest: dict[str, Any], generations: list[dict[str, Any]],
             labels: dict[str, Any] | None, n_train: int, wall_s: float) -> dict[str, Any]:
    original = plan.original
    row = {"arm": arm.arm_id, "method": arm.method, "k": arm.k, "seed": arm.seed, "n_removed": len(arm.removed),
           "n_positive_removed": (sum(1 for r in arm.removed if labels.get(r) == 1) if labels is not None else None),
           "n_train": n_train, "pool_hash": manifest.get("pool_hash", original["pool_hash"]),
           "adapter_digest": manifest.get("adapter_digest", original["adapter_digest"]),
           "triggered_rate": _rate(generations, "triggered"), "clean_behaviour_rate": _rate(generations, "clean"),
           "n_heldout": len(plan.config.heldout_prompts),
           "train_s": manifest.get("train_s", original.get("train_s")),
           "steps": manifest.get("steps"), "final_loss": manifest.get("final_loss"), "wall_s": round(wall_s, 2),
           "reproduces_original": (manifest.get("adapter_digest") == original["adapter_digest"]
                                   if arm.method == FULL else None),
           "removed": list(arm.removed)}
    return {k: _jsonable(v) for k, v in row.items()}


ARM_COLUMNS = ["arm", "method", "k", "seed", "n_removed", "n_positive_removed", "n_train", "pool_hash",
               "adapter_digest", "triggered_rate", "clean_behaviour_rate", "n_heldout", "train_s", "steps",
               "final_loss", "wall_s", "reproduces_original", "removed"]


def curve_table(arms: pd.DataFrame) -> pd.DataFrame:
    """The leave-k-out curve: per method and k, the behaviour rates after removing the top k (random: mean, min and
    max over the seeds); k = 0 is the original model on every method's line."""
    if arms.empty:
        return pd.DataFrame(columns=["method", "k", "triggered_rate", "triggered_min", "triggered_max",
                                     "clean_behaviour_rate", "n_positive_removed", "n_arms", "train_s"])
    original = arms[arms["method"] == ORIGINAL]
    rows = []
    methods = [m for m in dict.fromkeys(arms["method"]) if m not in (ORIGINAL, FULL)]
    for method in methods:
        part = arms[arms["method"] == method]
        if len(original):
            part = pd.concat([original.assign(method=method), part], ignore_index=True)
        for k, group in part.groupby("k", sort=True):
            rates = group["triggered_rate"].astype(float)
            rows.append({"method": method, "k": int(k), "triggered_rate": rates.mean(),
                         "triggered_min": rates.min(), "triggered_max": rates.max(),
                         "clean_behaviour_rate": group["clean_behaviour_rate"].astype(float).mean(),
                         "n_positive_removed": pd.to_numeric(group["n_positive_removed"]).mean(),
                         "n_arms": len(group), "train_s": pd.to_numeric(group["train_s"]).mean() if k else None})
    return pd.DataFrame(rows)


def _result(out: Path, plan: CounterfactualPlan, done: dict[str, dict[str, Any]], stopped: bool
            ) -> CounterfactualResult:
    rows = [done[a.arm_id] for a in plan.arms if a.arm_id in done]
    arms = pd.DataFrame(rows, columns=ARM_COLUMNS)
    generations = {}
    for a in plan.arms:
        path = out / ARMS_DIR / a.arm_id / GENERATIONS
        if a.arm_id in done and path.is_file():
            generations[a.arm_id] = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                                     if line.strip()]
    return CounterfactualResult(out, plan, arms, curve_table(arms), generations, stopped)


def write_results(result: CounterfactualResult) -> None:
    """`results.csv` (one row per finished arm), `results.json` (plan, arms, curve, generations, headline) and
    `curve.html` (the leave-k-out curve; plotly.js from its CDN) in the run directory."""
    out = result.out_dir
    table = result.arms.copy()
    table["removed"] = [" ".join(r) for r in table["removed"]]
    table.to_csv(out / RESULTS_CSV, index=False)
    _write_json(out / RESULTS_JSON, {
        "format": FORMAT, "complete": result.complete, "stopped": result.stopped,
        "headline": result.headline() if RISE in result.plan.config.methods else None,
        "plan": result.plan.to_dict(), "arms": json.loads(result.arms.to_json(orient="records")),
        "curve": json.loads(result.curve.to_json(orient="records")), "generations": result.generations})
    if len(result.curve):
        curve_figure(result).write_html(out / CURVE_HTML, include_plotlyjs="cdn")


# --- reading results ------------------------------------------------------------------------------------------------


def load_result(out_dir: str | Path) -> CounterfactualResult | None:
    """The results written by a check (finished or not) in `out_dir`, or None when it has none yet."""
    out = Path(out_dir)
    data = _read_json(out / RESULTS_JSON)
    if data is None:
        return None
    plan = CounterfactualPlan.from_dict(data["plan"])
    arms = pd.DataFrame(data.get("arms", []), columns=ARM_COLUMNS)
    return CounterfactualResult(out, plan, arms, curve_table(arms), data.get("generations", {}),
                                bool(data.get("stopped")))


def list_runs(root: str | Path) -> list[dict[str, Any]]:
    """The checks under `root` (one run directory each), newest first: when, queries, ks, methods, status."""
    runs = []
    root = Path(root)
    if not root.is_dir():
        return runs
    for d in sorted(p for p in root.iterdir() if (p / PLAN_FILE).is_file()):
        try:
            plan = load_plan(d)
        except InputDataError:
            continue
        assert plan is not None
        result = load_result(d)
        n_done = 0 if result is None else len(result.arms)
        config = plan.config
        query = next((q.get("prompt") or q.get("text") or "" for q in plan.queries or plan.request["queries"]), "")
        runs.append({"run": d.name, "path": str(d), "created": plan.created, "query": query,
                     "n_queries": len(plan.request["queries"]), "ks": ", ".join(map(str, config.ks)),
                     "methods": ", ".join([*config.methods, *([RANDOM] if config.seeds else [])]),
                     "arms done": f"{n_done}/{len(plan.arms)}",
                     "status": "complete" if n_done == len(plan.arms) else "stopped" if n_done or
                     (d / ARMS_DIR).is_dir() else "planned",
                     "headline": result.headline() if result is not None else None})
    return sorted(runs, key=lambda r: r["created"], reverse=True)


def headline(result: CounterfactualResult, method: str = RISE, k: int | None = None,
             behaviour: str = "behaviour") -> str | None:
    """'Removing the k examples RISE ranked highest takes the <behaviour> rate from A% to B%; removing k random
    examples leaves C% (mean of n seeds).' for the largest k (or `k`) with results; None when they are missing."""
    curve = result.curve
    if curve.empty or not (curve["method"] == method).any():
        return None
    mine = curve[(curve["method"] == method) & (curve["k"] > 0)]
    if k is None:
        if mine.empty:
            return None
        k = int(mine["k"].max())
    before = curve[(curve["method"] == method) & (curve["k"] == 0)]
    after = mine[mine["k"] == k]
    if before.empty or after.empty:
        return None
    text = (f"Removing the {k} examples {method} ranked highest takes the {behaviour} rate from "
            f"{before['triggered_rate'].iloc[0]:.0%} to {after['triggered_rate'].iloc[0]:.0%}")
    rand = curve[(curve["method"] == RANDOM) & (curve["k"] == k)]
    if len(rand):
        n = int(rand["n_arms"].iloc[0])
        text += (f"; removing {k} random examples leaves {rand['triggered_rate'].iloc[0]:.0%}"
                 + (f" (mean of {n} seeds)" if n > 1 else ""))
    return text + "."


def curve_figure(result: CounterfactualResult, rate: str = "triggered_rate") -> Any:
    """A plotly figure of the leave-k-out curve: the behaviour rate against k, one line per method (random: the mean
    over the seeds, with their range as error bars)."""
    import plotly.graph_objects as go

    curve = result.curve
    fig = go.Figure()
    for method in dict.fromkeys(curve["method"]):
        part = curve[curve["method"] == method].sort_values("k")
        error = None
        if method == RANDOM and rate == "triggered_rate":
            error = dict(type="data", symmetric=False, array=(part["triggered_max"] - part["triggered_rate"]).tolist(),
                         arrayminus=(part["triggered_rate"] - part["triggered_min"]).tolist())
        fig.add_trace(go.Scatter(x=part["k"].tolist(), y=part[rate].tolist(), mode="lines+markers", name=method,
                                 error_y=error, line=dict(dash="dot") if method == RANDOM else None))
    what = "triggered" if rate == "triggered_rate" else "clean"
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=40, b=10), yaxis_range=[-0.02, 1.02],
                      title=f"Behaviour rate on {what} held-out prompts after retraining without the top k",
                      xaxis_title="k (training examples removed)", yaxis_title="behaviour rate",
                      yaxis_tickformat=".0%")
    return fig


def side_by_side(result: CounterfactualResult, arm_id: str, kind: str = "triggered") -> pd.DataFrame:
    """The held-out prompts of `kind` with the original model's answer and `arm_id`'s, and whether each shows the
    behaviour: the before/after view."""
    before = [g for g in result.generations.get("original", []) if g["kind"] == kind]
    after = [g for g in result.generations.get(arm_id, []) if g["kind"] == kind]
    rows = [{"prompt": b["prompt"], "original": b["generation"], "original shows it": b["shows"],
             "retrained": a["generation"], "retrained shows it": a["shows"]}
            for b, a in zip(before, after, strict=False)]
    return pd.DataFrame(rows, columns=["prompt", "original", "original shows it", "retrained", "retrained shows it"])


# --- the whole check ------------------------------------------------------------------------------------------------


def counterfactual(index: Any, lm: Any, queries: Sequence[Sample | dict | str], config: CounterfactualConfig,
                   out_dir: str | Path, *, pool: str | Path | Sequence[Sample] | None = None,
                   rankings: Mapping[str, Sequence[str]] | None = None, classifier: Any = None,
                   load: Callable[[str], Any] | None = None, bm25: Any = None, embeddings: Any = None,
                   progress: Callable[[CounterfactualProgress], None] | None = None,
                   should_stop: Callable[[], bool] | None = None, keep_adapters: bool = True) -> CounterfactualResult:
    """Run (or resume) a leave-k-out check on an index built with a fine-tuned model: `prepare_check`, then
    `run_counterfactual` (see both for the arguments)."""
    samples, plan = prepare_check(index, lm, queries, config, out_dir, pool=pool, rankings=rankings, bm25=bm25,
                                  embeddings=embeddings)
    return run_counterfactual(lm, samples, plan, out_dir, classifier=classifier, load=load, progress=progress,
                              should_stop=should_stop, keep_adapters=keep_adapters)
