"""How the sketch dims (K_r, K_h, K_g) move attribution quality, from one forward pass per task.

    python -m benchmarks.dims_sweep --tasks finmed,brainrot --out results/dims

Bundled tasks by name, or dev-<name> for the real dev pools (see benchmarks/dev_eval.py).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import pandas as pd

from benchmarks.dev_eval import dev_task
from rise_core.config import RiseConfig, ScoreOptions  # noqa: E402
from rise_core.evaluation import load_task  # noqa: E402
from rise_core.metrics import evaluate_rankings  # noqa: E402
from rise_core.models import load_model  # noqa: E402
from rise_core.readout_cache import ReadoutCache, RiseScorer  # noqa: E402

DIMS = [(64, 12, 64), (128, 24, 128), (32, 48, 32), (64, 48, 64), (16, 96, 16), (128, 96, 128)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", default="finmed,brainrot")
    ap.add_argument("--out", default="results/dims")
    ap.add_argument("--max-pool", type=int, default=None)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--dims", default=None, help="semicolon-separated K_r,K_h,K_g triples (default: a built-in grid)")
    args = ap.parse_args()
    dims_grid = [tuple(int(x) for x in d.split(",")) for d in args.dims.split(";")] if args.dims else DIMS
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model()
    for name in args.tasks.split(","):
        task = (dev_task(name[4:], args.max_pool, None) if name.startswith("dev-")
                else load_task(name, max_pool=args.max_pool))
        cache = ReadoutCache(lm, seq_len=args.seq_len)
        cache.add(task.pool + task.queries)
        rows = []
        for dims, token_norm, center, counted in itertools.product(dims_grid, (True, False), (False, True),
                                                                    ("completion", "all")):
            cfg = RiseConfig(k_r=dims[0], k_h=dims[1], k_g=dims[2], token_norm=token_norm, center_hidden=center,
                             counted_positions=counted, seq_len=args.seq_len)
            for channels, opts in (("RH+GH", ScoreOptions()), ("GH", ScoreOptions(0.0, 1.0))):
                scorer = RiseScorer(cache, cfg, opts)
                scorer.fit(task.pool)
                tab = evaluate_rankings(scorer.score(task.queries), task.labels, task.ks)
                rows.append({"dims": "x".join(map(str, dims)), "values": cfg.k_h * (cfg.k_r + cfg.k_g),
                             "token_norm": token_norm, "center_hidden": center, "counted": counted,
                             "channels": channels, "unified_auPRC": tab["auPRC"].mean(), "AP": tab["AP"].iloc[0]})
        df = pd.DataFrame(rows).sort_values("unified_auPRC", ascending=False)
        df.to_csv(out / f"{task.name}_dims.csv", index=False)
        print(f"### {task.name}\n{df.head(15).round(3).to_markdown(index=False)}\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
