"""The bundled data as the explorer offers it: the one-click demo's pool slice, index and example query, and the
Evaluate page's labelled task.

The backdoor demo's index ships in the data folder (`SHIPPED_INDEX`, written by `scripts/make_demo_index.py`), so the
demo needs no build on a visitor's machine: `install_shipped_index` copies it into the app's index folder and trusts
the copy only when it is what a build here would make (`index_problems`: this code's index format, the demo's config
and preset, the pool's ids and texts, and the loaded model's fingerprint); otherwise the demo builds its index.
The shipped file itself is never opened for writing."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rise_core.bundled import POOL_SUFFIX, pool_paths, queries_for_pool, task_files
from rise_core.config import PRESETS, RiseConfig
from rise_core.errors import InputDataError, RiseError
from rise_core.evaluation import DEFAULT_KS, TASK_KS, Task, load_task
from rise_core.ingest import PoolData, content_hash, read_pool
from rise_core.metrics import binary_labels
from rise_core.samples import Sample

if TYPE_CHECKING:
    from rise_core.models import LoadedModel
    from rise_core.store import RiseIndex

from .build_plan import DEMO_PREFIX, head_pool, index_file_name

DEMO_POOL = "howdy"
DEMO_ROWS = 120
BACKDOOR_ADAPTER = "adapters/howdy_backdoor"  # in the data folder: the embedded model fine-tuned on the howdy pool
TRIGGER = "Howdy! "
# the backdoor demo attributes the fine-tuned model's own answers: its index is built for that setting
BACKDOOR_PRESET = "retrospective"
# the backdoor demo's index, built by scripts/make_demo_index.py (in the data folder; copied, never written)
SHIPPED_INDEX = "demo_index/demo-howdy-all-retrospective.duckdb"
DEMO_OWNER = "demo"  # the demo's index belongs to the app: any editor may finish it, the Build page writes it never


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
    name = f"{DEMO_PREFIX}{pool_name}-{n_rows or 'all'}" + (f"-{preset}" if preset else "")
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


@dataclasses.dataclass(frozen=True)
class DemoSetup:
    """What the one-click demo runs on: its model, pool, index config and where its index lives."""

    model_id: str  # the backdoored adapter's directory, or the app's model
    backdoored: bool
    pool_name: str
    pool: PoolData
    preset: str | None  # the preset its index is built for (None: the default index)
    config: RiseConfig
    index_path: Path

    @property
    def label(self) -> str:
        """The index's source in its provenance."""
        return f"demo ({self.pool_name})"


def demo_setup(data_dir: str | Path, model_id: str, index_dir: Path) -> DemoSetup:
    """The demo for the app's model: with the shipped backdoored adapter (trained on `model_id`), the whole Howdy!
    pool built with the retrospective preset; otherwise a `DEMO_ROWS` slice of the pool and the default index."""
    spec, backdoored = demo_model(data_dir, model_id)
    n_rows = 0 if backdoored else DEMO_ROWS
    name, pool = demo_pool(data_dir, n_rows)
    preset = BACKDOOR_PRESET if backdoored else None
    config = PRESETS[preset] if preset else RiseConfig()
    return DemoSetup(spec, backdoored, name, pool, preset, config, demo_index_path(index_dir, name, spec, n_rows, preset))


def shipped_index(data_dir: str | Path, setup: DemoSetup) -> Path | None:
    """The demo index shipped in the data folder for this demo (the backdoor demo only), if present."""
    path = Path(data_dir) / SHIPPED_INDEX
    return path if setup.backdoored and path.is_file() else None


def pool_digest(id_hashes: Mapping[str, str]) -> str:
    """sha256 of a pool's (id, content hash) pairs in id order: equal for an index and the pool it holds whole."""
    h = hashlib.sha256()
    for sample_id in sorted(id_hashes):
        h.update(f"{sample_id}\t{id_hashes[sample_id]}\n".encode())
    return h.hexdigest()


def pool_id_hashes(pool: PoolData) -> dict[str, str]:
    """{id: content hash} of a pool's samples, as an index stores them (`RiseIndex.id_hashes`)."""
    return {str(s.id): content_hash(s) for s in pool.samples}


def index_problems(index: RiseIndex, setup: DemoSetup, lm: LoadedModel, whole: bool) -> list[str]:
    """Why `index` is not the demo's index as a build here would make it (empty: it is): another index format, config,
    preset or model fingerprint, or samples not in the pool or with other text. With `whole`, it must also hold the
    whole pool, complete (a shipped index); without, a partial build of the pool is fine (the demo resumes it)."""
    from rise_core.store.schema import FORMAT_VERSION

    m = index.manifest
    problems = []
    if m.format_version != FORMAT_VERSION:
        problems.append(f"index format {m.format_version}, this code writes {FORMAT_VERSION}")
    if m.config.fingerprint() != setup.config.fingerprint():
        problems.append(f"config {m.config.fingerprint()}, the demo's is {setup.config.fingerprint()}")
    if m.build_preset != setup.preset:
        problems.append(f"built for preset {m.build_preset!r}, the demo's is {setup.preset!r}")
    if m.model_fingerprint != lm.fingerprint():
        problems.append(f"model fingerprint {m.model_fingerprint}, the loaded model's is {lm.fingerprint()}")
    stored, pool = index.id_hashes(), pool_id_hashes(setup.pool)
    changed = sum(1 for i, h in stored.items() if pool.get(i) != h)
    if changed:
        problems.append(f"{changed} samples not in the pool or with other text")
    if whole and not changed and (pool_digest(stored) != pool_digest(pool) or m.status != "complete"):
        problems.append(f"{len(stored)} of the pool's {len(pool)} samples, status {m.status}")
    return problems


def install_shipped_index(shipped: Path, setup: DemoSetup, lm: LoadedModel) -> list[str]:
    """Copy the shipped demo index to `setup.index_path` (absent) and adopt it; the reasons it was refused instead
    (empty: installed).

    The copy is made beside the target under a temporary name, checked there (`index_problems`, whole), told where
    this machine loads its model (`RiseIndex.relocate_model`: the adapter's path here), recorded in its provenance
    and only then renamed into place; a refused or failed copy is deleted. The shipped file is only read."""
    from rise_core.store import RiseIndex

    target = setup.index_path
    part = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        shutil.copyfile(shipped, part)
        with RiseIndex.open(part, read_only=False) as copy:
            problems = index_problems(copy, setup, lm, whole=True)
            if not problems:
                copy.relocate_model(lm)
                copy.record_build(DEMO_OWNER, f"{setup.label}, shipped {shipped.name}")
        if not problems:
            if target.exists():  # another session installed it meanwhile: theirs is the same index
                return []
            part.rename(target)
        return problems
    except (RiseError, OSError) as exc:
        return [f"the copy failed: {exc}"]
    finally:
        for leftover in (part, part.with_name(part.name + ".wal")):
            with contextlib.suppress(OSError):
                leftover.unlink()


def build_shipped_index(data_dir: str | Path, model_id: str, out: Path, batch_size: int = 8,
                        phase_progress: Callable[[str, int, int], None] | None = None) -> DemoSetup:
    """Build the backdoor demo's index as the demo builds it (`demo_setup` for `model_id`, the app's model) and write
    it to `out` (replaced whole, at the end, by a compacted copy), with no path of this machine in it: its model is recorded as
    `BACKDOOR_ADAPTER`, relative to the data folder (`install_shipped_index` records the installing machine's path).
    InputDataError unless the data folder holds the backdoored adapter trained on `model_id`."""
    import tempfile

    from rise_core.models import load_model
    from rise_core.store import RiseIndex, build_index
    from rise_core.store.files import compact_copy

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        setup = demo_setup(data_dir, model_id, Path(tmp))
        if not setup.backdoored:
            raise InputDataError(f"{Path(data_dir) / BACKDOOR_ADAPTER} is not a backdoored adapter trained on "
                                 f"{model_id!r}: the shipped index is the backdoor demo's")
        lm = load_model(setup.model_id)
        build_index(setup.index_path, setup.pool, lm, setup.config, batch_size=batch_size, preset=setup.preset,
                    built_by=DEMO_OWNER, source=setup.label, phase_progress=phase_progress)
        with RiseIndex.open(setup.index_path, read_only=False) as index:
            index.relocate_model(lm, model_id=BACKDOOR_ADAPTER, adapter_path=BACKDOOR_ADAPTER)
            problems = index_problems(index, setup, lm, whole=True)
        if problems:
            raise InputDataError(f"the demo index just built does not check out: {'; '.join(problems)}")
        compact = Path(tmp) / out.name  # the live data only: the build machine's model path is gone with the update
        compact_copy(setup.index_path, compact)
        compact.replace(out)
    return dataclasses.replace(setup, index_path=out)
