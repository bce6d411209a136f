"""What an index handle reads: the manifest's fields, identity checks against a model and a config, samples (all,
filtered, by id or row), filter masks, the feature matrix (loaded once, extended after appends) and the stats."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import torch

from ..adaptive import pool_loss
from ..config import RiseConfig
from ..engine import RiseExtractor
from ..errors import IndexMismatchError, IndexStoreError, InputDataError
from ..learned import LearnedLosses
from ..models import LoadedModel, hs_layer_index
from ..samples import Sample
from ..scoring import FeatureMatrix
from ..sketch import SketchSet
from .connection import IndexConnection
from .filters import FILTER_ERRORS, check_filter, run_filter
from .rows import CONVERSATION_KEY, sample_from_row
from .schema import BASE_LOSSES_TABLE, IndexManifest, blob_matrix, select_sql


class IndexReader(IndexConnection):
    """The reads of a RISE index (`RiseIndex` adds the writes): each through a cursor of the handle's connection."""

    @property
    def manifest(self) -> IndexManifest:
        """What the index was built with (model, config, sketch digest, counts, status, times), read on first use."""
        return self._state()

    @property
    def config(self) -> RiseConfig:
        return self._state().config

    @property
    def hidden_mean(self) -> torch.Tensor | None:
        """The centring mean fixed at the first build (None when the config does not centre)."""
        self._state()
        return self._hidden_mean

    @property
    def stores_final_hidden(self) -> bool:
        """Whether the HS channel is the centred mean *final* hidden state, from which hidden cosine is rebuilt
        without a forward pass (`compare.StoredHidden`): hs_depth 1, or a depth that names the model's last layer
        (its layer count recorded at the build; an index that records none read the final state only at 1)."""
        config = self.config
        n_layers = self.manifest.model_info.get("n_layers")
        return config.hidden_channel and (config.hs_depth == 1.0 or (
            bool(n_layers) and hs_layer_index(config.hs_depth, int(n_layers)) == int(n_layers)))

    @property
    def sketches(self) -> SketchSet:
        """The CountSketch operators the index was built with."""
        self._state()
        assert self._sketches is not None
        return self._sketches

    def identity(self) -> dict[str, Any]:
        """What makes results computed from this index valid: its file, model, config, sketches and size (cache keys
        of diagnostics and of the explorer)."""
        m = self._state()
        return {"path": str(self.path.resolve()), "model_fingerprint": m.model_fingerprint,
                "config": m.config.fingerprint(), "sketch_digest": m.sketch_digest, "n_samples": m.n_samples,
                "updated_at": m.updated_at, "index_uuid": m.index_uuid}

    @property
    def status(self) -> str:
        return self._state().status

    def __len__(self) -> int:
        return self._state().n_samples

    @property
    def columns(self) -> dict[str, str]:
        """Label and metadata columns of the `samples` view with their SQL types."""
        self._state()
        return {c.name: c.sql_type for c in sorted(self._columns, key=lambda c: c.position)}

    def size_bytes(self) -> int:
        """Bytes on disk (the file and its write-ahead log)."""
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}.wal")) if p.exists())

    # -- identity checks -------------------------------------------------------------------------------------------

    def check_model(self, lm: LoadedModel) -> None:
        """Raise IndexMismatchError unless `lm` has the weights and tokenizer the index was built with: its
        fingerprint, and its chat template where the index recorded one (indexes built since it is recorded)."""
        m = self._state()
        fingerprint = lm.fingerprint()
        if fingerprint == m.model_fingerprint:
            if "chat_template" not in m.model_info:  # built before the template was recorded
                return
            built, ours = m.model_info["chat_template"], lm.describe().get("chat_template")
            if built == ours:
                return

            def name(digest: str | None) -> str:
                return f"chat template {digest}" if digest else "no chat template"
            raise IndexMismatchError(
                f"{self.path} was built with model {m.model_id!r} whose tokenizer has {name(built)}; the given model "
                f"{lm.model_id!r} has the same weights and {name(ours)}, so prompts, completions and conversations "
                "would become other tokens than the index's. Use the index's tokenizer, or build a new index for "
                "this one.")
        detail = []
        built = m.model_info
        for key, ours in (("vocab_size", lm.vocab_size), ("hidden_size", lm.hidden_size),
                          ("dtype", str(lm.dtype).replace("torch.", ""))):
            if key in built and built[key] != ours:
                detail.append(f"{key}: index {built[key]}, model {ours}")
        ours_adapter, built_adapter = (lm.adapter or {}).get("path"), (built.get("adapter") or {}).get("path")
        if ours_adapter != built_adapter or (lm.adapter or {}).get("digest") != (built.get("adapter") or {}).get("digest"):
            def name(a: dict | None) -> str:
                return f"{a['path']} (digest {a['digest']})" if a else "none"
            detail.append(f"adapter: index {name(built.get('adapter'))}, model {name(lm.adapter)}")
        hint = (f"; load it with --dtype {built['dtype']}" if "dtype" in built and
                built["dtype"] != str(lm.dtype).replace("torch.", "") else "")
        raise IndexMismatchError(
            f"{self.path} was built with model {m.model_id!r} (fingerprint {m.model_fingerprint}); the given model "
            f"{lm.model_id!r} has fingerprint {fingerprint}" + (f" ({'; '.join(detail)})" if detail else "")
            + f"{hint}. Use the index's model, or build a new index for this one.")

    def check_config(self, config: RiseConfig) -> None:
        """Raise IndexMismatchError, listing the differing fields, unless `config` is the index's config."""
        diff = self.config.differences(config)
        if diff:
            fields = "; ".join(f"{k}: index {getattr(self.config, k)!r}, requested {getattr(config, k)!r}" for k in diff)
            raise IndexMismatchError(f"{self.path} was built with another RISE config ({fields}). Drop those options "
                                     "to use the index's config, or build a new index (another --index path).")

    def extractor(self, lm: LoadedModel) -> RiseExtractor:
        """A feature extractor with this index's sketches and centring mean; refuses a different model."""
        self.check_model(lm)
        return RiseExtractor(lm, self.config, sketches=self._sketches, hidden_mean=self._hidden_mean)

    # -- reading ---------------------------------------------------------------------------------------------------

    def filter_columns(self) -> list[str]:
        """The columns a filter (`where`) may name: the `samples` view's, in order."""
        return ["row", "id", "text", "prompt", "completion", "label",
                *[c for c in self.columns if c != "label"], "n_counted", "loss", "mean_support", "n_tokens",
                "truncated"]

    def _check_where(self, where: str, select: str = "row") -> str:
        """`SELECT <select> FROM samples WHERE (<where>)`, refused unless `where` is a plain condition over the
        pool's columns (see `store.filters`)."""
        return check_filter(where, self.filter_columns(), select)

    def _where_error(self, where: str, exc: duckdb.Error) -> InputDataError:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return InputDataError(f"filter {where!r} failed: {message}. Columns: {', '.join(self.filter_columns())}")

    def column(self, name: str) -> pd.Series:
        """One column of the `samples` view (`filter_columns`: id, a text field, the label, metadata or stats) for every
        row, in row order and indexed by row: what a page needs of a large pool without reading every text."""
        if name not in self.filter_columns() or name == "row":
            raise InputDataError(f"no column {name!r} in {self.path}; columns: {', '.join(self.filter_columns()[1:])}")
        quoted = '"' + name.replace('"', '""') + '"'
        with self._cursor("read a column from") as cur:
            df = cur.execute(f"SELECT row, {quoted} FROM samples ORDER BY row").df()
        return df.set_index("row")[name]

    def samples(self, where: str | None = None) -> pd.DataFrame:
        """Samples with their label, metadata and stats columns, indexed by feature row (`feature_matrix()` order).

        `where` is a condition over these columns, e.g. "topic = 'cooking' AND n_counted > 10"; anything but a plain
        condition (subqueries, table functions, files, settings) is refused (`store.filters`)."""
        if not where:
            with self._cursor("read samples from") as cur:
                return cur.execute("SELECT * FROM samples ORDER BY row").df().set_index("row")
        sql = self._check_where(where, select="*")
        with self._cursor("read samples from") as cur:
            try:
                df = run_filter(cur, sql + " ORDER BY row", where, self._limits, lambda result: result.df())
            except FILTER_ERRORS as exc:
                raise self._where_error(where, exc) from None
        return df.set_index("row")

    def rows_frame(self, rows: Sequence[int]) -> pd.DataFrame:
        """The `samples` columns of the given feature rows, in the given order (indexed by row)."""
        rows = [int(r) for r in rows]
        if not rows:
            return self.samples(where="FALSE")
        self._state()
        # the view's query with the row filter on both tables (DuckDB does not push it through the view's join)
        sql = (select_sql(self._columns) + " WHERE s.row IN (SELECT unnest($1::BIGINT[])) "
               "AND f.row IN (SELECT unnest($1::BIGINT[]))")
        with self._cursor("read samples from") as cur:
            df = cur.execute(sql, [rows]).df()
        return df.set_index("row").loc[rows]

    def row_mask(self, where: str) -> torch.Tensor:
        """Boolean (N,) mask of the rows matching an SQL condition (cached until the index changes)."""
        m = self._state()
        key = (m.index_uuid, m.n_samples)
        with self._lock:
            hit = self._masks.get(where)
            if hit is not None and hit[0] == key:
                return hit[1]
        sql = self._check_where(where)
        with self._cursor("filter") as cur:
            try:
                rows = run_filter(cur, sql, where, self._limits, lambda result: result.fetchnumpy()["row"])
            except FILTER_ERRORS as exc:
                raise self._where_error(where, exc) from None
        rows = np.asarray(rows, dtype=np.int64)
        mask = torch.zeros(m.n_samples, dtype=torch.bool)
        mask[torch.from_numpy(rows[rows < m.n_samples])] = True  # rows a concurrent append added come next time
        with self._lock:
            if len(self._masks) > 32:
                self._masks.clear()
            self._masks[where] = (key, mask)
        return mask

    def sample_list(self, where: str | None = None, limit: int | None = None) -> list[Sample]:
        """The stored samples (those matching `where`, the first `limit`) as `Sample`s, in row order."""
        df = self.samples(where)
        return [sample_from_row(r) for r in (df if limit is None else df.head(limit)).to_dict("records")]

    def sample(self, sample_id: str) -> Sample:
        """The stored sample with this id (text fields, label, metadata)."""
        with self._cursor("read a sample from") as cur:
            row = cur.execute("SELECT text, prompt, completion, id, label, meta FROM rise_samples WHERE id = ?",
                              [str(sample_id)]).fetchone()
        if row is None:
            raise InputDataError(f"no sample with id {sample_id!r} in {self.path}")
        text, prompt, completion, sid, label, meta = row
        meta = json.loads(meta) if meta is not None else {}
        messages = meta.pop(CONVERSATION_KEY, None) if text is None and completion is None else None
        return Sample(text=text, prompt=prompt, completion=completion, id=sid,
                      label=json.loads(label) if label is not None else None, meta=meta, messages=messages)

    def row_of(self, sample_id: str) -> int:
        """Feature row of a sample id."""
        with self._cursor("read") as cur:
            row = cur.execute("SELECT row FROM rise_samples WHERE id = ?", [str(sample_id)]).fetchone()
        if row is None:
            raise InputDataError(f"no sample with id {sample_id!r} in {self.path}")
        return int(row[0])

    def id_hashes(self) -> dict[str, str]:
        """{id: content sha1} of every stored sample."""
        with self._cursor("read ids from") as cur:
            res = cur.execute("SELECT id, content_sha1 FROM rise_samples").fetchnumpy()
        return dict(zip(res["id"].tolist(), res["content_sha1"].tolist(), strict=True))

    def labels_and_meta(self) -> dict[str, tuple[Any, dict[str, Any]]]:
        """{id: (label, metadata)} of every stored sample, as stored (None: no label; {}: no metadata)."""
        with self._cursor("read labels from") as cur:
            res = cur.execute("SELECT id, label, meta FROM rise_samples").fetchall()
        return {i: (None if label is None else json.loads(label), {} if meta is None else json.loads(meta))
                for i, label, meta in res}

    def feature_matrix(self) -> FeatureMatrix:
        """Per-sample unit features (float16) and norms, rows in `samples()` order; loaded once, extended after an
        append."""
        m = self._state()
        with self._lock:
            have = 0 if self._fm is None else len(self._fm)
            if self._fm is not None and have == m.n_samples:
                return self._fm
            part = self.load_features(have, m.n_samples)
            self._fm = part if self._fm is None else FeatureMatrix.concat([self._fm, part])
            self._fm_uuid = m.index_uuid
            return self._fm

    @property
    def features_loaded(self) -> bool:
        """Whether the feature matrix is loaded (`feature_matrix` has run): reading it again costs nothing."""
        with self._lock:
            return self._fm is not None

    def row_features(self, row: int) -> FeatureMatrix:
        """One row's features: from the loaded feature matrix when it is loaded, else read from the file alone (an
        explanation on an ANN-ranked pool does not load every row's features for one)."""
        with self._lock:
            fm = self._fm
        if fm is not None and 0 <= row < len(fm):
            return fm.select([row])
        if not 0 <= row < len(self):
            raise InputDataError(f"row {row} is not one of the {len(self):,} rows of {self.path}")
        return self.load_features(row, row + 1)

    def reference_loss(self) -> float:
        """The pool's median per-sample mean loss (nats per token; samples with no counted token skipped): what the
        per-query channel rule (`rise_core.adaptive`) measures a query's surprise against. nan for an empty pool.

        `adaptive.pool_loss` of the stored float32 losses (`row_losses`), as for in-memory features, so both paths
        give the same number to the bit (DuckDB's own median of the FLOAT column rounded the middle two's mean to
        float32)."""
        self.row_losses()
        return self._row_losses[2]

    def row_losses(self) -> np.ndarray:
        """(N,) each stored sample's mean loss, nats per token, in row order (nan: no counted token), float64 of the
        stored float32; read once per index state (the behaviour test weighs a span's rows by them,
        `behaviour.weigh_by_loss`)."""
        m = self._state()
        key = (m.index_uuid, m.n_samples)
        if self._row_losses[0] != key:
            with self._cursor("read the pool's losses from") as cur:
                res = cur.execute("SELECT row, loss FROM rise_features WHERE row < $1 AND loss IS NOT NULL",
                                  [m.n_samples]).fetchnumpy()
            losses = np.full(m.n_samples, np.nan)
            losses[np.asarray(res["row"], dtype=np.int64)] = np.asarray(res["loss"], dtype=np.float32)
            losses.flags.writeable = False
            self._row_losses = (key, losses, pool_loss(torch.tensor(losses)))
        return self._row_losses[1]

    def rows_without_base_loss(self) -> list[int]:
        """The stored rows with no loss under the base model kept for them (every row where none is kept)."""
        m = self._state()
        with self._cursor("read the base-model losses of") as cur:
            if not self._has_table(cur, BASE_LOSSES_TABLE):
                return list(range(m.n_samples))
            res = cur.execute(f"SELECT row FROM rise_features WHERE row < $1 AND row NOT IN (SELECT row FROM "
                              f"{BASE_LOSSES_TABLE}) ORDER BY row", [m.n_samples]).fetchnumpy()
        return [int(r) for r in res["row"]]

    def base_row_losses(self) -> np.ndarray | None:
        """(N,) each stored sample's mean loss under the base model of the index model's adapter, nats per token, in
        row order (nan: no counted token), float64 of the stored float32; None where some row has none kept (the
        index of a model without an adapter, or built before they were kept: `rise build` again fills them)."""
        learned = self.learned_losses()
        return None if learned is None else learned.base

    def keeps_base_losses(self) -> bool:
        """Whether a base-model loss is kept for every stored row (what `learned_losses` needs), counted in the table
        rather than read: `rise info` on a large index."""
        m = self._state()
        with self._cursor("read the base-model losses of") as cur:
            if not self._has_table(cur, BASE_LOSSES_TABLE):
                return False
            n_kept = cur.execute(f"SELECT count(*) FROM {BASE_LOSSES_TABLE} WHERE row >= 0 AND row < $1",
                                 [m.n_samples]).fetchone()[0]
        return int(n_kept) == m.n_samples

    def learned_losses(self) -> LearnedLosses | None:
        """What the index model's fine-tune learned (`learned.LearnedLosses`: each row's loss under the adapter's
        base model and under the fine-tune), None where the index keeps no base-model losses for some row; read once
        per index state, so each query's test reuses its drops."""
        m = self._state()
        key = (m.index_uuid, m.n_samples, m.updated_at)
        if self._base_losses[0] != key:
            with self._cursor("read the base-model losses of") as cur:
                res = None
                if self._has_table(cur, BASE_LOSSES_TABLE):
                    res = cur.execute(f"SELECT row, loss FROM {BASE_LOSSES_TABLE} WHERE row >= 0 AND row < $1",
                                      [m.n_samples]).fetchnumpy()
            learned = None
            if res is not None and len(res["row"]) == m.n_samples:
                losses = np.full(m.n_samples, np.nan)
                loss = res["loss"]
                values = np.where(np.ma.getmaskarray(loss), np.nan, np.ma.getdata(loss)).astype(np.float32)
                losses[np.asarray(res["row"], dtype=np.int64)] = values
                losses.flags.writeable = False
                learned = LearnedLosses(base=losses, tuned=self.row_losses())
            self._base_losses = (key, learned)
        return self._base_losses[1]

    @staticmethod
    def _has_table(cur: duckdb.DuckDBPyConnection, name: str) -> bool:
        return bool(cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = $1",
                                [name]).fetchone()[0])

    def _feature_columns(self) -> tuple[str, ...]:
        """The feature columns this index stores (HS only when built with the channel)."""
        return ("rh", "gh", "rh_norm", "gh_norm") + (("hs", "hs_norm") if self.config.hidden_channel else ())

    def load_features(self, start: int, stop: int) -> FeatureMatrix:
        """Features of rows start..stop-1, read from the file (not the cached matrix): the ANN build streams them."""
        parts = self._read_rows(start, stop, (*self._feature_columns(), "loss"))
        return FeatureMatrix(**{k: torch.from_numpy(v) for k, v in parts.items()})

    def load_hidden(self, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(hs, hs_norm) of rows start..stop-1 alone, read from the file: what hidden cosine reads of a pool it does
        not hold (a sixth of a row's bytes at the default dims). IndexMismatchError without the HS channel."""
        if not self.config.hidden_channel:
            raise IndexMismatchError(f"{self.path} has no HS channel (built with hidden_channel off)")
        parts = self._read_rows(start, stop, ("hs", "hs_norm"))
        return torch.from_numpy(parts["hs"]), torch.from_numpy(parts["hs_norm"])

    def _read_rows(self, start: int, stop: int, names: Sequence[str]) -> dict[str, np.ndarray]:
        """These feature columns (blobs as (n, dim) float16, norms as float32, loss as float32 with NULL as nan) of
        rows start..stop-1, in row order; IndexStoreError for missing, unnumbered or norm-less rows."""
        d_rh, d_gh = self.config.feature_dims
        n = stop - start
        with self._cursor("load features from") as cur:
            table = cur.sql(f"SELECT row, {', '.join(names)} FROM rise_features WHERE row >= $1 AND row < $2",
                            params=[start, stop]).to_arrow_table()
        rows = table.column("row").to_numpy()
        if len(rows) != n:
            raise IndexStoreError(f"{self.path} is corrupted: {len(rows)} feature rows where {n} were expected")
        dims = {"rh": d_rh, "gh": d_gh, "hs": int(self._hidden_mean.numel()) if self._hidden_mean is not None else 0}
        parts = {}
        for name in names:
            if name == "loss":  # each sample's mean loss, for the per-query channel rule; NULL reads as nan
                parts[name] = table.column(name).to_numpy(zero_copy_only=False).astype(np.float32)
            elif name.endswith("_norm"):
                if table.column(name).null_count:
                    raise IndexStoreError(f"{self.path} is corrupted: rows without their {name}")
                parts[name] = table.column(name).to_numpy().astype(np.float32)
            else:
                parts[name] = blob_matrix(table.column(name), n, dims[name], self.path)
        del table
        expected = np.arange(start, stop)
        if not np.array_equal(rows, expected):
            order = np.argsort(rows, kind="stable")
            if not np.array_equal(rows[order], expected):
                raise IndexStoreError(f"{self.path} is corrupted: feature rows are not numbered {start}..{stop - 1}")
            parts = {k: v[order] for k, v in parts.items()}
        return parts

    def info(self) -> dict[str, Any]:
        """Manifest, counts and size on disk, for `rise info` and the app."""
        m = self._state()
        with self._cursor("read") as cur:
            n_labelled = cur.execute("SELECT count(*) FROM rise_samples WHERE label IS NOT NULL").fetchone()[0]
            n_truncated = cur.execute("SELECT count(*) FROM rise_samples WHERE truncated").fetchone()[0]
            tokens = cur.execute("SELECT coalesce(sum(n_tokens), 0), coalesce(sum(n_counted), 0) FROM samples"
                                 ).fetchone()
        return {
            "path": str(self.path), "status": m.status,
            "unfinished": m.unfinished_sources, "n_samples": m.n_samples,
            "n_labelled": int(n_labelled),
            "n_truncated": int(n_truncated), "n_tokens": int(tokens[0]), "n_counted_tokens": int(tokens[1]),
            "model_id": m.model_id, "model_fingerprint": m.model_fingerprint, "model_info": m.model_info,
            "config": m.config.to_dict(), "dims": list(m.dims), "feature_dims": list(m.config.feature_dims),
            "feature_bytes_per_sample": m.config.bytes_per_sample(int(m.model_info.get("hidden_size") or 0)),
            "columns": self.columns,
            "has_hidden_mean": m.has_hidden_mean, "sketch_digest": m.sketch_digest, "seeds": m.seeds,
            "library_version": m.library_version, "format_version": m.format_version, "index_uuid": m.index_uuid,
            "created_at": m.created_at, "updated_at": m.updated_at, "size_bytes": self.size_bytes(),
            "build_preset": m.build_preset, "owner": m.owner, "sources": m.sources,
            "base_model_losses": self.keeps_base_losses(),
        }
