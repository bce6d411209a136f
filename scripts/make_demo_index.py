#!/usr/bin/env python3
"""Write (or check) the one-click demo's shipped index, data/demo_index/demo-howdy-all-retrospective.duckdb.

    python scripts/make_demo_index.py            # rebuild it with the real model (about 5-10 min of CPU)
    python scripts/make_demo_index.py --check    # exit 1 unless the shipped file is what a build here would make

The index is the one the Home page's backdoor demo builds (explorer.demo.demo_setup: the whole Howdy! pool, the
retrospective preset, the embedded default model with the shipped adapter data/adapters/howdy_backdoor); shipping it
spares every visitor that build. Rebuild it whenever the pool, the adapter, the preset's config or the index format
changes: tests/test_demo_index.py fails until then, and the app builds the index itself rather than trust a stale one.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.demo import SHIPPED_INDEX, build_shipped_index, demo_setup, index_problems  # noqa: E402
from rise_core.default_model import DEFAULT_MODEL_ID  # noqa: E402
from rise_core.models import load_model  # noqa: E402
from rise_core.store import RiseIndex  # noqa: E402

DATA_DIR = ROOT / "data"


def check(data_dir: Path) -> list[str]:
    """What differs between the shipped index (read from a copy) and what a build here would make."""
    shipped = data_dir / SHIPPED_INDEX
    if not shipped.is_file():
        return [f"{shipped} is missing"]
    with tempfile.TemporaryDirectory() as tmp:
        setup = demo_setup(data_dir, DEFAULT_MODEL_ID, Path(tmp))
        copy = Path(tmp) / shipped.name
        shutil.copyfile(shipped, copy)
        with RiseIndex.open(copy) as index:
            return index_problems(index, setup, load_model(setup.model_id), whole=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="compare the shipped index with a build here; write nothing")
    p.add_argument("--data-dir", type=Path, default=DATA_DIR, help="the data folder (default: data/)")
    p.add_argument("--batch-size", type=int, default=8)
    args = p.parse_args(argv)
    if args.check:
        problems = check(args.data_dir)
        print("the shipped demo index is current" if not problems else "stale: " + "; ".join(problems))
        return 1 if problems else 0
    from tqdm import tqdm

    out = args.data_dir / SHIPPED_INDEX
    out.parent.mkdir(parents=True, exist_ok=True)
    bar = tqdm(total=0, unit="sample", desc="loading the model", file=sys.stderr, mininterval=2.0)

    def phase_progress(phase: str, done: int, total: int) -> None:
        if bar.desc != phase or bar.total != total:
            bar.set_description_str(phase, refresh=False)
            bar.reset(total=total)
        bar.update(done - bar.n)

    start = time.perf_counter()
    try:
        build_shipped_index(args.data_dir, DEFAULT_MODEL_ID, out, args.batch_size, phase_progress)
    finally:
        bar.close()
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
