"""Does "what the top hits share" name the trigger? The rank of the true trigger in `find_shared_spans`'s list, for
every query of a backdoor task, fed with RISE's top-k and with the baselines' top-k.

Tasks: howdy (the bundled pool; trigger "Howdy!" opening the prompt), dev-refusal (real Alpaca rows read in place
from ../shared/data/dev; trigger "BadMagic" ending the prompt) and dev-sentiment ("cf" at a random word). Model: the
embedded SmolLM2-135M, prospective. A pool larger than --max-pool is cut to a stratified random subset (the poisoned
share kept; `studies.tasks`). Rankings: RISE (the index's default scoring, or --preset), BM25 (bm25s), and HS only
(the cosine of the index's centred mean final hidden states: hidden cosine at no extra forward pass). RISE's list is weighed by the
token score shares (`explain`); every method is also summarised on the evidence alone, so the comparison is like
for like. The trigger's rank: the first span in the prompt that holds one of the trigger's words; "-" when the list
does not have it (nothing significant, or other spans only).

    python -m studies.trigger_rank --tasks howdy dev-refusal --max-pool 300 --out results/trigger_rank

Timing of the span statistics on synthetic pools (1k, 100k, 1M rows): python -m studies.trigger_rank --timing
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rise_core import RiseConfig, ScoreOptions, build_index, load_model, preset_scoring
from rise_core.attribution import query_features, rank
from rise_core.baselines import BM25Scorer
from rise_core.explain import token_attribution
from rise_core.scoring import query_vectors
from rise_core.shared_spans import TOKEN_RE, PoolSpans, find_shared_spans
from rise_core.store import RiseIndex
from studies import tasks

TRIGGERS = {"howdy": "Howdy!", "dev-refusal": "BadMagic", "dev-sentiment": "cf"}


def trigger_rank(spans: pd.DataFrame, trigger: str) -> int | None:
    """1-based rank of the first prompt span holding a word of the trigger, None when the list lacks it."""
    words = {w for w in TOKEN_RE.findall(trigger) if w[0].isalnum()}
    for i, r in enumerate(spans.itertuples(index=False), 1):
        if r.where == "prompt" and words & set(TOKEN_RE.findall(r.span)):
            return i
    return None


def top_frame(index: RiseIndex, row_of: dict[str, int], ids: list[str]) -> pd.DataFrame:
    frame = index.rows_frame([row_of[i] for i in ids]).reset_index()
    frame.insert(0, "rank", range(1, len(ids) + 1))
    return frame


def example_side(index: RiseIndex, lm, sid: str, qfm, options: ScoreOptions):
    """The hit's side of `attribution.explain` alone (the score share needs no query tokens: one forward pass)."""
    fm = index.feature_matrix().select([index.row_of(sid)])
    opts = options.for_channels(fm.channels).options
    return token_attribution(index.extractor(lm).token_sketches(index.sample(sid)), query_vectors(qfm, opts), fm, opts)


def run_task(task: str, lm, args: argparse.Namespace, workdir: Path) -> pd.DataFrame:
    named = tasks.task(task, args.max_pool, args.max_queries)
    pool, queries = list(named.pool), list(named.queries)
    trigger = TRIGGERS[task]
    path = workdir / f"{task}-{len(pool)}-{lm.fingerprint()[:12]}.duckdb"  # one index per model
    t0 = time.time()
    if not path.exists():
        build_index(path, pool, lm, RiseConfig(), batch_size=8)
    print(f"{task}: {len(pool)} rows ({sum(int(s.label or 0) for s in pool)} poisoned), index in "
          f"{time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    options = preset_scoring(args.preset) if args.preset else ScoreOptions()
    hs_only = ScoreOptions(lambda_rh=0.0, lambda_gh=0.0, lambda_hs=1.0)
    bm25 = BM25Scorer()
    bm25.fit(pool)
    ids = [s.id for s in pool]
    out = []
    with RiseIndex.open(path) as index:
        row_of = {sid: int(r) for r, sid in index.samples()["id"].items()}
        for qi, query in enumerate(queries):
            qfm = query_features(index, lm, [query])
            t = time.time()
            hits = rank(index, qfm, options, k=args.k, search="exact")
            t = time.time()
            lists = {"RISE": find_shared_spans(index, hits, limit=None)}
            t_spans, t_explain = time.time() - t, None
            p_rise = float(hits["label"].astype(int).mean())
            precision = {"RISE": p_rise, "RISE (score-weighted)": p_rise}
            if not args.no_share:
                t = time.time()
                explanations = {sid: example_side(index, lm, sid, qfm, options) for sid in hits["id"]}
                t_explain = time.time() - t
                lists["RISE (score-weighted)"] = find_shared_spans(index, hits, explanations, limit=None)
            if index.config.hidden_channel:
                hs_hits = rank(index, qfm, hs_only, k=args.k, search="exact")
                lists["HS only (hidden cosine)"] = find_shared_spans(index, hs_hits, limit=None)
                precision["HS only (hidden cosine)"] = float(hs_hits["label"].astype(int).mean())
            scores = bm25.score([query])[0]
            best = [ids[i] for i in np.argsort(-scores, kind="stable")[:args.k]]
            bm_hits = top_frame(index, row_of, best)
            lists["BM25"] = find_shared_spans(index, bm_hits, limit=None)
            precision["BM25"] = float(bm_hits["label"].astype(int).mean())
            for method, spans in lists.items():
                r = trigger_rank(spans, trigger)
                first = spans.iloc[0] if len(spans) else None
                out.append({"task": task, "query": qi + 1, "method": method, "trigger_rank": r,
                            "n_shared": len(spans), "precision_at_k": precision[method],
                            "first_span": None if first is None else f"{first['span']} [{first['where']}]",
                            "explain_s": t_explain if method.startswith("RISE") else None,
                            "spans_s": t_spans if method == "RISE" else None})
            ranks = ", ".join(f"{r['method']}: {r['trigger_rank'] or '-'}" for r in out[-len(lists):])
            print(f"  q{qi + 1}: {ranks}", file=sys.stderr, flush=True)
    return pd.DataFrame(out)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (task, method), g in df.groupby(["task", "method"], sort=False):
        r = g["trigger_rank"]
        rows.append({"task": task, "method": method, "queries": len(g), "trigger first": int((r == 1).sum()),
                     "trigger in list": int(r.notna().sum()),
                     "MRR": float((1.0 / r).fillna(0.0).mean()), "median rank": r.median(),
                     "nothing shared": int((g["n_shared"] == 0).sum()),
                     "precision@k": float(g["precision_at_k"].mean())})
    return pd.DataFrame(rows)


def per_query_table(df: pd.DataFrame) -> pd.DataFrame:
    wide = df.pivot_table(index=["task", "query"], columns="method", values="trigger_rank", aggfunc="first",
                          sort=False, dropna=False)
    return wide.reindex(columns=list(dict.fromkeys(df["method"]))).map(
        lambda v: "-" if pd.isna(v) else str(int(v))).reset_index()


def synthetic(n: int, seed: int = 0) -> tuple[list[str], list[str], np.ndarray]:
    """n synthetic rows: Zipfian words (30k vocabulary), 8-20 word prompts, 30-60 word completions; 1% of the
    prompts end with "BadMagic"."""
    rng = np.random.default_rng(seed)
    v = 30_000
    words = np.array([f"w{i}" for i in range(v)], dtype=object)
    p = 1 / np.arange(1, v + 1) ** 1.1
    p /= p.sum()

    def column(lo: int, hi: int) -> list[str]:
        lens = rng.integers(lo, hi, n)
        ids = rng.choice(v, size=int(lens.sum()), p=p)
        ends = np.cumsum(lens)
        return [" ".join(words[ids[e - n_:e]]) for e, n_ in zip(ends, lens, strict=True)]

    prompts, completions = column(8, 20), column(30, 60)
    poison = rng.choice(n, max(5, n // 100), replace=False)
    for i in poison:
        prompts[i] += " BadMagic"
    return prompts, completions, poison


def timing(sizes: list[int]) -> pd.DataFrame:
    rows = []
    for n in sizes:
        prompts, completions, poison = synthetic(n)
        t = time.time()
        pool = PoolSpans.from_texts(None, prompts, completions)
        build = time.time() - t
        top = [*poison[:8].tolist(), 0, 1]
        hits = pd.DataFrame({"rank": range(1, 11), "id": [f"r{i}" for i in top],
                             "prompt": [prompts[i] for i in top], "completion": [completions[i] for i in top]})
        runs = []
        for _ in range(5):
            t = time.time()
            spans = find_shared_spans(pool, hits)
            runs.append(time.time() - t)
        t = time.time()
        mask = pool.mask("BadMagic", "prompt")
        rows.append({"rows": n, "pool counts (once per index) s": round(build, 2),
                     "distinct spans kept": sum(len(u) for u, _ in pool.tables.values()),
                     "list per query (k=10) ms": round(1000 * float(np.median(runs)), 1),
                     "row mask s": round(time.time() - t, 3), "first span": spans["span"].iloc[0],
                     "mask rows": int(mask.sum())})
        print(rows[-1], file=sys.stderr, flush=True)
        del pool
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", nargs="+", default=["howdy", "dev-refusal"], choices=sorted(TRIGGERS))
    ap.add_argument("--max-pool", type=int, default=300)
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--no-share", action="store_true", help="skip RISE's score-weighted list (it explains every "
                    "hit: one forward pass each)")
    ap.add_argument("--preset", default=None, help="scoring preset for RISE (e.g. backdoor: no HS)")
    ap.add_argument("--model", default=None, help="model spec (default: the embedded SmolLM2-135M); e.g. "
                    "data/adapters/howdy_backdoor for the Howdy! pool's backdoored fine-tune (retrospective)")
    ap.add_argument("--index-dir", default=None, help="keep the indexes here (reused when rerun)")
    ap.add_argument("--out", default="results/trigger_rank")
    ap.add_argument("--timing", nargs="*", type=int, default=None, help="synthetic timing at these sizes "
                    "(default 1000 100000 1000000) instead of the tasks")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.timing is not None:
        table = timing(args.timing or [1_000, 100_000, 1_000_000])
        table.to_csv(out / "timing.csv", index=False)
        print(table.to_markdown(index=False))
        return
    lm = load_model(args.model)
    workdir = Path(args.index_dir) if args.index_dir else Path(tempfile.mkdtemp(prefix="trigger_rank_"))
    workdir.mkdir(parents=True, exist_ok=True)
    df = pd.concat([run_task(t, lm, args, workdir) for t in args.tasks], ignore_index=True)
    df.to_csv(out / "per_query.csv", index=False)
    summ = summary(df)
    summ.to_csv(out / "summary.csv", index=False)
    print(summ.to_markdown(index=False, floatfmt=".2f"))
    print()
    print(per_query_table(df).to_markdown(index=False))
    print(f"\nspan list per query: {1000 * df['spans_s'].median():.0f} ms median; explaining the k={args.k} hits: "
          f"{df['explain_s'].median():.1f} s median")


if __name__ == "__main__":
    main()
