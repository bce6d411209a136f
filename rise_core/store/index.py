"""`RiseIndex`: one DuckDB file holding an index's manifest, pool samples and per-sample features.

A build is the only writer: each batch's samples, features and stats are inserted in one transaction, so a killed
build leaves whole batches only. The CountSketch hashes (and the centring mean, when used) are stored in the file,
so appends and queries use exactly the operators the index was built with, and a model or config that differs is
refused.

Readers open the file read-only and keep the feature matrix in memory (loaded once, extended after appends).
DuckDB allows one process to write a file, or any number to read it; within one process, a writer first releases
the connections of the readers of the same file (they reconnect, and see the new rows, on their next call).

The handle is composed in layers: `connection.IndexConnection` owns the connection and the validated state,
`reader.IndexReader` adds the reads, and `RiseIndex` the creation and the writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import torch

from ..config import RiseConfig
from ..errors import IndexMismatchError, IndexStoreError, InputDataError, RiseError
from ..models import LoadedModel
from ..samples import Sample
from ..scoring import FeatureMatrix
from ..sketch import SketchSet
from .files import check_new_location, release_readers
from .reader import IndexReader
from .rows import features_table, merge_columns, samples_table
from .schema import (
    BASE_LOSSES_SCHEMA,
    BASE_LOSSES_TABLE,
    BUILD_STATUSES,
    FORMAT,
    FORMAT_VERSION,
    SCHEMA,
    encode_array,
    utc_now,
    view_sql,
)
from .spans import spans_path

logger = logging.getLogger(__name__)
MAX_PROVENANCE_BUILDS = 50  # builds and appends remembered per index (the owner is kept whatever the count)


class RiseIndex(IndexReader):
    """A RISE index file: manifest, samples, features. Open with `RiseIndex.open`, create with `RiseIndex.create`.

    Read-only handles may be shared between threads (each call uses its own cursor); a writable handle belongs to
    one thread (the build)."""

    # -- creating --------------------------------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path, lm: LoadedModel, config: RiseConfig, overwrite: bool = False,
               preset: str | None = None) -> RiseIndex:
        """A new, empty, writable index for `lm` and `config` (sketches drawn from config.seed); `preset`: the
        scoring preset it is built for (`IndexManifest.build_preset`)."""
        sketches = SketchSet.for_config(lm.vocab_size, lm.hidden_size, config)
        info = {k: v for k, v in lm.describe().items() if k not in ("model_id", "fingerprint")}
        return cls._create_raw(path, config, lm.model_id, lm.fingerprint(), info, sketches, overwrite, preset)

    @classmethod
    def _create_raw(cls, path: str | Path, config: RiseConfig, model_id: str, model_fingerprint: str,
                    model_info: dict[str, Any], sketches: SketchSet, overwrite: bool = False,
                    preset: str | None = None) -> RiseIndex:
        """Create an index from explicit identity and sketches (used by `create` and by synthetic benchmarks)."""
        from .. import __version__

        path = Path(path)
        check_new_location(path, overwrite)
        if path.exists():
            release_readers(path)
            for p in (path, Path(f"{path}.wal"), spans_path(path)):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
        index = cls(path, read_only=False)
        now = utc_now()
        manifest = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "index_uuid": uuid.uuid4().hex,
            "model_id": model_id, "model_fingerprint": model_fingerprint, "model_info": model_info,
            "config": config.to_dict(), "config_fingerprint": config.fingerprint(),
            "sketch_digest": sketches.digest(),
            "seeds": {"r": config.seed, "h": config.seed + 1, "g": config.seed + 2,
                      **({"h_g": config.seed + 3} if config.composition == "tensor" else {})},
            "feature_layout": {"dtype": "float16-le", "composition": config.composition,
                               "rh": [config.k_r, config.k_h], "gh": [config.k_g, config.k_h],
                               "hs": [model_info.get("hidden_size")] if config.hidden_channel else None,
                               "unit_vectors": True},
            "library_version": __version__, "created_at": now, "updated_at": now, "status": "building",
            "has_hidden_mean": False,
            **({"build_preset": preset} if preset is not None else {}),
        }
        try:
            con = index._connect(validate=False)
            with index._transaction("create"):
                for ddl in SCHEMA:
                    con.execute(ddl)
                con.execute(view_sql([]))
                con.executemany("INSERT INTO rise_manifest VALUES (?, ?)",
                                [(k, json.dumps(v)) for k, v in manifest.items()])
                for name, tensor in sketches.state_dict().items():
                    index._put_array(f"sketch.{name}", tensor)
            index._load_state()
        except BaseException:
            index.close()
            for p in (path, Path(f"{path}.wal")):
                with contextlib.suppress(OSError):
                    p.unlink()
            raise
        return index

    # -- writing ---------------------------------------------------------------------------------------------------

    def _put_array(self, name: str, tensor: torch.Tensor) -> None:
        dtype, shape, data = encode_array(tensor)
        assert self._con is not None
        self._con.execute("INSERT OR REPLACE INTO rise_arrays VALUES (?, ?, ?, ?)",
                          [name, dtype, json.dumps(shape), data])

    def _set_manifest(self, **values: Any) -> None:
        assert self._con is not None
        self._con.executemany("INSERT OR REPLACE INTO rise_manifest VALUES (?, ?)",
                              [(k, json.dumps(v)) for k, v in values.items()])

    def add_samples(self, samples: Sequence[Sample], features: FeatureMatrix, n_counted: Sequence[int],
                    mean_support: Sequence[float], loss: Sequence[float], n_tokens: Sequence[int],
                    truncated: Sequence[bool]) -> None:
        """Append samples (with ids) and their features in one transaction (all or nothing)."""
        batch = self._prepare(samples, features, n_counted, mean_support, loss, n_tokens, truncated)
        with self._transaction("write to"):
            self._insert_prepared(batch)
        self._after_insert(batch)

    def _prepare(self, samples: Sequence[Sample], features: FeatureMatrix, n_counted: Sequence[int],
                 mean_support: Sequence[float], loss: Sequence[float], n_tokens: Sequence[int],
                 truncated: Sequence[bool]) -> dict[str, Any]:
        m = self._state()
        n = len(samples)
        if len(features) != n:
            raise InputDataError(f"{n} samples but {len(features)} feature rows")
        d_rh, d_gh = m.config.feature_dims
        if features.rh.shape[1] != d_rh or features.gh.shape[1] != d_gh:
            raise IndexMismatchError(f"features of dims ({features.rh.shape[1]}, {features.gh.shape[1]}) do not fit "
                                     f"this index ({d_rh}, {d_gh})")
        if features.has_hs != m.config.hidden_channel:
            raise IndexMismatchError(f"features {'with' if features.has_hs else 'without'} the HS channel do not fit "
                                     f"this index (hidden_channel={m.config.hidden_channel})")
        if any(s.id is None for s in samples):
            raise InputDataError("every sample needs an id to be stored (see ingest.coerce_pool)")
        table, label_values, meta_values = samples_table(samples, m.n_samples, n_tokens, truncated)
        return {"samples": table, "features": features_table(features, m.n_samples, n_counted, mean_support, loss),
                "columns": merge_columns(self._columns, label_values, meta_values), "n": n}

    def _insert_prepared(self, batch: dict[str, Any]) -> None:
        con = self._con
        assert con is not None
        con.register("rise_batch_samples", batch["samples"])
        con.register("rise_batch_features", batch["features"])
        try:
            con.execute("INSERT INTO rise_samples SELECT row, id, text, prompt, completion, label, meta, content_sha1, "
                        "n_tokens, truncated, added_at FROM rise_batch_samples")
            names = ", ".join(("row", *self._feature_columns(), "n_counted", "mean_support", "loss"))
            con.execute(f"INSERT INTO rise_features ({names}) SELECT {names} FROM rise_batch_features")
        finally:
            # after an error (Ctrl-C interrupting an INSERT) the transaction is aborted and unregistering fails too:
            # the error that aborted it is the one to raise (the caller's transaction rolls back)
            with contextlib.suppress(duckdb.Error):
                con.unregister("rise_batch_samples")
                con.unregister("rise_batch_features")
        if batch["columns"] is not None:
            con.execute("DELETE FROM rise_columns")
            con.executemany("INSERT INTO rise_columns VALUES (?, ?, ?, ?, ?)",
                            [(c.name, c.source, c.key, c.sql_type, c.position) for c in batch["columns"]])
            con.execute(view_sql(batch["columns"]))
        self._set_manifest(updated_at=utc_now())

    def _after_insert(self, batch: dict[str, Any]) -> None:
        assert self.manifest is not None
        with self._lock:
            self.manifest.n_samples += batch["n"]
            if batch["columns"] is not None:
                self._columns = batch["columns"]
            self._masks.clear()

    def record_build(self, built_by: str, source: str) -> None:
        """Note a build or append in the manifest's provenance: who (the first one becomes the owner), from which pool
        and when. The list keeps the last MAX_PROVENANCE_BUILDS entries."""
        provenance = dict(self._state().provenance)
        builds = [*provenance.get("builds", []), {"by": built_by, "source": source, "at": utc_now()}]
        provenance["builds"] = builds[-MAX_PROVENANCE_BUILDS:]
        provenance.setdefault("owner", built_by)
        with self._transaction("write to"):
            self._set_manifest(provenance=provenance)
        assert self._manifest is not None
        self._manifest.provenance = provenance

    def relocate_model(self, lm: LoadedModel, model_id: str | None = None, adapter_path: str | None = None) -> None:
        """Record that the index's model now loads as `model_id` (default `lm.model_id`), with `lm`'s description
        (its adapter's path as `adapter_path`, default where `lm` loaded it): for a copy of an index on another
        machine, where the same weights (an adapter) lie at another path. Refused (IndexMismatchError) unless `lm` has
        the weights and tokenizer the index was built with."""
        self.check_model(lm)
        info = {k: v for k, v in lm.describe().items() if k not in ("model_id", "fingerprint")}
        if adapter_path is not None and "adapter" in info:
            info["adapter"] = {**info["adapter"], "path": adapter_path}
        new_id = lm.model_id if model_id is None else model_id
        with self._transaction("write to"):
            self._set_manifest(model_id=new_id, model_info=info, updated_at=utc_now())
        assert self._manifest is not None
        self._manifest.model_id, self._manifest.model_info = new_id, info

    def start_build(self, pool: str, source: str) -> None:
        """Mark the index as building `pool` (a key naming the pool, `build.pool_key`; `source` names it to people)
        until `finish_build(pool)`: a build of another pool that finishes meanwhile leaves the index unfinished."""
        m = self.manifest
        if m.status == "building" and any(b.get("pool") == pool for b in m.unfinished):
            return
        unfinished = [b for b in m.unfinished if b.get("pool") != pool] + [{"pool": pool, "source": source}]
        with self._transaction("write to"):
            self._set_manifest(status="building", unfinished=unfinished, updated_at=utc_now())
        self._manifest.status, self._manifest.unfinished = "building", unfinished  # type: ignore[union-attr]

    def finish_build(self, pool: str) -> list[str]:
        """The build of `pool` finished: the index is complete unless another pool's build is still unfinished;
        returns the names of those."""
        m = self.manifest
        unfinished = [b for b in m.unfinished if b.get("pool") != pool]
        status = "building" if unfinished else "complete"
        if status != m.status or unfinished != m.unfinished:
            with self._transaction("write to"):
                self._set_manifest(status=status, unfinished=unfinished, updated_at=utc_now())
            self._manifest.status, self._manifest.unfinished = status, unfinished  # type: ignore[union-attr]
        return self.manifest.unfinished_sources

    def set_status(self, status: str) -> None:
        if status not in BUILD_STATUSES:
            raise IndexStoreError(f"unknown index status {status!r}; valid statuses: {', '.join(BUILD_STATUSES)}")
        with self._transaction("write to"):
            self._set_manifest(status=status, updated_at=utc_now())
        assert self._manifest is not None
        self._manifest.status = status

    def set_base_losses(self, rows: Sequence[int], losses: Sequence[float]) -> None:
        """Store these rows' mean losses under the base model of the index model's adapter (nats per token; nan: no
        counted token), in one transaction; what the fine-tune learned is read from them (`learned_losses`)."""
        rows = [int(r) for r in rows]
        values = np.asarray(losses, dtype=np.float32)
        if len(rows) != len(values):
            raise InputDataError(f"{len(rows)} rows but {len(values)} base-model losses")
        if rows and not 0 <= min(rows) <= max(rows) < len(self):
            raise InputDataError(f"rows {min(rows)}..{max(rows)} are not all rows of this index ({len(self):,})")
        frame = pd.DataFrame({"row": np.asarray(rows, dtype=np.int64), "loss": values})
        with self._transaction("write to") as con:
            con.execute(BASE_LOSSES_SCHEMA)
            con.register("rise_batch_base_losses", frame)
            try:
                con.execute(f"INSERT OR REPLACE INTO {BASE_LOSSES_TABLE} SELECT row, "
                            "CASE WHEN isnan(loss) THEN NULL ELSE loss END FROM rise_batch_base_losses")
            finally:
                con.unregister("rise_batch_base_losses")
            now = utc_now()
            self._set_manifest(updated_at=now)
        assert self._manifest is not None
        with self._lock:
            self._manifest.updated_at = now
            self._base_losses = (None, None)  # `learned_losses` reads them again

    def set_hidden_mean(self, mean: torch.Tensor) -> None:
        """Store the centring mean (once, before the first samples)."""
        if self._state().has_hidden_mean:
            raise IndexStoreError(f"{self.path} already has a centring mean; it is fixed at the first build")
        with self._transaction("write to"):
            self._put_array("hidden_mean", mean.detach().cpu().double())
            self._set_manifest(has_hidden_mean=True, updated_at=utc_now())
        self._load_state()


def list_indexes(directory: str | Path) -> list[dict[str, Any]]:
    """The RISE indexes (*.duckdb) in a directory: path, model_id, n_samples, dims, size_bytes, status, times; an
    unreadable file is listed with an `error`."""
    directory = Path(directory)
    if not directory.is_dir():
        raise IndexStoreError(f"{directory} is not a directory")
    out = []
    for path in sorted(directory.glob("*.duckdb")):
        try:
            with RiseIndex.open(path) as index:
                m = index.manifest
                out.append({"path": str(path), "model_id": m.model_id, "n_samples": m.n_samples,
                            "dims": list(m.dims), "size_bytes": index.size_bytes(), "status": m.status,
                            "created_at": m.created_at, "updated_at": m.updated_at})
        except RiseError as exc:
            out.append({"path": str(path), "error": str(exc)})
    return out
