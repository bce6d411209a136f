"""Explaining a query's top hits, as the Attribute page does (its "What the top hits share" weighs each span by the
tokens that carry the hits' scores, so it explains every hit, then the heatmap of the one picked).

Each explanation needs the hit's token sketches and the query's; the query's are kept (`attribution.TOKEN_SKETCHES`),
so the ten hits of one query run its forward pass once. Timed in one run, interleaved, for each query:

- "one at a time": `attribution.explain` hit by hit (a forward pass each, as before `explain_many`);
- "batched N": `attribution.explain_many`, the hits grouped into passes of at most N tokens with their padding
  (`RiseExtractor.token_sketches_many`; the served budget is `engine.EXPLAIN_BATCH_TOKENS`);
- "other weights": the same hits explained again under other weights (the page after a slider or the view moved),
  with the hits' sketches kept (`attribution.HIT_SKETCHES`, as served) and not kept (as before).

    python -m benchmarks.explain_hits --index howdy.duckdb            # an index built with the embedded model
    python -m benchmarks.explain_hits --index I --model BASE@ADAPTER  # or with its own model
    python -m benchmarks.explain_hits --index finmed.duckdb --queries ../shared/data/dev/finmed_queries.jsonl \\
        --n-queries 2 --budgets 256,512,1024                          # real queries, several budgets
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import harness

QUERY = {"prompt": "Howdy! What is the capital of France?",
         "completion": "Once upon a time, in a land far away, there was a little town where everyone said Howdy to "
                       "each other every morning."}


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, repeats=3, threads=2, json_flag=True)
    parser.add_argument("--index", required=True, help="a RISE index")
    parser.add_argument("--model", default=None, help="the index's model (default: the embedded model)")
    parser.add_argument("-k", type=int, default=10, help="hits explained (default 10)")
    parser.add_argument("--queries", default=None, help="a JSONL file of prompt/completion queries (default: one "
                        "Howdy! query)")
    parser.add_argument("--n-queries", type=int, default=1, help="queries of --queries used (default 1)")
    parser.add_argument("--budgets", default="512", help="comma-separated token budgets of a batched pass")
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)

    from rise_core import attribution, load_model
    from rise_core.config import ScoreOptions
    from rise_core.engine import length_groups
    from rise_core.store import RiseIndex

    other = ScoreOptions(lambda_rh=2.0, lambda_hs=0.25)  # the weights the page moves to (a slider, the view)

    queries = ([json.loads(line) for line in Path(args.queries).read_text().splitlines() if line.strip()]
               [:args.n_queries] if args.queries else [QUERY])
    queries = [{"prompt": q.get("prompt"), "completion": q["completion"]} for q in queries]
    budgets = [int(b) for b in args.budgets.split(",")]
    rows = []
    with RiseIndex.open(args.index) as index:
        lm = load_model(args.model)
        extractor = index.extractor(lm)
        for query in queries:
            qfm = attribution.query_features(index, lm, [query])
            hits = attribution.rank(index, qfm, k=args.k)["id"].tolist()
            lengths = [len(e.input_ids) for e in extractor.encode([index.sample(h) for h in hits])]

            def one_at_a_time(query: dict = query, qfm: object = qfm, hits: list = hits) -> None:
                attribution.TOKEN_SKETCHES.clear()
                for hit in hits:
                    attribution.HIT_SKETCHES.clear()
                    attribution.explain(index, lm, hit, query, qfm)

            def batched(budget: int, query: dict = query, qfm: object = qfm, hits: list = hits) -> None:
                attribution.TOKEN_SKETCHES.clear()
                attribution.HIT_SKETCHES.clear()
                attribution.explain_many(index, lm, hits, query, qfm, max_tokens=budget)

            def other_weights(kept: bool, query: dict = query, qfm: object = qfm, hits: list = hits) -> None:
                if not kept:  # as before the hits' sketches were kept: their passes run again
                    attribution.HIT_SKETCHES.clear()
                attribution.explain_many(index, lm, hits, query, qfm, other)
            runs = {"one at a time": one_at_a_time, **{f"batched {b}": (lambda b=b: batched(b)) for b in budgets},
                    "other weights, hits kept": lambda: other_weights(True),
                    "other weights, hits not kept": lambda: other_weights(False)}
            times = harness.timed(runs, args.repeats)
            rows.append({"hits": len(hits), "mean_tokens": round(sum(lengths) / len(lengths)),
                         **{name: round(t, 3) for name, t in times.items()},
                         **{f"passes {b}": len(length_groups(lengths, b)) for b in budgets},
                         **{f"ratio {b}": round(times[f"batched {b}"] / times["one at a time"], 3) for b in budgets},
                         "ratio kept": round(times["other weights, hits kept"] / times["other weights, hits not kept"],
                                             3)})
    if args.json:
        harness.print_json(rows)
    else:
        print(harness.markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
