"""Paths typed into the web app, confined to the folders the app is meant to use.

The app may serve a team on a shared machine, so a text box must not name arbitrary files on the server: an adapter
is written only under the adapter folder, and a model is the embedded default, a hub id, or a directory under the
app's own folders (indexes, adapters, bundled data, the model cache) or the ones an operator lists in
`RISE_MODEL_DIRS`. Anything else is refused with a message that says where things may go. A model spec is read by
`rise_core.adapters.parse_model_spec`, the loader's own reading, so what is checked is what loads.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rise_core.adapters import ModelSpec, parse_model_spec
from rise_core.default_model import DEFAULT_MODEL_ID
from rise_core.errors import InputDataError, ModelLoadError

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
    except (ValueError, OSError):  # outside, or a name the file system cannot take
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _local(part: str) -> Path:
    """`part` as a path with `~` expanded; InputDataError for `~user` naming no user here."""
    try:
        return Path(part).expanduser()
    except RuntimeError:
        raise InputDataError(f"{part!r} names the home folder of a user this machine does not have") from None


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
    """`spec` (a model typed into the app, stripped) when it may be loaded here, else an InputDataError.

    The spec is read as the loader reads it (`parse_model_spec`) and each part it loads is checked: the base must be
    the embedded default, the model the app was started with (`configured`, RISE_MODEL), a hub id that is not a
    local path, or a directory under `model_roots`; an adapter must be a directory under `model_roots` (or the
    configured model). An adapter directory named alone loads the base its manifest names, which is checked too."""
    parsed = _parsed(spec)  # as typed, for every spec: control characters are refused, not stripped
    text = spec.strip()
    if text not in (DEFAULT_MODEL_ID, configured):
        _check_parts(parsed, configured, index_dir, data_dir)
    return text


def checked_model_spec(spec: str, configured: str, index_dir: Path, data_dir: Path) -> ModelSpec:
    """The parts `spec` loads (`parse_model_spec`), each checked as `check_model_spec` says; InputDataError if not."""
    return _check_parts(_parsed(spec), configured, index_dir, data_dir)


def _parsed(spec: str) -> ModelSpec:
    try:
        return parse_model_spec(spec)
    except ModelLoadError as exc:
        raise InputDataError(str(exc)) from None


def _check_parts(parsed: ModelSpec, configured: str, index_dir: Path, data_dir: Path) -> ModelSpec:
    roots = model_roots(index_dir, data_dir)

    def refuse(part: str, what: str) -> InputDataError:
        return InputDataError(
            f"the {what} {part!r} is outside the folders this app loads models from "
            f"({', '.join(str(r) for r in roots)}); give a hub id or a folder under them, or ask whoever runs the "
            "app to add the folder to RISE_MODEL_DIRS")

    base_what = "base model named in the adapter's manifest" if parsed.base_from_manifest else "model path"
    if parsed.base not in (DEFAULT_MODEL_ID, configured):
        local = _local(parsed.base)
        if local.is_absolute() or parsed.base.startswith((".", "~")) or _exists(local):
            if not any(_inside(local, root) for root in roots):
                raise refuse(parsed.base, base_what)
        elif not HUB_ID.match(parsed.base):
            raise InputDataError(f"{parsed.base!r} is neither a hub id (organisation/name) nor a folder this app may "
                                 "load a model from")
    if parsed.adapter is not None and parsed.adapter != configured:
        if not any(_inside(_local(parsed.adapter), root) for root in roots):
            raise refuse(parsed.adapter, "adapter directory")
    return parsed
