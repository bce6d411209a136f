"""The ANN index's files beside an index and its JSON sidecar: what the faiss file covers, how it was built, and
whether it is usable for the index as it is now (no faiss needed)."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, IndexMismatchError, IndexStoreError, RiseError

if TYPE_CHECKING:
    from ..store import RiseIndex

ANN_FORMAT = "rise-ann"
ANN_FORMAT_VERSION = 1
FAISS_SUFFIX = ".ann.faiss"
META_SUFFIX = ".ann.json"
INSTALL_HINT = "pip install faiss-cpu (or pip install 'rise-core[ann]')"


def import_faiss() -> Any:
    """The faiss module, imported on first use (an optional dependency); ConfigError naming the install otherwise."""
    loader = logging.getLogger("faiss.loader")  # its INFO lines about instruction sets are noise under `rise -v`
    level = loader.level
    loader.setLevel(max(level, logging.WARNING))
    try:
        import faiss
    except ImportError as exc:
        raise ConfigError(f"the ANN index needs faiss, which is not installed: {INSTALL_HINT}") from exc
    finally:
        loader.setLevel(level)
    return faiss


def ann_paths(index_path: str | Path) -> tuple[Path, Path]:
    """(faiss file, JSON sidecar) of the ANN index beside an index file."""
    p = str(index_path)
    return Path(p + FAISS_SUFFIX), Path(p + META_SUFFIX)


# -- the sidecar ------------------------------------------------------------------------------------------------


@dataclass
class AnnMeta:
    """The JSON sidecar: what the ANN file covers and how it was built."""

    index_uuid: str
    config_fingerprint: str
    n_rows: int  # rows 0..n_rows-1 of the index are in the ANN file
    dims: dict[str, int]  # channel -> length, in concatenation order (rh, gh[, hs])
    nlist: int
    nprobe: int  # default cells scanned per query
    train_rows: int
    seed: int
    faiss_bytes: int = 0  # size of the faiss file written with this sidecar
    structure: str = ""
    metric: str = "inner_product"
    faiss_version: str = ""
    library_version: str = ""
    built_at: str = ""
    build_seconds: float = 0.0
    format: str = ANN_FORMAT
    format_version: int = ANN_FORMAT_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def d(self) -> int:
        return int(sum(self.dims.values()))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> AnnMeta:
        raw = json.loads(text)
        if not isinstance(raw, dict) or raw.get("format") != ANN_FORMAT:
            raise ValueError(f"not a {ANN_FORMAT} sidecar")
        if not isinstance(raw.get("format_version"), int) or raw["format_version"] > ANN_FORMAT_VERSION:
            raise ValueError(f"ANN format {raw.get('format_version')!r} is newer than this library reads")
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in raw.items() if k in names})


@dataclass
class AnnStatus:
    """Whether an index has a usable ANN index: state 'absent', 'valid' or 'invalid' (with the reason)."""

    state: str
    reason: str
    meta: AnnMeta | None = None
    n_index_rows: int = 0
    error: type[RiseError] = IndexStoreError  # what search='ann' raises for this state

    @property
    def valid(self) -> bool:
        return self.state == "valid"

    @property
    def n_tail(self) -> int:
        """Rows appended since the ANN build (scored exactly until `rise index-ann --update`)."""
        return max(0, self.n_index_rows - self.meta.n_rows) if self.meta else 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: state, reason, rows in the index, rows the ANN covers, rows appended since, and the sidecar."""
        return {"state": self.state, "reason": self.reason, "n_index_rows": self.n_index_rows,
                "n_covered": self.meta.n_rows if self.meta else 0, "n_tail": self.n_tail,
                "meta": None if self.meta is None else asdict(self.meta)}


def index_dims(index: RiseIndex) -> dict[str, int]:
    """{channel: length} of the features an index stores, in concatenation order."""
    d_rh, d_gh = index.config.feature_dims
    dims = {"rh": d_rh, "gh": d_gh}
    if index.config.hidden_channel:
        mean = index.hidden_mean
        dims["hs"] = int(mean.numel()) if mean is not None else int(index.manifest.model_info.get("hidden_size", 0))
    return dims


def ann_status(index: RiseIndex) -> AnnStatus:
    """Check the sidecar against the index (no faiss needed): identity, config, rows, dims, faiss file size."""
    m = index.manifest
    faiss_path, meta_path = ann_paths(index.path)
    rebuild = f"rebuild it with `rise index-ann --index {index.path}`"
    if not meta_path.exists():
        return AnnStatus("absent", f"no ANN index (`rise index-ann --index {index.path}` builds one)",
                         n_index_rows=m.n_samples)
    try:
        meta = AnnMeta.from_json(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError) as exc:
        return AnnStatus("invalid", f"{meta_path} is unreadable ({exc}); {rebuild}", n_index_rows=m.n_samples)
    status = AnnStatus("invalid", "", meta, m.n_samples, IndexMismatchError)
    if meta.index_uuid != m.index_uuid:
        status.reason = (f"{meta_path} was built for another index (index_uuid {meta.index_uuid}; this index is "
                         f"{m.index_uuid}): it does not describe these rows; {rebuild}")
    elif meta.config_fingerprint != index.config.fingerprint():
        status.reason = (f"{meta_path} was built for another config (fingerprint {meta.config_fingerprint}, the "
                         f"index has {index.config.fingerprint()}); {rebuild}")
    elif meta.dims != index_dims(index):
        status.reason = f"{meta_path} has dims {meta.dims}, the index {index_dims(index)}; {rebuild}"
    elif meta.n_rows > m.n_samples:
        status.reason = (f"{meta_path} covers {meta.n_rows} rows but the index has {m.n_samples}: it is stale; "
                         f"{rebuild}")
    else:
        status.error = IndexStoreError
        size = faiss_path.stat().st_size if faiss_path.exists() else None
        if size is None:
            status.reason = f"{faiss_path} is missing (its sidecar {meta_path.name} is there); {rebuild}"
        elif size != meta.faiss_bytes:
            status.reason = (f"{faiss_path} ({size} bytes) does not match its sidecar ({meta.faiss_bytes} bytes): an "
                             f"interrupted build or a file from another build; {rebuild}")
        else:
            status.state = "valid"
            tail = m.n_samples - meta.n_rows
            status.reason = (f"ANN index over {meta.n_rows:,} rows ({meta.structure}, nprobe {meta.nprobe})" +
                             (f"; {tail:,} rows appended since are scored exactly (`rise index-ann --index "
                              f"{index.path} --update` adds them)" if tail else ""))
    return status
