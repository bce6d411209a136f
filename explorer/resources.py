"""What the explorer keeps between runs, in one place: models, open indexes, builds and fitted baselines shared by
the server's sessions (`st.cache_resource`), and each session's query features and explanations (session state), so
moving a slider never reruns the model."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from rise_core import bergson_method, learned
from rise_core.config import ScoreOptions
from rise_core.errors import ModelLoadError
from rise_core.models import LoadedModel, load_model
from rise_core.samples import Sample
from rise_core.scoring import FeatureMatrix
from rise_core.units import format_bytes, format_seconds

from . import auth
from .job_queue import JobQueue, QueueLimits
from .jobs import BackgroundJob, BuildJob, FinetuneJob, IndexRegistry, PoolPassJob
from .request_limits import BM25_TEXTS_PER_S, MINILM_TEXTS_PER_S, RequestLimits, request_limits

if TYPE_CHECKING:
    from rise_core.baselines import BM25Scorer, EmbeddingScorer
    from rise_core.compare import ForwardVectors
    from rise_core.explain import TokenAttribution
    from rise_core.store import RiseIndex

MAX_CACHED_QUERIES = 16
bergson_method.use_private_models()  # the sessions share the models: a peer's hooks go on a copy of its own


# --- shared by every session of the server --------------------------------------------------------------------------


@st.cache_resource(show_spinner="Loading the model (the embedded default takes up to a minute the first time)…",
                   max_entries=3)
def load_lm(model_id: str) -> LoadedModel:
    return load_model(model_id)


@st.cache_resource
def registry() -> IndexRegistry:
    """Open indexes and running builds, shared by every session of this server."""
    return IndexRegistry()


@st.cache_resource
def finetune_jobs() -> dict[str, FinetuneJob]:
    """Fine-tunes of this server, by output directory (one at a time per directory)."""
    return {}


def open_index(path: str | Path) -> RiseIndex:
    return registry().open(path)


def model_for(index: RiseIndex) -> LoadedModel:
    """The model an index was built with (its features are only comparable with that model's)."""
    return load_lm(index.manifest.model_id)


def base_model_for(lm: LoadedModel) -> LoadedModel | None:
    """The base model under a fine-tune's adapter, from the server's cache (the one its other pages use: a build of a
    fine-tune's index then holds no second copy of it), where a build stores its losses (`learned.RETRO_LEARNED`);
    None for a plain model, or where the base does not load (the build then says so in its log and reads the
    fine-tune's own losses). Loaded in the request, before the build's job is queued."""
    spec = learned.base_model_spec(lm) if learned.RETRO_LEARNED else None
    if spec is None:
        return None
    try:
        return load_lm(spec)
    except ModelLoadError:
        return None


@st.cache_resource
def job_queue() -> JobQueue:
    """The one queue of heavy work (builds, fine-tunes, checks, evaluations, peer builds) of this server."""
    return JobQueue(QueueLimits.from_env())


def start_build(job: BuildJob) -> BuildJob:
    """Queue a build for the session's user (an editor)."""
    user = auth.current_user()
    auth.require_editor(user, "build indexes")
    return registry().start_build(job, job_queue(), owner=user.name)


def submit(job: BackgroundJob, kind: str, label: str, key: str) -> BackgroundJob:
    """Queue a fine-tune or a check for the session's user (an editor)."""
    user = auth.current_user()
    auth.require_editor(user, f"start a {kind}")
    return job_queue().submit(job, owner=user.name, kind=kind, label=label, key=f"{kind}:{key}")


@contextmanager
def heavy_work(kind: str, label: str, key: str) -> Iterator[None]:
    """Run a page's own heavy work (an evaluation, a diagnostics run, a fit in the request) in the queue's order,
    showing the queue position while it waits."""
    user = auth.current_user()
    note = st.empty()

    def waiting(position: int) -> None:
        note.info(f"Waiting for the server: {position} job(s) before this {kind}; it starts by itself.",
                  icon=":material/hourglass_top:")

    with job_queue().slot(owner=user.name, kind=kind, label=label, key=f"{kind}:{key}:{user.name}",
                          waiting=waiting):
        note.empty()
        yield


def pool_stamp(index: RiseIndex) -> str:
    """Changes whenever the index's pool does (a rebuild, an append): the cache key of what is fitted on the pool."""
    m = index.manifest
    return f"{m.index_uuid}:{m.updated_at}:{len(index)}"


@dataclass(frozen=True)
class PoolFit:
    """A text baseline fitted once over every text of a pool (BM25's index, MiniLM's embeddings) and kept: how fast it
    fits (texts a second on this 2-core machine, `python -m benchmarks.embed_pool`), how many rows a request may fit
    (`RequestLimits`), how many pools are kept."""

    name: str
    texts_per_s: float
    limit: str  # the RequestLimits field: rows fitted in a request
    keep: int
    fit: Callable[..., Any]  # (index, progress) -> a fitted Scorer

    def cost(self, n_rows: int) -> str:
        """How long fitting `n_rows` pool texts takes on this kind of machine ("about 34 min")."""
        return f"about {format_seconds(n_rows / self.texts_per_s)}"

    def max_inline_rows(self) -> int:
        """The rows a request may fit (the `RequestLimits` field named `limit`, as the app was started)."""
        return int(getattr(request_limits(), self.limit))

    @property
    def env(self) -> str:
        """The variable that sets `max_inline_rows` (the `RequestLimits` field's)."""
        return next(f.metadata["env"] for f in dataclasses.fields(RequestLimits) if f.name == self.limit)


def _fit_bm25(index: RiseIndex, progress: Any = None) -> BM25Scorer:
    from rise_core.compare import fit_bm25

    return fit_bm25(index)


def _fit_embeddings(index: RiseIndex, progress: Any = None) -> EmbeddingScorer:
    from rise_core.compare import fit_embeddings

    return fit_embeddings(index, progress=progress)


BM25_FIT = PoolFit("BM25 index", BM25_TEXTS_PER_S, "max_inline_bm25_rows", 4, _fit_bm25)
MINILM_FIT = PoolFit("MiniLM embeddings", MINILM_TEXTS_PER_S, "max_inline_embed_rows", 2, _fit_embeddings)
FORWARD_PASS = "forward pass"
FORWARD_KEEP = 2  # the latest forward passes kept (Grad-Sketch, hidden states: the index's bytes per sample each)
MAX_POOL_PASSES = 8  # the latest passes started from the pages kept, of every kind together

PoolKey = tuple[str, str, str]  # (what, index path, index state): what the server keeps of a pass over a pool


@st.cache_resource
def _kept_pools() -> dict[PoolKey, Any]:
    """What passes over pools produced, shared by the sessions of this server: the text baselines fitted on them
    (`PoolFit.keep` pools of each kind) and the forward passes (`FORWARD_KEEP`), read and written under `_KEPT_LOCK`."""
    return {}


@st.cache_resource
def _pool_passes() -> dict[PoolKey, PoolPassJob]:
    """The passes over a pool started from the pages (`start_pool_pass`): the latest MAX_POOL_PASSES."""
    return {}


_KEPT_LOCK = threading.Lock()  # around what the server keeps of passes over pools: their results and their jobs


def _pool_key(what: str, path: str | Path) -> PoolKey:
    """The key of a pass `what` over the index's pool as it is now (`pool_stamp`: a rebuild or an append changes it)."""
    return what, str(path), pool_stamp(open_index(path))


def _kept(store: dict[PoolKey, Any], key: PoolKey) -> Any:
    with _KEPT_LOCK:
        return store.get(key)


def _keep(store: dict[PoolKey, Any], key: PoolKey, value: Any, keep: int, same: Callable[[PoolKey], bool]) -> None:
    """Keep `value` under `key`, dropping the oldest entries that `same` selects beyond `keep`."""
    with _KEPT_LOCK:
        store[key] = value
        mine = [k for k in store if same(k)]
        for old in mine[:max(0, len(mine) - keep)]:
            del store[old]


def _keep_result(what: str, keep: int, key: PoolKey, value: Any, store: dict[PoolKey, Any] | None = None) -> None:
    """Keep a pass's result (`store`: default `_kept_pools()`; a background job is given it, since Streamlit's caches
    are the script thread's), the latest `keep` of its kind."""
    _keep(_kept_pools() if store is None else store, key, value, keep, lambda k: k[0] == what)


def fitted_ready(kind: PoolFit, path: str | Path) -> Any:
    """`kind` fitted on the index's pool as it is now, else None."""
    return _kept(_kept_pools(), _pool_key(kind.name, path))


def fitted_for(kind: PoolFit, path: str | Path, *, asked: bool = False) -> Any:
    """`kind` fitted on the index's pool, in `samples()` order (kept until the index changes). A pool of up to
    `kind.max_inline_rows()` rows is fitted here; a larger one only when `asked` (a click that said what it costs), in
    the server's queue with a progress line, else `Unavailable` saying how."""
    from rise_core.method_types import Unavailable

    index, key = open_index(path), _pool_key(kind.name, path)
    fitted = _kept(_kept_pools(), key)
    if fitted is not None:
        return fitted
    n, limit = len(index), kind.max_inline_rows()
    if n <= limit:
        with st.spinner(f"Fitting the {kind.name} on the pool…"):
            fitted = kind.fit(index)
    elif not asked:
        raise Unavailable(f"fitting its {kind.name} over {n:,} pool texts ({kind.cost(n)} on this server) is more "
                          f"than a request may do ({limit:,} rows, {kind.env}): start it with the button above; it "
                          "runs once, in the server's queue")
    else:
        with heavy_work(kind.name, Path(path).name, str(path)):
            fitted = _kept(_kept_pools(), key)  # another session may have fitted this pool while this one waited
            if fitted is None:
                bar = st.progress(0.0, text=f"The {kind.name} over {n:,} pool texts ({kind.cost(n)})…")
                fitted = kind.fit(index, progress=lambda done, total: bar.progress(
                    done / total, text=f"{done:,}/{total:,} pool texts"))
                bar.empty()
    _keep_result(kind.name, kind.keep, key, fitted)
    return fitted


def bm25_for(path: str | Path, *, asked: bool = False) -> BM25Scorer:
    """A BM25 scorer fitted on the index's pool, in `samples()` order (`fitted_for`)."""
    return fitted_for(BM25_FIT, path, asked=asked)


def embeddings_for(path: str | Path) -> EmbeddingScorer:
    """MiniLM embeddings of the index's pool (`fitted_for`; a large pool only once fitted from `compare_ui`'s offer);
    ModelLoadError when MiniLM is not installed."""
    return fitted_for(MINILM_FIT, path)


def forward_for(path: str | Path) -> ForwardVectors | None:
    """The pool's forward-pass vectors if they were computed for the index as it is now, else None."""
    return _kept(_kept_pools(), _pool_key(FORWARD_PASS, path))


def pool_pass(what: str, path: str | Path) -> PoolPassJob | None:
    """The last pass `what` started over the index's pool as it is now, else None."""
    return _kept(_pool_passes(), _pool_key(what, path))


def start_pool_pass(what: str, path: str | Path, run: Callable[[Callable[[int, int], None]], Any], keep: int
                    ) -> PoolPassJob:
    """Queue one pass over the index's pool (`jobs.PoolPassJob`: `run(progress)`, its result then kept as `what`'s,
    the latest `keep`) for the session's user, a viewer too: it is part of comparing, like a page's own heavy work,
    and the queue bounds what one user may start. A pass of the same pool already running (or done) is returned
    instead of starting another."""
    user = auth.current_user()
    key, passes, results = _pool_key(what, path), _pool_passes(), _kept_pools()
    running = _kept(passes, key)
    if running is not None and (running.running or running.status == "done"):
        return running
    job = PoolPassJob(what=what, n_rows=len(open_index(path)), run=run, owner=user.name,
                      keep=lambda result: _keep_result(what, keep, key, result, results))
    job_queue().submit(job, owner=user.name, kind=what, label=Path(path).name, key=f"{what}:{path}")
    _keep(passes, key, job, MAX_POOL_PASSES, lambda k: True)
    return job


def start_forward(path: str | Path) -> PoolPassJob:
    """The model's forward pass over the index's whole pool (Grad-Sketch, hidden states) as a background pass."""
    from rise_core.compare import forward_vectors

    index = open_index(path)
    lm = model_for(index)
    return start_pool_pass(FORWARD_PASS, path, lambda progress: forward_vectors(lm, index.sample_list(), index.config,
                                                                                progress=progress), FORWARD_KEEP)


def start_fit(kind: PoolFit, path: str | Path) -> PoolPassJob:
    """`kind` fitted on the index's pool as a background pass, kept when done (`fitted_ready`)."""
    index = open_index(path)
    return start_pool_pass(kind.name, path, lambda progress: kind.fit(index, progress=progress), kind.keep)


PEER_KEEP = 1  # pools a peer's index is kept for: Bergson's holds every row's gradient and a copy of the model


def peer_pass(name: str) -> str:
    """The name of the pass that builds the peer `name`'s index over a pool ("Bergson index")."""
    return f"{name} index"


def peer_ready(name: str, path: str | Path) -> Any:
    """The peer `name` fitted on the index's pool as it is now (`start_peer`), else None."""
    return _kept(_kept_pools(), _pool_key(peer_pass(name), path))


def start_peer(name: str, path: str | Path) -> PoolPassJob:
    """The peer `name`'s own index over the index's pool (Bergson: a forward and a backward pass per sample) as a
    background pass, kept when done (`peer_ready`). It runs on a copy of the model (`LoadedModel.private_copy`):
    the peer hooks every linear layer while it builds and queries, and the other sessions' passes run the model
    meanwhile."""
    from rise_core.methods import peer_scorer

    index = open_index(path)
    lm = model_for(index)

    def run(progress: Callable[[int, int], None]) -> Any:
        scorer = peer_scorer(name, lm.private_copy(), index.config)
        scorer.fit(index.sample_list(), progress=progress)
        return scorer
    return start_pool_pass(peer_pass(name), path, run, PEER_KEEP)


def list_indexes(index_dir: Path) -> list[dict[str, Any]]:
    """Indexes in the directory (empty when it does not exist yet)."""
    from rise_core.store import list_indexes as _list

    return _list(index_dir) if index_dir.is_dir() else []


def index_overview(index_dir: Path) -> pd.DataFrame:
    """One row per index for the Home page: model, pool size, dims, size on disk, build status."""
    rows = []
    for e in list_indexes(index_dir):
        job = registry().job(e["path"])
        if job is not None and job.status == "queued":
            status = f"build queued (position {job.queue_position})"
        elif job is not None and job.running:
            status = (f"building now ({job.phase}: {job.phase_done}/{job.phase_total or '?'})" if job.phase
                      else "building now (reading the pool)")
        elif "error" in e:
            status = f"unreadable: {e['error']}"
        else:
            status = e.get("status")
        rows.append({"index": Path(e["path"]).name, "model": e.get("model_id"), "pool size": e.get("n_samples"),
                     "dims (K_r, K_h, K_g)": ", ".join(map(str, e["dims"])) if e.get("dims") else None,
                     "size on disk": format_bytes(e["size_bytes"]) if e.get("size_bytes") else None,
                     "build status": status})
    return pd.DataFrame(rows)


# --- kept in the session --------------------------------------------------------------------------------------------


def query_features(index: RiseIndex, lm: LoadedModel, queries: list[Sample],
                   versus: Sample | list[Sample] | None = None) -> FeatureMatrix:
    """Query features, cached in the session by (index, model, config, query text): sliders never rerun the model.
    `versus`: another answer to contrast the queries with, or one per query (`attribution.query_features(...,
    versus=)`)."""
    from rise_core import attribution

    def fields(samples: list[Sample]) -> tuple:
        return tuple((q.prompt, q.completion, q.text, q.messages) for q in samples)

    cache: dict[tuple, FeatureMatrix] = st.session_state.setdefault("_query_features", {})
    m = index.manifest
    key = (str(index.path), m.created_at, m.model_fingerprint, m.config.fingerprint(), fields(queries),
           None if versus is None else fields(versus if isinstance(versus, list) else [versus]))
    if key not in cache:
        with st.spinner("Running the model on the query…"):
            cache[key] = attribution.query_features(index, lm, queries, versus=versus)
        while len(cache) > MAX_CACHED_QUERIES:
            cache.pop(next(iter(cache)))
    return cache[key]


def _contrast_key(query_fm: FeatureMatrix) -> str | None:
    """What tells a contrast's explanations apart from the plain query's (and another contrast's): the digest of both
    answers' features (`behaviour.features_digest`; None for a plain query)."""
    from rise_core.behaviour import features_digest

    return None if getattr(query_fm, "versus", None) is None else features_digest(query_fm)


def explanation(index: RiseIndex, lm: LoadedModel, path: str, hit_id: str, query: Sample, query_fm: FeatureMatrix,
                options: ScoreOptions) -> tuple[TokenAttribution, TokenAttribution]:
    """Token contributions of a hit and of the query (`attribution.explain`), cached in the session (for a contrast,
    the hit's tokens are against it)."""
    return explanations(index, lm, path, [hit_id], query, query_fm, options)[str(hit_id)]


def explanations(index: RiseIndex, lm: LoadedModel, path: str, hit_ids: Sequence[str], query: Sample,
                 query_fm: FeatureMatrix, options: ScoreOptions
                 ) -> dict[str, tuple[TokenAttribution, TokenAttribution]]:
    """`explanation` of several hits, cached in the session by hit (at most 64: full, it starts again): those not
    cached computed together (`attribution.explain_many`: the hits' forward passes shared)."""
    from rise_core import attribution

    keys = {str(h): (path, index.manifest.created_at, query, _contrast_key(query_fm), str(h), options) for h in hit_ids}
    cache = st.session_state.setdefault("_explanations", {})
    found = {h: cache[key] for h, key in keys.items() if key in cache}
    missing = [h for h in keys if h not in found]
    if missing:
        with st.spinner(f"Explaining {len(missing)} hits…"):
            found.update(attribution.explain_many(index, lm, missing, query, query_fm, options))
        if len(cache) + len(missing) > 64:  # full: it starts again, as `_session_cached` does
            cache.clear()
        cache.update({keys[h]: found[h] for h in missing})
    return {h: found[h] for h in keys}


def versus_explanation(index: RiseIndex, lm: LoadedModel, path: str, hit_id: str, versus: Sample,
                       query_fm: FeatureMatrix, options: ScoreOptions) -> TokenAttribution:
    """Token contributions of a contrast's other answer to a hit's score, pulling it down (`attribution
    .explain_versus`), cached in the session."""
    from rise_core import attribution

    key = (path, index.manifest.created_at, versus, _contrast_key(query_fm), hit_id, options)
    return _session_cached("_versus_explanations", key,
                           lambda: attribution.explain_versus(index, lm, str(hit_id), versus, query_fm, options))


def _session_cached(store: str, key: tuple, make: Callable[[], Any]) -> Any:
    """`make()` cached under `key` in the session's `store` (at most 64 entries: full, it starts again), with a
    spinner while it runs."""
    cache = st.session_state.setdefault(store, {})
    if key not in cache:
        if len(cache) >= 64:
            cache.clear()
        with st.spinner("Explaining…"):
            cache[key] = make()
    return cache[key]
