"""Helper logic behind the Streamlit explorer that is not Streamlit: HTML token highlighting, ranking comparison,
index-size estimates, generation, exports, a background build job and the shared open indexes, the one-click demo's
data and the evaluation task.

Kept out of the pages so it can be unit-tested without a browser or a script runner; this module (like all of
`rise_core`) never imports streamlit.
"""

from __future__ import annotations

import atexit
import html
import io
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .bundled import POOL_SUFFIX, QUERIES_SUFFIX, pool_paths, queries_for_pool
from .config import RiseConfig
from .errors import InputDataError, RiseError
from .samples import Sample
from .store.index import sample_from_row
from .units import format_bytes, format_seconds  # noqa: F401  (re-exported for the pages)

CHANNELS = ("total", "RH", "GH")
# Rough DuckDB cost of one stored sample beyond its features and text (id, stats, row overhead), and of an empty
# index (file blocks, manifest, sketch hashes); measured on DuckDB 1.x indexes of 100-500 samples.
ROW_OVERHEAD_BYTES = 96
INDEX_BASE_BYTES = 3 * 1024**2


# --- token highlighting ---------------------------------------------------------------------------------------------


def channel_values(attribution: Any, channel: str) -> list[float]:
    """Per-token contributions of a `TokenAttribution` for 'RH', 'GH' or 'total'."""
    key = channel.lower()
    if key == "rh":
        return list(attribution.rh)
    if key == "gh":
        return list(attribution.gh)
    if key == "total":
        return list(attribution.total)
    raise InputDataError(f"unknown channel {channel!r}; choose one of {', '.join(CHANNELS)}")


def _token_markup(token: str) -> str:
    """Escape a token for HTML and make whitespace visible enough to read (newlines break the line)."""
    escaped = html.escape(token, quote=True)
    if "\n" in escaped:
        escaped = escaped.replace("\r", "").replace("\n", "↵<br>")
    return escaped


def highlight_html(tokens: Sequence[str], values: Sequence[float], n_prompt_tokens: int = 0,
                   scale: float | None = None) -> str:
    """Tokens as escaped HTML spans coloured by their contribution: orange for positive, blue for negative.

    Every token is passed through `html.escape` before it is wrapped, so text from the pool or the user (e.g.
    `<script>`) is shown as text. `scale` is the magnitude that gets full colour (default: the largest |value|).
    Prompt tokens (the first `n_prompt_tokens`) are underlined with a dotted line.
    """
    if len(tokens) != len(values):
        raise InputDataError(f"{len(tokens)} tokens but {len(values)} values")
    vals = [float(v) if v == v else 0.0 for v in values]  # nan -> 0
    top = scale if scale is not None else max((abs(v) for v in vals), default=0.0)
    top = top if top > 0 else 1.0
    spans = []
    for i, (tok, v) in enumerate(zip(tokens, vals, strict=True)):
        alpha = min(1.0, abs(v) / top)
        colour = "255,140,0" if v >= 0 else "30,120,255"
        style = f"background-color: rgba({colour},{alpha:.2f}); border-radius: 3px;"
        if i < n_prompt_tokens:
            style += " text-decoration: underline dotted;"
        spans.append(f'<span style="{style}" title="{v:+.4g}">{_token_markup(tok)}</span>')
    return ('<div style="white-space: pre-wrap; line-height: 1.8; font-family: monospace; font-size: 0.9em;">'
            + "".join(spans) + "</div>")


# --- comparing two rankings -----------------------------------------------------------------------------------------


def overlap_at_k(ids_a: Sequence[Any], ids_b: Sequence[Any], k: int) -> float:
    """Fraction of the top-k of ranking A that is also in the top-k of ranking B (1.0 = same set)."""
    if k < 1:
        raise InputDataError(f"k must be a positive integer, got {k}")
    top_a, top_b = list(ids_a)[:k], set(list(ids_b)[:k])
    if not top_a:
        return float("nan")
    return sum(1 for i in top_a if i in top_b) / min(k, len(top_a))


def binary_labels(values: pd.Series | Sequence[Any] | None) -> np.ndarray | None:
    """Pool labels as 0/1 when they look binary (bool, 0/1, 'true'/'false', 'yes'/'no'); None otherwise."""
    if values is None:
        return None
    s = pd.Series(list(values), dtype=object)
    if len(s) == 0 or s.isna().any():
        return None
    mapping = {"1": 1, "0": 0, "true": 1, "false": 0, "yes": 1, "no": 0, "1.0": 1, "0.0": 0,
               "positive": 1, "negative": 0, "pos": 1, "neg": 0}
    out = []
    for v in s:
        if isinstance(v, (bool, np.bool_)):
            out.append(int(v))
            continue
        key = str(v).strip().lower()
        if key not in mapping:
            return None
        out.append(mapping[key])
    return np.asarray(out, dtype=np.int8)


def label_metrics(scores: np.ndarray, labels: np.ndarray, k: int) -> dict[str, float]:
    """precision@k and AP over the full ranking of one method's scores against binary labels."""
    from .metrics import average_precision, precision_at_k

    return {f"precision@{k}": precision_at_k(scores, labels, k), "AP": average_precision(scores, labels)}


# --- sizes, names, files --------------------------------------------------------------------------------------------


def estimate_index_bytes(config: RiseConfig, n_samples: int, mean_text_bytes: float = 0.0) -> int:
    """Approximate size on disk of an index (an upper estimate: DuckDB compresses some of it): fp16 features, the
    sample text and a per-row overhead, plus the fixed cost of an empty index."""
    return int(INDEX_BASE_BYTES + n_samples * (config.bytes_per_sample() + mean_text_bytes + ROW_OVERHEAD_BYTES))


def slug(text: str, max_len: int = 48) -> str:
    """A file-name-safe version of `text` (letters, digits, '-', '_', '.')."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text.strip()).strip("-.")
    return (s or "index")[:max_len]


def index_file_name(model_id: str, pool_name: str) -> str:
    """Default index file name for a model and a pool, e.g. 'howdy__smollm2-135m-instruct.duckdb'."""
    return f"{slug(pool_name)}__{slug(Path(model_id).name or model_id)}.duckdb"


def bundled_pools(data_dir: str | Path) -> dict[str, Path]:
    """Bundled demo pools: {'howdy': data/howdy_pool.jsonl, ...}, sorted by name."""
    return pool_paths(data_dir)


def samples_from_frame(df: pd.DataFrame) -> list[Sample]:
    return [sample_from_row(row) for row in df.to_dict("records")]


# stored per-sample statistics and raw fields that the result tables leave out (the text column shows the sample)
HIDDEN_COLUMNS = ("row", "text", "prompt", "completion", "n_counted", "loss", "mean_support", "n_tokens", "truncated")


def results_table(hits: pd.DataFrame) -> pd.DataFrame:
    """A ranking as shown to people: rank, id, score, RH, GH, label and metadata, then the sample's text."""
    text = [display_text(r) for r in hits.to_dict("records")]
    table = hits.drop(columns=[c for c in HIDDEN_COLUMNS if c in hits.columns]).assign(text=text)
    return table.rename(columns={"rh": "RH", "gh": "GH"}).reset_index(drop=True)


def ranking_frame(pool: pd.DataFrame, scores: np.ndarray, k: int) -> pd.DataFrame:
    """The k best pool rows by `scores` (aligned with `pool`'s rows) as rank, id, score, then the pool's columns --
    the layout of `attribution.rank`, for scores from another method (e.g. BM25)."""
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (len(pool),):
        raise InputDataError(f"{scores.size} scores for a pool of {len(pool)} rows")
    order = np.argsort(-scores, kind="stable")[:k]
    rest = pool.iloc[order].drop(columns=["id"]).reset_index(drop=True)
    head = pd.DataFrame({"rank": range(1, len(order) + 1), "id": pool["id"].to_numpy()[order],
                         "score": scores[order]})
    return pd.concat([head, rest], axis=1)


def display_text(row: dict[str, Any] | pd.Series) -> str:
    """The text of a pool row as the model reads it (prompt, newline, completion; or plain text)."""
    return sample_from_row(row).full_text


def parse_typed_queries(text: str) -> list[Sample]:
    """Typed queries: blocks of text separated by a blank line, each one plain-text query."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text or "")]
    queries = [Sample(text=b, id=f"q{i}") for i, b in enumerate(b for b in blocks if b)]
    if not queries:
        raise InputDataError("type at least one query (separate several queries with a blank line)")
    return queries


def table_bytes(df: pd.DataFrame, fmt: str) -> bytes:
    """The frame as downloadable bytes: 'jsonl' (one JSON object per line) or 'csv'."""
    if fmt == "jsonl":
        return df.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")
    if fmt == "csv":
        buf = io.StringIO()
        df.to_csv(buf, index=False)
        return buf.getvalue().encode("utf-8")
    raise InputDataError(f"unknown export format {fmt!r}; choose jsonl or csv")


# --- generation -----------------------------------------------------------------------------------------------------


def generate_continuation(lm: Any, prompt: str, max_new_tokens: int = 48) -> str:
    """Greedy continuation of `prompt` by the model (through its chat template when it has one)."""
    import torch

    if not prompt or not prompt.strip():
        raise InputDataError("type a prompt for the model to continue")
    tok = lm.tokenizer
    if getattr(tok, "chat_template", None):
        enc = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)
        input_ids, attention = enc["input_ids"], enc.get("attention_mask")
    else:
        enc = tok(prompt, return_tensors="pt")
        input_ids, attention = enc["input_ids"], enc.get("attention_mask")
    if attention is None:
        attention = torch.ones_like(input_ids)
    input_ids, attention = input_ids.to(lm.device), attention.to(lm.device)
    with torch.no_grad():
        out = lm.model.generate(input_ids=input_ids, attention_mask=attention, max_new_tokens=max_new_tokens,
                                do_sample=False, pad_token_id=lm.pad_id)
    text = tok.decode(out[0, input_ids.shape[1]:], skip_special_tokens=True).strip()
    if not text:
        raise InputDataError("the model generated nothing for this prompt; type the generation yourself")
    return text


# --- background index build -----------------------------------------------------------------------------------------


@dataclass
class BuildJob:
    """An index build running in a background thread, so the page can show progress, switch pages and stop it.

    The thread calls `rise_core.store.build_index` with a progress callback and a `should_stop` that reads
    this job's stop flag; a stopped build leaves finished samples in the index and a later build resumes.
    """

    index_path: Path
    pool: Any
    lm: Any
    config: RiseConfig
    batch_size: int = 8
    overwrite: bool = False  # start from scratch: replace an existing index at index_path
    label: str = ""
    done: int = 0
    total: int = 0
    status: str = "pending"  # pending | running | done | stopped | failed
    error: BaseException | None = None
    report: Any = None
    started_at: float = 0.0
    finished_at: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)
    _first: tuple[float, int] | None = field(default=None, repr=False)

    def start(self) -> BuildJob:
        self.status, self.started_at = "running", time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"rise-build-{self.index_path.name}", daemon=True)
        self._thread.start()
        return self

    def _progress(self, done: int, total: int) -> None:
        if self._first is None:
            self._first = (time.monotonic(), done)
        self.done, self.total = int(done), int(total)

    def _run(self) -> None:
        from .store import build_index

        try:
            self.report = build_index(self.index_path, self.pool, self.lm, self.config, batch_size=self.batch_size,
                                      progress=self._progress, should_stop=self._stop.is_set,
                                      overwrite=self.overwrite)
            stopped = bool(getattr(self.report, "stopped", False))
            self.status = "stopped" if stopped else "done"
        except BaseException as exc:  # reported to the page; the thread must not die silently
            self.error, self.status = exc, "failed"
        finally:
            self.finished_at = time.monotonic()

    def stop(self) -> None:
        """Ask the build to stop after the batch in progress."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set() and self.running

    @property
    def running(self) -> bool:
        return self.status in ("pending", "running")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ends (tests, scripts); True if it has ended."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    @property
    def fraction(self) -> float:
        if self.status == "done":
            return 1.0
        return min(1.0, self.done / self.total) if self.total else 0.0

    @property
    def elapsed(self) -> float:
        end = self.finished_at if not self.running else time.monotonic()
        return max(0.0, end - self.started_at) if self.started_at else 0.0

    @property
    def eta_seconds(self) -> float | None:
        """Remaining time from the rate since the first progress report (None until there is a rate)."""
        if self._first is None or not self.total:
            return None
        t0, d0 = self._first
        rate = (self.done - d0) / max(1e-9, time.monotonic() - t0)
        return (self.total - self.done) / rate if rate > 0 else None

    def message(self) -> str:
        """One line for the page: progress, ETA, or the outcome."""
        if self.running:
            eta = self.eta_seconds
            verb = "Stopping after this batch" if self.stopping else "Building"
            tail = f", about {format_seconds(eta)} left" if eta is not None else ""
            return f"{verb}: {self.done}/{self.total or '?'} samples{tail} (elapsed {format_seconds(self.elapsed)})."
        if self.status == "failed":
            return f"The build failed: {self.error}"
        r = self.report
        added = getattr(r, "n_added", "?")
        had = getattr(r, "n_already_present", 0)
        skipped = getattr(r, "n_skipped", 0)
        extra = (f", {had} already in the index" if had else "") + (f", {skipped} rows skipped" if skipped else "")
        if self.status == "stopped":
            return (f"Stopped after {format_seconds(self.elapsed)}: {added} samples added{extra}. "
                    "Start the build again to resume where it stopped.")
        return f"Done in {format_seconds(self.elapsed)}: {added} samples added{extra}."

    @property
    def friendly_error(self) -> bool:
        return isinstance(self.error, RiseError)


# --- open indexes shared by the app's sessions -----------------------------------------------------------------------


def _stamp(path: Path) -> float:
    """Last modification time of an index (a file, or the newest file of a directory); 0 if it is missing."""
    if path.is_dir():
        return max((p.stat().st_mtime for p in path.rglob("*") if p.is_file()), default=0.0)
    stamps = [p.stat().st_mtime for p in (path, path.with_name(path.name + ".wal")) if p.exists()]
    return max(stamps, default=0.0)


class IndexRegistry:
    """Read-only indexes opened once per process and the builds running on them.

    DuckDB allows one writer per file, and a process may not hold the same file open read-only and read-write at
    once, so a build first closes the readers of its index and the index cannot be opened until the build ends.
    An index modified on disk since it was opened is reopened on the next `open`.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._open: dict[str, tuple[float, Any]] = {}
        self._jobs: dict[str, BuildJob] = {}
        atexit.register(self.close_all)  # close the DuckDB connections before the interpreter tears down

    @staticmethod
    def key(path: str | Path) -> str:
        return str(Path(path).expanduser().resolve())

    def job(self, path: str | Path) -> BuildJob | None:
        return self._jobs.get(self.key(path))

    def running_jobs(self) -> list[BuildJob]:
        return [j for j in self._jobs.values() if j.running]

    def open(self, path: str | Path) -> Any:
        from .errors import IndexStoreError
        from .store import RiseIndex

        key = self.key(path)
        with self._lock:
            job = self._jobs.get(key)
            if job is not None and job.running:
                raise IndexStoreError(f"the index {Path(key).name} is being built; wait for the build to finish or "
                                      "stop it on the Build index page")
            stamp = _stamp(Path(key))
            cached = self._open.get(key)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            if cached is not None:
                self._close(cached[1])
            index = RiseIndex.open(key, read_only=True)
            self._open[key] = (stamp, index)
            return index

    def release(self, path: str | Path) -> None:
        """Close the shared reader of an index (before writing to it)."""
        with self._lock:
            cached = self._open.pop(self.key(path), None)
            if cached is not None:
                self._close(cached[1])

    def start_build(self, job: BuildJob) -> BuildJob:
        from .errors import IndexStoreError

        key = self.key(job.index_path)
        with self._lock:
            current = self._jobs.get(key)
            if current is not None and current.running:
                raise IndexStoreError(f"a build of {Path(key).name} is already running; stop it or wait for it")
            self.release(key)
            self._jobs[key] = job
            return job.start()

    def close_all(self) -> None:
        with self._lock:
            for _, index in self._open.values():
                self._close(index)
            self._open.clear()

    @staticmethod
    def _close(index: Any) -> None:
        try:
            index.close()
        except Exception:  # noqa: BLE001 - closing a stale reader must never break the page
            pass


def mean_text_bytes(df: pd.DataFrame, columns: Sequence[str | None]) -> float:
    """Mean UTF-8 size of the given text columns per row (for the index-size estimate)."""
    cols = [c for c in columns if c and c in df.columns]
    if df.empty or not cols:
        return 0.0
    total = sum(df[c].fillna("").astype(str).str.encode("utf-8").str.len().sum() for c in cols)
    return float(total) / len(df)


# --- the one-click demo ---------------------------------------------------------------------------------------------

DEMO_POOL = "howdy"
DEMO_ROWS = 120


def head_pool(pool: Any, n_rows: int) -> Any:
    """The samples of a PoolData that come from its first `n_rows` source rows (0: all of them)."""
    from .ingest import PoolData

    if not n_rows:
        return pool
    keep = [i for i, row in enumerate(pool.rows) if row <= n_rows]
    return PoolData(samples=[pool.samples[i] for i in keep], skipped=[r for r in pool.skipped if r[0] <= n_rows],
                    rows=[pool.rows[i] for i in keep], n_rows=min(pool.n_rows, n_rows), source=pool.source,
                    fields=pool.fields)


def demo_pool(data_dir: str | Path, n_rows: int = DEMO_ROWS) -> tuple[str, Any]:
    """(name, PoolData) of the first `n_rows` of the demo pool (howdy if bundled, else the first bundled pool)."""
    from .ingest import read_pool

    pools = bundled_pools(data_dir)
    if not pools:
        raise InputDataError(f"no bundled pool (*{POOL_SUFFIX}) in {data_dir}; set RISE_DATA_DIR to the data folder")
    name = DEMO_POOL if DEMO_POOL in pools else next(iter(pools))
    return name, head_pool(read_pool(pools[name]), n_rows)


def demo_query(data_dir: str | Path, pool_name: str) -> Sample | None:
    """An example query for a bundled pool: the first positive one of its query file (else the first one)."""
    from .ingest import read_pool

    path = queries_for_pool(bundled_pools(data_dir).get(pool_name, Path(data_dir) / f"{pool_name}{POOL_SUFFIX}"))
    if path is None:
        return None
    queries = read_pool(path).samples
    labels = binary_labels([q.label for q in queries]) if queries else None
    if labels is not None and labels.any():
        return queries[int(np.argmax(labels))]
    return queries[0] if queries else None


# --- evaluation -----------------------------------------------------------------------------------------------------


def evaluation_task(data_dir: str | Path, name: str, max_pool: int | None = None, max_queries: int | None = None
                    ) -> Any:
    """A bundled labelled task (pool + queries) cut to the given sizes, with the paper's K values for that task
    kept where 2K < pool size (so the top and bottom K do not overlap)."""
    import dataclasses as _dc

    from .evaluation import DEFAULT_KS, TASK_KS, load_task

    pools = bundled_pools(data_dir)
    if name not in pools:
        raise InputDataError(f"no bundled pool {name!r} in {data_dir}; choose one of {sorted(pools)}")
    queries = queries_for_pool(pools[name])
    if queries is None:
        raise InputDataError(f"the pool {name!r} has no query file ({name}{QUERIES_SUFFIX}) to evaluate with")
    task = load_task(pool_path=pools[name], queries_path=queries, max_pool=max_pool or None,
                     max_queries=max_queries or None)
    n = len(task.pool)
    ks = tuple(k for k in TASK_KS.get(name, DEFAULT_KS) if 2 * k < n) or (max(1, n // 4),)
    return _dc.replace(task, name=name, ks=ks)


# --- diagnostics page -----------------------------------------------------------------------------------------------

DIAGNOSTIC_LABELS = {
    "energy": "Layer gradient energy",
    "discriminativeness": "Hidden-state discriminativeness",
    "sparsity": "Sparse active tokens",
    "rhgh": "RH vs GH rankings",
    "fidelity": "Sketch fidelity",
}
# sparsity sweep columns shown as lines: column -> legend name (all fractions kept by the support, in [0, 1])
SPARSITY_LINES = {"mass": "probability mass", "e_full": "full residual energy", "e_tail": "tail energy",
                  "gh_cos": "GH cosine"}
CHANNEL_NAMES = {"rh": "RH", "gh": "GH", "rh_gh": "RH+GH"}
_RANK_COLUMNS = {
    "candidate": "candidate", "group": "group", "semantic": "semantic", "lexical": "lexical",
    "rank_rh": "RH rank", "rank_gh": "GH rank", "rank_rh_gh": "RH+GH rank", "delta_gh": "Δ (GH − RH)",
    "rank_rh_sketch": "RH rank (sketch)", "rank_gh_sketch": "GH rank (sketch)",
    "rank_rh_gh_sketch": "RH+GH rank (sketch)", "rh": "RH score", "gh": "GH score", "n_counted": "tokens counted",
}


def energy_bars(components: pd.DataFrame) -> pd.DataFrame:
    """The `energy` diagnostic's components table as bars: component (forward order), share, share_std and group
    ('LM head', 'embedding', 'transformer block' or 'other', for the colour)."""
    df = components.sort_values("order") if "order" in components.columns else components
    group = df["kind"].map({"head": "LM head", "embedding": "embedding", "block": "transformer block"})
    return pd.DataFrame({"component": df["component"].astype(str).to_numpy(),
                         "share": df["share_mean"].astype(float).to_numpy(),
                         "share_std": df["share_std"].astype(float).fillna(0.0).to_numpy(),
                         "group": group.fillna("other").to_numpy()})


def sweep_lines(sweep: pd.DataFrame, x: str) -> pd.DataFrame:
    """A sparsity sweep (`k_sweep` by 'k', `tau_sweep` by 'tau') in long format for a line chart: x, metric (the
    readable names of SPARSITY_LINES, in that order), kept."""
    if x not in sweep.columns:
        raise InputDataError(f"the sweep has no column {x!r}; columns: {list(sweep.columns)}")
    cols = [c for c in SPARSITY_LINES if c in sweep.columns]
    long = sweep.sort_values(x)[[x, *cols]].melt(id_vars=x, var_name="metric", value_name="kept")
    long["metric"] = long["metric"].map(SPARSITY_LINES)
    return long.reset_index(drop=True)


def rank_view(ranking: pd.DataFrame) -> pd.DataFrame:
    """An `rh_gh_ranking` table as shown to people: the candidate (and its annotations), the exact RH / GH / RH+GH
    ranks side by side, Δ = GH rank − RH rank (negative: GH ranks it higher), the sketched ranks, then the scores."""
    present = [c for c in _RANK_COLUMNS if c in ranking.columns]
    return ranking[present].rename(columns=_RANK_COLUMNS).reset_index(drop=True)


def fidelity_views(correlation: pd.DataFrame, stability: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The `fidelity` tables, shaped for the page.

    Returns (correlations: one row per sketch dims and channel -- dims, channel, pearson and spearman as the mean and
    the minimum over sketch seeds, seeds, pairs; stability in long format for grouped bars -- dims, channel, k (as
    'top-k'), measure ('across seeds' | 'with exact'), overlap)."""
    corr = correlation.assign(channel=correlation["channel"].map(CHANNEL_NAMES).fillna(correlation["channel"]))
    summary = (corr.groupby(["dims", "channel"], sort=False)
               .agg(pearson=("pearson", "mean"), pearson_min=("pearson", "min"), spearman=("spearman", "mean"),
                    spearman_min=("spearman", "min"), seeds=("seed", "nunique"), pairs=("n_pairs", "first"))
               .reset_index())
    stab = stability.assign(channel=stability["channel"].map(CHANNEL_NAMES).fillna(stability["channel"]),
                            k=[f"top-{int(k)}" for k in stability["k"]])
    long = stab.melt(id_vars=["dims", "channel", "k"], value_vars=["overlap_across_seeds", "overlap_with_exact"],
                     var_name="measure", value_name="overlap")
    long["measure"] = long["measure"].map({"overlap_across_seeds": "across seeds", "overlap_with_exact": "with exact"})
    return summary, long.reset_index(drop=True)


def parse_lines(text: str, what: str = "line") -> list[str]:
    """Non-empty lines of `text`, stripped (e.g. candidates typed one per line)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    if not lines:
        raise InputDataError(f"type at least one {what}, one per line")
    return lines


def index_identity(index: Any) -> dict[str, Any]:
    """What a diagnostics cache entry records about the index it used (the same fields as `rise diagnose --index`,
    so the page and the command line share cached results for the same inputs)."""
    index.config  # noqa: B018 - loads the manifest when the handle has not read it yet
    m = index.manifest
    return {"path": str(Path(index.path).resolve()), "model_fingerprint": m.model_fingerprint,
            "config": m.config.fingerprint(), "sketch_digest": m.sketch_digest, "n_samples": m.n_samples,
            "updated_at": m.updated_at, "index_uuid": getattr(m, "index_uuid", "")}


def diagnostics_provenance(out_dir: str | Path) -> dict[str, dict[str, Any]]:
    """For each stored diagnostic in a cache directory: created_at, seconds, n_samples, model_id and index (the
    identity it was computed against, or None); unreadable entries are left out."""
    import json

    from .diagnostics.runner import DIAGNOSTICS, RESULT

    out: dict[str, dict[str, Any]] = {}
    for name in DIAGNOSTICS:
        try:
            record = json.loads((Path(out_dir) / name / RESULT).read_text())
        except (OSError, ValueError):
            continue
        context = record.get("context") or {}
        out[name] = {"created_at": record.get("created_at"), "seconds": record.get("seconds"),
                     "n_samples": context.get("n_samples"), "model_id": context.get("model_id"),
                     "index": context.get("index")}
    return out
