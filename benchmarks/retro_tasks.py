"""Retrospective tasks that fit a CPU fine-tune: the bundled Howdy! pool, and a 300-row slice of dev-refusal (real
Alpaca rows, 40 of them poisoned with the `BadMagic` trigger -> refusal), written as JSONL under results/ so that
`rise finetune` and `rise evaluate --pool/--queries` read them like any user's files (never into the repo).

    python -m benchmarks.retro_tasks --out results/retro     # writes <out>/dev-refusal-200_{pool,queries}.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.dev_tasks import dev_task
from rise_core.evaluation import Task  # noqa: E402

N_CLEAN = 160  # plus every poisoned row (40): a 200-row pool, 20% poisoned (the probe had the same shape)


def refusal_slice(n_clean: int = N_CLEAN) -> Task:
    """dev-refusal with every poisoned pool row and the first `n_clean` clean ones, in pool order."""
    task = dev_task("dev-refusal")
    clean = 0
    keep = []
    for i, label in enumerate(task.labels):
        if label == 1 or clean < n_clean:
            keep.append(i)
            clean += int(label == 0)
    return Task(f"dev-refusal-{len(keep)}", [task.pool[i] for i in keep], task.labels[keep], task.queries, task.ks)


def write_jsonl(path: Path, samples) -> None:
    path.write_text("".join(json.dumps({"id": s.id, "prompt": s.prompt, "completion": s.completion,
                                        "label": s.label}, ensure_ascii=False) + "\n" for s in samples))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/retro")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    task = refusal_slice()
    write_jsonl(out / f"{task.name}_pool.jsonl", task.pool)
    write_jsonl(out / f"{task.name}_queries.jsonl", task.queries)
    print(f"{task.name}: {len(task.pool)} pool rows ({int(task.labels.sum())} poisoned), {len(task.queries)} queries "
          f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
