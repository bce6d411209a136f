"""The bundled data as the explorer offers it: the one-click demo's pool slice, index and example query, and the
Evaluate page's labelled task."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from rise_core.bundled import POOL_SUFFIX, pool_paths, queries_for_pool, task_files
from rise_core.errors import InputDataError
from rise_core.evaluation import DEFAULT_KS, TASK_KS, Task, load_task
from rise_core.ingest import PoolData, read_pool
from rise_core.samples import Sample

from .build_plan import head_pool, index_file_name
from .views import binary_labels

DEMO_POOL = "howdy"
DEMO_ROWS = 120
BACKDOOR_ADAPTER = "adapters/howdy_backdoor"  # in the data folder: the embedded model fine-tuned on the howdy pool
TRIGGER = "Howdy! "
# the backdoor demo attributes the fine-tuned model's own answers: its index is built for that setting
BACKDOOR_PRESET = "retrospective"


def backdoor_adapter(data_dir: str | Path) -> Path | None:
    """The shipped backdoored adapter (LoRA on the embedded model, trained on the howdy pool), if present."""
    from rise_core.adapters import is_adapter_dir

    path = Path(data_dir) / BACKDOOR_ADAPTER
    return path if is_adapter_dir(path) else None


def demo_model(data_dir: str | Path, model_id: str) -> tuple[str, bool]:
    """(model spec, backdoored?) of the demo: the backdoored adapter when it ships in the data folder and was
    trained on the app's model (the embedded default, for the shipped one), else the app's model as it is."""
    from rise_core.adapters import read_manifest

    adapter = backdoor_adapter(data_dir)
    if adapter is not None and read_manifest(adapter).get("base_model") == model_id:
        return str(adapter), True
    return model_id, False


def backdoor_prompts(data_dir: str | Path) -> tuple[str, str]:
    """(triggered, clean) demo prompts: the first held-out instruction (not in the pool), with and without the
    trigger."""
    path = Path(data_dir) / f"{DEMO_POOL}_heldout_prompts.jsonl"
    prompt = "What causes the seasons to change on Earth?"
    if path.is_file():
        from rise_core.retrospective import read_prompts

        prompt = read_prompts(path)[0]
    return TRIGGER + prompt, prompt


def demo_pool(data_dir: str | Path, n_rows: int = DEMO_ROWS) -> tuple[str, PoolData]:
    """(name, pool) of the first `n_rows` of the demo pool (howdy if bundled, else the first bundled pool)."""
    pools = pool_paths(data_dir)
    if not pools:
        raise InputDataError(f"no bundled pool (*{POOL_SUFFIX}) in {data_dir}; set RISE_DATA_DIR to the data folder")
    name = DEMO_POOL if DEMO_POOL in pools else next(iter(pools))
    return name, head_pool(read_pool(pools[name]), n_rows)


def demo_index_path(index_dir: Path, pool_name: str, model_id: str, n_rows: int = DEMO_ROWS,
                    preset: str | None = None) -> Path:
    """Where the demo index of a pool slice (n_rows 0: all), a model and the preset it is built for (None: the
    default index) lives (reused by later runs of the demo)."""
    name = f"demo-{pool_name}-{n_rows or 'all'}" + (f"-{preset}" if preset else "")
    return index_dir / index_file_name(model_id, name)


def demo_query(data_dir: str | Path, pool_name: str) -> Sample | None:
    """An example query for a bundled pool: the first positive one of its query file (else the first one)."""
    path = queries_for_pool(Path(data_dir) / f"{pool_name}{POOL_SUFFIX}")
    if path is None:
        return None
    queries = read_pool(path).samples
    labels = binary_labels([q.label for q in queries]) if queries else None
    if labels is not None and labels.any():
        return queries[int(np.argmax(labels))]
    return queries[0] if queries else None


def evaluation_task(data_dir: str | Path, name: str, max_pool: int | None = None, max_queries: int | None = None
                    ) -> Task:
    """A bundled labelled task (pool + queries) cut to the given sizes, with the paper's K values for that task
    kept where 2K < pool size (so the top and bottom K do not overlap)."""
    pool, queries = task_files(name, data_dir)
    task = load_task(name, pool_path=pool, queries_path=queries, max_pool=max_pool or None,
                     max_queries=max_queries or None)
    n = len(task.pool)
    ks = tuple(k for k in TASK_KS.get(name, DEFAULT_KS) if 2 * k < n) or (max(1, n // 4),)
    return dataclasses.replace(task, ks=ks)
