"""Run the model once over every task's pool and queries and save the readouts, so experiments rerun without it.

    python -m studies.cache_readouts --out results/readouts [--tasks howdy,finmed,brainrot,dev-finmed,...]

One file per task (<out>/<task>.pt, see `ReadoutCache.save`); the backdoors planted in the same Alpaca rows (dev-sentiment,
dev-refusal, dev-pirate, dev-fact, dev-story and their held sets, the replanted ones too) share their clean
rows, so they share one file (alpaca.pt); both folds of the tweet held set read dev-brainrot-held.pt (their rows are
dev-brainrot's pool) and dev-howdy-held reads dev-howdy-held.pt (its rows are dev-howdy's: a copy of dev-howdy.pt
serves).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rise_core.models import load_model
from rise_core.readout_cache import ReadoutCache
from studies import tasks

FINAL = 1.0
"""the caches keep the final hidden state only (the studies' figures before RiseConfig.hs_depth; another layer's HS
comes from studies.hs_layers)."""
ALL = (*tasks.BUNDLED, "dev-brainrot", "dev-finmed", *(f"dev-{kind}" for kind in tasks.BACKDOOR_KINDS), "dev-howdy")


def cache_file(out: Path, task: str) -> Path:
    whole = tasks.HELD_SETS[task].whole if task in tasks.HELD_SETS else task  # a held set's rows are its whole task's
    if whole.removeprefix("dev-") in tasks.BACKDOOR_KINDS:
        return out / "alpaca.pt"
    return out / (f"{whole}-held.pt" if task in tasks.HELD_SETS else f"{task}.pt")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(ALL))
    ap.add_argument("--out", default="results/readouts")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=8)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(None)
    for name in args.tasks.split(","):
        task = tasks.task(name)
        path = cache_file(out, name)
        cache = ReadoutCache(lm, seq_len=args.seq_len, hs_depth=FINAL)
        if path.exists():
            cache.load(path)
        t0 = time.perf_counter()
        cache.add(task.pool + task.queries, batch_size=args.batch_size)
        cache.save(path)
        print(f"{name}: {len(cache.readouts)} readouts in {path}, forward {time.perf_counter() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
