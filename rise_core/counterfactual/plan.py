"""The plan of a check, fixed before its first retrain: the original adapter and its training pool (checked), the
request that makes two runs the same check, and the arms (which rows each removes)."""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..adapters import MANIFEST_NAME, read_manifest, split_model_spec
from ..bundled import data_dir
from ..config import RiseConfig
from ..errors import ConfigError, InputDataError
from ..finetune import pool_hash
from ..ingest import content_hash, read_pool
from ..methods import canonical
from ..ranking import Ranking
from ..retrospective import check_heldout, regenerate
from ..samples import Sample
from ..saved_config import dict_differences
from .config import (
    FULL,
    ORIGINAL,
    ORIGINAL_IDENTITY,
    PLAN_FILE,
    RANDOM,
    Arm,
    CounterfactualConfig,
    CounterfactualPlan,
    write_json,
)
from .rankings import index_rankings, task_rankings

# --- the original model and its pool ----------------------------------------------------------------------------------


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


def index_source(index: Any) -> dict[str, Any]:
    """The index a check ranks (part of its request): its identity, model, config and size."""
    m = index.manifest
    return {"index_uuid": m.index_uuid, "model_fingerprint": m.model_fingerprint, "config": m.config.fingerprint(),
            "n_samples": m.n_samples}


# --- the plan ---------------------------------------------------------------------------------------------------------


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "method"


def random_ranking(n: int, seed: int) -> Ranking:
    """A random order of n pool rows (`numpy.random.default_rng(seed).permutation`): the random control's ranking,
    whose top k for growing k are nested draws without replacement."""
    order = np.random.default_rng(seed).permutation(n)
    return Ranking(rows=torch.from_numpy(order.astype(np.int64)), scores=torch.zeros(n), parts={})


def make_plan(pool: Sequence[Sample], rankings: Mapping[str, Ranking], config: CounterfactualConfig,
              original: dict[str, Any], request: dict[str, Any], queries: Sequence[Sample] = (), *,
              row_ids: Sequence[str] | None = None) -> CounterfactualPlan:
    """The arms of a check: the original; each ranking's top k for every k > 0; the top k of a random ranking per seed
    and k (`random_ranking`, so the draws are nested across k); the full-pool retrain when 0 is among the ks.

    `row_ids[r]` is the pool id of ranking row r (an index's ids in row order); None: rows are positions in `pool`.
    The plan names each arm's removed rows by id."""
    ids = [s.id for s in pool]
    n = len(ids)
    if len(set(ids)) != n:
        raise InputDataError("the pool has duplicate ids; the check names the rows it removes by id")
    k_max = max(config.ks)
    if k_max >= n:
        raise ConfigError(f"k = {k_max} would remove the whole pool of {n} rows (or more); give ks below {n}")
    known = set(ids)
    names = ids if row_ids is None else [str(i) for i in row_ids]
    arms = [Arm("original", ORIGINAL, 0)]
    taken = {"original", "full-k0"}
    for method, ranking in rankings.items():
        rows = ranking.head(k_max).rows.tolist()
        if len(rows) < k_max:
            raise ConfigError(f"{method} ranks only {len(rows)} rows (after the filter); k goes up to {k_max}")
        bad_row = next((r for r in rows if not 0 <= r < len(names)), None)
        if bad_row is not None:
            raise InputDataError(f"{method}'s ranking names row {bad_row}, not one of the {len(names)} pool rows")
        head = [names[r] for r in rows]
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
        draw = random_ranking(n, seed)
        for k in config.ks_of(RANDOM):
            removed = tuple(ids[r] for r in draw.head(k).rows.tolist())
            arms.append(Arm(f"random-s{seed}-k{k}", RANDOM, k, seed, removed))
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


def _same_request(saved: CounterfactualPlan, request: dict[str, Any], out: Path) -> None:
    if saved.request != request:
        diff = dict_differences(saved.request, request)
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
    write_json(out / PLAN_FILE, plan.to_dict())
    return plan


def prepare_check(index: Any, lm: Any, queries: Sequence[Sample | dict | str], config: CounterfactualConfig,
                  out_dir: str | Path | None = None, *, pool: str | Path | Sequence[Sample] | None = None,
                  rankings: Mapping[str, Ranking] | None = None, bm25: Any = None, embeddings: Any = None,
                  forward: Any = None) -> tuple[list[Sample], CounterfactualPlan]:
    """(training pool, plan) of a check on an index built with a fine-tuned model.

    Refuses a model that is not a `rise finetune` adapter, a pool whose hash is not the manifest's, an index whose
    rows are not that pool, and held-out prompts that are pool prompts. A saved plan of the same check in `out_dir`
    is reused without ranking again (a resumed check removes exactly the rows it planned). `rankings` gives some
    methods' `Ranking`s of the index's rows (the page's own ranking); the other methods of `config` are ranked here
    (`index_rankings`: `bm25`, `embeddings` and `forward` are what it would otherwise fit or compute)."""
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
    given = {canonical(m) or m: r for m, r in (rankings or {}).items()}
    todo = [m for m in config.methods if m not in given]
    given.update(index_rankings(index, lm, queries, todo, config.options, config.aggregate, where=config.where,
                                bm25=bm25, embeddings=embeddings, forward=forward))
    ordered = {m: given[m] for m in config.methods}
    return samples, make_plan(samples, ordered, config, original, request, queries,
                              row_ids=index.samples()["id"].tolist())


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
