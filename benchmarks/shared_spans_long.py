"""The trigger test (`shared_spans.find_shared_spans`) and the behaviour test's candidates (`behaviour.candidates`)
when the top hits are long duplicated rows: every span of the text is shared by all ten, thousands of spans in one
group to fold into the phrase they are windows of.

For each text length: a pool of 200 rows, ten of them the same text of that many random words (the top hits) and the
rest short; the query holds the same text. Timed: `find_shared_spans` over the ten hits, `behaviour.candidates`
(the trigger test, the query's spans, the representation hits), and the floor, tokenising the hits' texts once
(`TOKEN_RE`). Prints each and its ratio to the floor, measured in the same run; the spans should grow linearly with
the text.

    python -m benchmarks.shared_spans_long                    # 300, 1,000 and 3,000 words
    python -m benchmarks.shared_spans_long --words 1000 --repeats 3 --json
"""

from __future__ import annotations

import random
import sys
from typing import Any

from benchmarks import harness
from rise_core import behaviour
from rise_core.samples import Sample
from rise_core.shared_spans import TOKEN_RE, find_shared_spans


def measure(n_words: int, repeats: int) -> dict[str, Any]:
    rng = random.Random(0)
    text = " ".join(f"w{rng.randrange(5000)}" for _ in range(n_words))
    pool = [Sample(prompt=text, completion="the same answer", id=f"r{i}") for i in range(10)]
    pool += [Sample(prompt=" ".join(f"w{rng.randrange(5000)}" for _ in range(20)), completion="another answer",
                    id=f"c{i}") for i in range(190)]
    query = Sample(prompt=text, completion="the same answer")
    spans, frame = behaviour.samples_spans(pool), behaviour.samples_frame(pool)
    hits, others = frame(list(range(10))), frame(list(range(10, 20)))
    shared = find_shared_spans(spans, hits, limit=None)
    times = harness.timed({
        "floor": lambda: [TOKEN_RE.findall(t) for t in hits["prompt"]],
        "find_shared_spans": lambda: find_shared_spans(spans, hits, limit=None),
        "candidates": lambda: behaviour.candidates(spans, hits, others, query),
    }, repeats)
    over = harness.ratios(times, "floor", digits=1)
    return {"words": n_words, "shared_spans_listed": len(shared),
            **{f"{k}_ms": round(v * 1e3, 1) for k, v in times.items()},
            "find_shared_spans_over_floor": over["find_shared_spans"], "candidates_over_floor": over["candidates"]}


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, repeats=3, threads=1, json_flag=True)
    parser.add_argument("--words", default="300,1000,3000", help="comma-separated text lengths (words)")
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    for n in (int(w) for w in args.words.split(",")):
        res = measure(n, args.repeats)
        if args.json:
            harness.print_json(res)
            continue
        print(f"{n:>6} words: find_shared_spans {res['find_shared_spans_ms']:9.1f} ms "
              f"({res['find_shared_spans_over_floor']:.0f}x the tokenising floor, {res['floor_ms']:.2f} ms), "
              f"behaviour.candidates {res['candidates_ms']:9.1f} ms ({res['candidates_over_floor']:.0f}x); "
              f"{res['shared_spans_listed']} span(s) listed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
