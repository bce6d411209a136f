"""Rank RISE variants across sweep tables (from `rise evaluate --sweep` / benchmarks/dev_eval.py).

    python -m benchmarks.pick_defaults results/dev_eval/*_sweep.csv results/bundled/*_sweep.csv

Prints, per variant, the unified auPRC on every task, the mean over tasks and the mean over the real (dev-*) tasks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

KEYS = ["counted_positions", "token_norm", "center_hidden", "sample_norm", "channels"]


def main(paths: list[str]) -> None:
    frames = []
    for p in paths:
        df = pd.read_csv(p)
        df["task"] = Path(p).name.replace("_sweep.csv", "")
        frames.append(df)
    table = pd.concat(frames).pivot_table(index=KEYS, columns="task", values="unified_auPRC")
    real = [c for c in table.columns if c.startswith("dev-")]
    table["mean_all"] = table[[c for c in table.columns if c not in ("mean_all",)]].mean(axis=1)
    if real:
        table["mean_real"] = table[real].mean(axis=1)
    print(table.sort_values("mean_all", ascending=False).round(3).to_markdown())


if __name__ == "__main__":
    main(sys.argv[1:])
