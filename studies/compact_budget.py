"""What the `compact` preset (rise_core.config.PRESET_TABLE) costs against the default, on the studies' sets.

    python -m studies.cache_readouts --out results/readouts          # the forward passes, once
    python -m studies.compact_budget --readouts results/readouts --out results/compact

Same protocol as `studies.choose_defaults` and `studies.query_channels`: tune = the bundled pools and the first half
of dev-finmed, dev-brainrot and dev-sentiment's queries; report = the second halves and dev-refusal. Metric:
auPRC@10 per query, macro-averaged; TUNE / REPORT are the means over the sets (each set weighted equally). Every
variant is scored from the cached readouts (no model run): the default preset (TensorSketch 64/24/64 + HS, the
per-query rule), the compact preset as it is in the table, and the small-budget variants it was chosen among (the
paper's 16/8/28 budget as TensorSketch or outer product, with or without HS, and 24/8/35). `values` is the stored
values a sample with the embedded model (hidden size 576).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from rise_core.config import PRESET_SCORING, PRESETS, RiseConfig, ScoreOptions
from rise_core.methods import RISE, TaskSource, get
from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache
from studies import tasks
from studies.cache_readouts import cache_file
from studies.choose_defaults import per_query_auprc
from studies.query_channels import table

SMALL = dict(k_r=16, k_h=8, k_g=28)
# name -> (index config, scoring); seq_len is set to the readouts'
VARIANTS: dict[str, tuple[RiseConfig, ScoreOptions]] = {
    "default (64/24/64 + HS, per-query)": (PRESETS["default"], PRESET_SCORING["default"]),
    "fixed (64/24/64 + HS, 1.4/1/1)": (PRESETS["fixed"], PRESET_SCORING["fixed"]),
    "backdoor (64/24/64, RH+GH)": (PRESETS["backdoor"], PRESET_SCORING["backdoor"]),
    "compact (the preset)": (PRESETS["compact"], PRESET_SCORING["compact"]),
    "tensor 16/8/28 RH+GH": (RiseConfig(**SMALL, hidden_channel=False), ScoreOptions(lambda_hs=0.0)),
    "outer 16/8/28 RH+GH": (RiseConfig(**SMALL, composition="outer", hidden_channel=False),
                            ScoreOptions(lambda_hs=0.0)),
    "tensor 16/8/28 + HS, per-query": (RiseConfig(**SMALL), ScoreOptions(weighting="auto")),
    "tensor 16/8/28 + HS, 1.4/1/1": (RiseConfig(**SMALL), ScoreOptions()),
    "tensor 24/8/35 RH+GH": (RiseConfig(k_r=24, k_h=8, k_g=35, hidden_channel=False), ScoreOptions(lambda_hs=0.0)),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readouts", default="results/readouts")
    ap.add_argument("--out", default="results/compact")
    ap.add_argument("--tasks", default=",".join((*tasks.BUNDLED, *tasks.TUNED, *tasks.REPORT_ONLY)))
    ap.add_argument("--seq-len", type=int, default=256)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(None)
    rows = []
    for name in args.tasks.split(","):
        task = tasks.task(name)
        cache = ReadoutCache(lm, seq_len=args.seq_len)
        cache.load(cache_file(Path(args.readouts), name))
        missing = [s for s in dict.fromkeys(task.pool + task.queries) if cache.key(s) not in cache.readouts]
        if missing:  # not cached yet (studies.cache_readouts): left out, and said so
            print(f"[{name}] skipped: {len(missing)} samples have no cached readout in {args.readouts}", flush=True)
            continue
        part = tasks.splits(name, len(task.queries))
        for label, (config, options) in VARIANTS.items():
            src = TaskSource(task.pool, task.queries, cache, config.replace(seq_len=args.seq_len), options, memo={})
            values = per_query_auprc(get(RISE).score(src).scores, task)
            rows.extend({"task": name, "split": split, "query": int(i), "method": label,
                         "values": config.feature_values(lm.hidden_size), "auPRC@10": values[i]}
                        for split, q in part.items() for i in q)
        pd.DataFrame(rows).to_csv(out / "per_query.csv", index=False)
        print(f"[{name}] done", flush=True)
    frame = pd.DataFrame(rows)
    tab = table(frame, "auPRC@10", "method").round(3)
    tab.insert(0, "values", frame.groupby("method")["values"].first())
    tab = tab.loc[list(VARIANTS)]
    pd.set_option("display.width", 250)
    print(tab.to_string())
    (out / "compact_budget.md").write_text(tab.to_markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
