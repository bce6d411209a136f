"""Fresh tweet-quality tune sets, drawn from the upstream files dev-brainrot was drawn from, written outside the
repository.

dev-brainrot (../shared/data/dev) holds every tweet-quality text the project measures on: 60 high-quality control
tweets (llm-brain-rot's M1 control, label 1) among 450 other tweets (EntrAPI/evals). Its 60 positives are used up: 10
are its own queries, 40 those of the two held folds (`studies.tasks` dev-brainrot-held, -held2). So a choice aimed at
this kind can be put to queries no choice has seen only with new rows from the same sources. This draws them: never
a text dev-brainrot holds (nor one twice), in dev-brainrot's make-up as its files show it (positives: control tweets
of plain ASCII text within the length range of its positives; negatives: EntrAPI's posts and same-author tweets in
its proportion), and writes `<out>/tweets<k>_pool.jsonl` (450 negatives, 50 positives) and `tweets<k>_queries.jsonl`
(20 positives) for k = 1..sets, disjoint. The rows keep dev-brainrot's fields (id, prompt, completion, label, source).
Three such sets leave too few unused EntrAPI rows for a fourth; `--first 4` draws sets 4, 5, ... whose positives and
queries are new (none held by sets 1 to 3) and whose negatives are drawn again from every EntrAPI row dev-brainrot
lacks, so they may be the earlier sets' negatives.

They are data to measure on, never part of the repository: `studies.tasks` reads them as tune-only tasks
`fresh-tweets<k>` from the folder in $RISE_FRESH_DATA_DIR. The upstream files (Apache-2.0 and none stated, as the dev
README says) are read where the user put them:

    python -m studies.tweet_sets --control train_data_control_1m_en.json --posts twitter_posts.csv \
        --same-author twitter_same_author_small.json --out ../fresh --sets 2
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Collection, Iterable
from pathlib import Path

import pandas as pd

from rise_core.errors import InputDataError, RiseError
from studies import tasks

N_POOL_NEGATIVES, N_POOL_POSITIVES, N_QUERIES = 450, 50, 20


def _unique(texts: Iterable[tuple[str, str]], used: set[str]) -> list[tuple[str, str]]:
    """(text, source) pairs with a non-empty text that `used` lacks, each text once (the first), in order."""
    out, seen = [], set(used)
    for text, source in texts:
        key = text.strip()
        if key and key not in seen:
            seen.add(key)
            out.append((text, source))
    return out


def control_tweets(path: Path) -> list[tuple[str, str]]:
    """llm-brain-rot's M1 control tweets (a JSON list of {"text": ...}) as (text, source)."""
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [(r["text"], f"{path.name}#{i}") for i, r in enumerate(rows) if isinstance(r.get("text"), str)]


def posts(path: Path) -> list[tuple[str, str]]:
    """EntrAPI's twitter_posts.csv: each post's text (its `description` column) as (text, source)."""
    frame = pd.read_csv(path, dtype=str)
    if "description" not in frame:
        raise InputDataError(f"{path}: no 'description' column (the post's text)")
    return [(t, f"{path.name}#{i}") for i, t in enumerate(frame["description"]) if isinstance(t, str)]


def same_author(path: Path) -> list[tuple[str, str]]:
    """EntrAPI's twitter_same_author_small.json: both tweets of every pair, of every split, as (text, source)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for split, pairs in data.items():
        if isinstance(pairs, list):
            for i, pair in enumerate(pairs):
                for side in ("tweet_a", "tweet_b"):
                    out.append((pair[side]["text"], f"{path.name}#{split}/{i}/{side}"))
    return out


def build(control: Path, posts_path: Path, same_author_path: Path, n_sets: int, seed: int = 0, first: int = 1,
          read: Collection[str] = ()) -> list[tuple[list[dict], list[dict]]]:
    """`n_sets` disjoint (pool rows, query rows) in dev-brainrot's make-up (module doc), none of its texts, numbered
    from `first` (their ids' tag). `read`: the texts of sets written before (`earlier_texts`): no positive or query is
    one of them, while the negatives may be (after three sets too few unused EntrAPI rows remain)."""
    dev = tasks.dev_rows("brainrot_pool.jsonl") + tasks.dev_rows("brainrot_queries.jsonl")
    used = {r["completion"].strip() for r in dev}
    lengths = [len(r["completion"]) for r in dev if r["label"] == 1]
    shortest, longest = min(lengths), max(lengths)
    positives = [(t, s) for t, s in _unique(control_tweets(control), used | {t.strip() for t in read})
                 if t.isascii() and shortest <= len(t) <= longest]
    negatives = {"posts": _unique(posts(posts_path), used), "same": _unique(same_author(same_author_path), used)}
    dev_sources = [r["source"] for r in dev if r["label"] == 0]
    share = sum("twitter_posts" in s for s in dev_sources) / len(dev_sources)  # 210 of 450 in dev-brainrot
    n_posts = round(N_POOL_NEGATIVES * share)
    need = {"positives": n_sets * (N_POOL_POSITIVES + N_QUERIES), "posts": n_sets * n_posts,
            "same": n_sets * (N_POOL_NEGATIVES - n_posts)}
    have = {"positives": len(positives), "posts": len(negatives["posts"]), "same": len(negatives["same"])}
    short = [f"{k}: {have[k]} of {need[k]}" for k in need if have[k] < need[k]]
    if short:
        raise InputDataError(f"not enough unused rows for {n_sets} sets ({'; '.join(short)})")
    rng = random.Random(seed)
    drawn = {"positives": rng.sample(positives, need["positives"]), "posts": rng.sample(negatives["posts"], need["posts"]),
             "same": rng.sample(negatives["same"], need["same"])}
    out = []
    for k in range(n_sets):
        def take(kind: str, n: int, start: int) -> list[tuple[str, str]]:
            return drawn[kind][start:start + n]

        per = N_POOL_POSITIVES + N_QUERIES
        pos = take("positives", per, k * per)
        neg = take("posts", n_posts, k * n_posts) + take("same", N_POOL_NEGATIVES - n_posts,
                                                         k * (N_POOL_NEGATIVES - n_posts))
        pool = [(t, s, 1) for t, s in pos[:N_POOL_POSITIVES]] + [(t, s, 0) for t, s in neg]
        rng.shuffle(pool)
        tag = f"ft{first + k}"
        pool_rows = [{"id": f"{tag}p{i}", "prompt": "", "completion": t, "label": lab, "source": s}
                     for i, (t, s, lab) in enumerate(pool)]
        query_rows = [{"id": f"{tag}q{i}", "prompt": "", "completion": t, "label": 1, "source": s}
                      for i, (t, s) in enumerate(pos[N_POOL_POSITIVES:])]
        out.append((pool_rows, query_rows))
    return out


def earlier_texts(out: Path, first: int) -> set[str]:
    """Every text of the sets tweets1 .. tweets<first - 1> in `out` (each must be there)."""
    texts = set()
    for k in range(1, first):
        for part in ("pool", "queries"):
            path = out / f"tweets{k}_{part}.jsonl"
            if not path.is_file():
                raise InputDataError(f"{path}: --first {first} reads the sets before it, and this one is missing")
            texts |= {s.completion if s.completion is not None else s.text for s in tasks.fresh_samples(path)}
    return texts


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--control", type=Path, required=True, help="llm-brain-rot datasets/M1/train_data_control_1m_en.json")
    ap.add_argument("--posts", type=Path, required=True, help="EntrAPI/evals data/twitter_posts.csv")
    ap.add_argument("--same-author", type=Path, required=True, help="EntrAPI/evals data/twitter_same_author_small.json")
    ap.add_argument("--out", type=Path, required=True, help="a folder outside the repository")
    ap.add_argument("--sets", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--first", type=int, default=1, help="the first set's number: the sets before it in --out "
                    "lend no positive or query (their negatives may come again)")
    args = ap.parse_args(argv)
    if args.first < 1:
        raise SystemExit(f"--first must be at least 1, got {args.first}")
    if args.out.resolve().is_relative_to(tasks.ROOT):
        raise SystemExit(f"{args.out}: the fresh sets are measured on, never kept in the repository")
    try:
        sets = build(args.control, args.posts, args.same_author, args.sets, args.seed, args.first,
                     earlier_texts(args.out, args.first))
    except (RiseError, OSError, ValueError, KeyError) as exc:  # a missing or malformed upstream file, too few rows
        raise SystemExit(f"tweet_sets: {exc}") from exc
    args.out.mkdir(parents=True, exist_ok=True)
    for k, (pool, queries) in enumerate(sets, args.first):
        write_jsonl(args.out / f"tweets{k}_pool.jsonl", pool)
        write_jsonl(args.out / f"tweets{k}_queries.jsonl", queries)
        print(f"fresh-tweets{k}: {len(pool)} pool rows ({sum(r['label'] for r in pool)} positive), "
              f"{len(queries)} queries -> {args.out}")


if __name__ == "__main__":
    main()
