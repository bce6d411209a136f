"""Pick RISE's defaults from `choose_defaults.py`'s per-query results, and print the tune and report tables.

    python -m studies.report_defaults results/defaults/per_query.csv [more.csv ...] [--max-values 6000] [--markdown]

Each task split (a bundled pool, or one half of a dev task's queries) is one set; a method's score on a set is its
mean auPRC@10 over that set's queries, and its tune score is the mean over the tune sets, each weighted equally.
- The default: the RISE variant (feature-time and query-time choices together) with the best tune score among those
  storing at most --max-values values per sample (6000 fp16 values = 12 KB, the issue's budget). Variants within
  TIE of the best are taken as tied and the one storing fewer values wins, then the one without BM25 fusion (which
  needs a BM25 index beside the RISE one).
- RISE's own channels (RH, GH, HS alone) and the pair RH+GH are chosen the same way, each on the tune sets.
- Baselines need no choice except Grad-Sketch's size: it is reported at the default's values per sample.
Everything is then reported on the report sets, which took no part in any choice.
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from rise_core.methods import GRAD_SKETCH, canonical

TIE = 0.002  # tune-score differences below this are noise at 10-20 queries per set
RISE_KEYS = ["features", "sample_norm", "lambda_rh", "lambda_hs", "fusion"]


def set_scores(per_query: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean auPRC@10 per (variant, task, split): one column per set."""
    frame = per_query.assign(set=per_query["task"] + ":" + per_query["split"])
    return frame.pivot_table(index=keys, columns="set", values="auPRC@10", aggfunc="mean")


def tune_cols(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c.endswith(":tune")]


def report_cols(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c.endswith(":report")]


def pick(table: pd.DataFrame, values: pd.Series | None = None, fusion: pd.Series | None = None) -> tuple:
    """The index of the row with the best tune mean (ties within TIE: fewer values, then no fusion), among the rows
    measured on every set."""
    table = table.dropna()
    tune = table[tune_cols(table)].mean(axis=1)
    near = tune[tune >= tune.max() - TIE].to_frame("tune")
    near["values"] = 0 if values is None else values.reindex(near.index)
    near["fused"] = 0 if fusion is None else (fusion.reindex(near.index) != "none").astype(int)
    near["neg_tune"] = -near["tune"]
    return near.sort_values(["values", "fused", "neg_tune"]).index[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("per_query", nargs="+", help="per_query.csv files written by choose_defaults.py (concatenated)")
    ap.add_argument("--max-values", type=int, default=6000, help="values per sample allowed (fp16: 2 bytes each)")
    ap.add_argument("--markdown", action="store_true", help="print Markdown tables")
    args = ap.parse_args()
    pq = pd.concat([pd.read_csv(path) for path in args.per_query], ignore_index=True)
    # one name per method (results written before the registry say "RISE-RH", "Hidden-cosine", "MiniLM")
    pq["method"] = pq["method"].map(lambda m: canonical(m, m))
    pq["fusion"] = pq["fusion"].fillna("none") if "fusion" in pq else "none"

    rise = pq[(pq["kind"] == "rise") & (pq["values"] <= args.max_values)]
    rise_table = set_scores(rise, RISE_KEYS)
    values = rise.groupby(RISE_KEYS)["values"].first()
    fusion = pd.Series(rise_table.index.get_level_values("fusion"), index=rise_table.index)
    default = pick(rise_table, values, fusion)
    default_values = int(values[default])

    rows: dict[str, pd.Series] = {}
    choice = dict(zip(RISE_KEYS, default, strict=True))
    rows["RISE (default: " + ", ".join(f"{k}={v}" for k, v in choice.items()) + f"; {default_values} values)"] = \
        rise_table.loc[default]
    no_fusion = rise_table[rise_table.index.get_level_values("fusion") == "none"]
    pure = no_fusion[no_fusion.index.get_level_values("lambda_hs") == 0.0]
    for label, table in (("RISE, best without BM25 fusion", no_fusion), ("RISE RH+GH (no HS), best", pure)):
        best = pick(table, values)
        rows[f"{label} ({', '.join(str(v) for v in best)})"] = table.loc[best]
    channels = pq[pq["kind"] == "channel"]
    for method, part in channels.groupby("method"):
        table = set_scores(part, ["features", "sample_norm"])
        best = pick(table)
        rows[f"{method} alone, best ({best[0]})"] = table.loc[best]
    base = pq[pq["kind"] == "baseline"]
    grad = set_scores(base[base["method"] == GRAD_SKETCH], ["values"]).dropna()  # sizes measured on every set
    size = min(grad.index, key=lambda v: abs(v - default_values))
    rows[f"{GRAD_SKETCH} ({int(size)} values)"] = grad.loc[size]
    for method, part in base[base["method"] != GRAD_SKETCH].groupby("method"):
        rows[method] = set_scores(part, ["method"]).iloc[0]

    out = pd.DataFrame(rows).T
    tune, report = tune_cols(out), report_cols(out)
    out.insert(0, "tune mean", out[tune].mean(axis=1))
    out.insert(1, "report mean", out[report].mean(axis=1))
    for name, cols in (("Tune sets (the choice)", ["tune mean", *tune]), ("Report sets (no choice saw them)",
                                                                             ["report mean", *report])):
        table = out[cols].round(3)
        print(f"\n## {name}\n")
        print(table.to_markdown() if args.markdown else table.to_string())
    gaps = out.loc[:, report].max(axis=0) - out.iloc[0][report]
    print("\nDefault's gap to the best method on each report set: "
          + ", ".join(f"{c.removesuffix(':report')} {g:+.3f}" for c, g in gaps.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
