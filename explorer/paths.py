"""Paths typed into the web app, confined to the folders the app is meant to use.

The app may serve a team on a shared machine, so a text box must not name arbitrary files on the server: an adapter
is written only under the adapter folder, and a model is the embedded default, a hub id, or a directory under the
app's own folders (indexes, adapters, bundled data, the model cache) or the ones an operator lists in
`RISE_MODEL_DIRS`. Anything else is refused with a message that says where things may go.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rise_core.adapters import ADAPTER_SEPARATOR
from rise_core.default_model import DEFAULT_MODEL_ID
from rise_core.errors import InputDataError

from .build_plan import slug

# an organisation/name (or plain name) a model hub understands; never a path on this machine
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def adapter_root(index_dir: Path) -> Path:
    """Where the app writes fine-tuned adapters: `RISE_ADAPTER_DIR`, else `adapters/` beside the index folder."""
    configured = os.environ.get("RISE_ADAPTER_DIR")
    return Path(configured).expanduser() if configured else index_dir.parent / "adapters"


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def adapter_dir(typed: str, index_dir: Path) -> Path:
    """The directory an adapter named `typed` is written to: always a folder directly under `adapter_root`.

    A plain name is made file-safe; a path is accepted only when it already lies under the adapter folder."""
    root = adapter_root(index_dir)
    text = typed.strip()
    if not text:
        raise InputDataError(f"give the adapter a name; it is saved under {root}")
    candidate = Path(text).expanduser()
    target = None
    if len(candidate.parts) == 1 and text not in (".", ".."):
        target = root / slug(text)
    elif candidate.is_absolute() and _inside(candidate, root) and candidate.resolve() != root.resolve():
        target = root / slug(candidate.resolve().relative_to(root.resolve()).parts[0])
    if target is None or not _inside(target, root):  # a name whose folder is a link out of the root is refused too
        raise InputDataError(f"the adapter directory {text!r} is outside {root}: the app saves adapters only there. "
                             "Give a name (e.g. 'howdy-lora'); set RISE_ADAPTER_DIR to move the folder")
    return target


def model_roots(index_dir: Path, data_dir: Path) -> list[Path]:
    """The folders a model typed into the app may come from."""
    cache = Path(os.environ.get("RISE_CACHE_DIR") or Path.home() / ".cache" / "rise")
    extra = [Path(p).expanduser() for p in os.environ.get("RISE_MODEL_DIRS", "").split(os.pathsep) if p.strip()]
    return [index_dir, adapter_root(index_dir), data_dir, cache, *extra]


def check_model_spec(spec: str, configured: str, index_dir: Path, data_dir: Path) -> str:
    """`spec` (a model typed into the app) unchanged when it may be loaded here, else an InputDataError.

    Allowed: the embedded default, the model the app was started with (`configured`, RISE_MODEL), a hub id that is
    not a local path, or `BASE@ADAPTER` / a directory under `model_roots`."""
    spec = spec.strip()
    if spec in (DEFAULT_MODEL_ID, configured):
        return spec
    roots = model_roots(index_dir, data_dir)
    parts = spec.rsplit(ADAPTER_SEPARATOR, 1) if ADAPTER_SEPARATOR in spec else [spec]
    for part in parts:
        if part in (DEFAULT_MODEL_ID, configured, ""):
            continue
        local = Path(part).expanduser()
        looks_local = local.is_absolute() or part.startswith((".", "~")) or local.exists()
        if looks_local:
            if not any(_inside(local, root) for root in roots):
                raise InputDataError(
                    f"the model path {part!r} is outside the folders this app loads models from "
                    f"({', '.join(str(r) for r in roots)}); give a hub id, or ask whoever runs the app to add the "
                    "folder to RISE_MODEL_DIRS")
        elif not HUB_ID.match(part):
            raise InputDataError(f"{part!r} is neither a hub id (organisation/name) nor a folder this app may load "
                                 "a model from")
    return spec
