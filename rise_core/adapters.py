"""LoRA adapters wherever a model is named: model specs, the `rise_adapter.json` manifest, merging into the weights.

An adapter directory is a standard `peft` adapter (`adapter_config.json`, `adapter_model.safetensors`) plus, when
`rise finetune` made it, the manifest: base model id and fingerprint, pool hash, recipe, losses. A model is named
`BASE`, `ADAPTER_DIR` (the base read from the manifest) or `BASE@ADAPTER_DIR`, and `load_model` accepts each.
`parse_model_spec` is the one reading of such a name: the loader and the web app's path check both use it, so the
parts the app checks are the parts that load.

This module sits above `models` in the layers: `models.load_model` knows no adapter, so this module registers its
spec parser and merger with it on import (the package's `__init__` imports it, so every `rise_core` user has them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import unicodedata
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ModelLoadError
from .models import MODEL_LOAD_LOCK, LoadedModel, register_adapter_support, verify_readout

ADAPTER_SEPARATOR = "@"
MANIFEST_NAME = "rise_adapter.json"
MANIFEST_FORMAT = 1
MAX_MODEL_SPEC_CHARS = 256  # per part (base, adapter): longer than any model path or hub id in practice
# control, format (bidi overrides, zero-width), line/paragraph separator and surrogate characters: never in a model name
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def require_peft() -> Any:
    """The `peft` module, or a ModelLoadError naming the install command."""
    try:
        import peft
    except ImportError as exc:  # pragma: no cover - peft is a declared dependency
        raise ModelLoadError("fine-tuning and adapters need `peft`: pip install peft") from exc
    return peft


PEFT_WARNING = "`is_gradient_checkpointing` is deprecated"  # the start of the FutureWarning `peft_wrapping` drops


def drop_peft_warning() -> None:
    """Put the filter that drops peft's FutureWarning (`peft_wrapping`) first in the process's warning filters, where
    it is not already first. It stays: a `catch_warnings` block would save and restore the one global filter list, so
    another thread leaving a block of its own (a library's, e.g. torch's, or a second wrap) could take the filter
    away mid-wrap."""
    first = warnings.filters[0] if warnings.filters else None
    if not (first and first[0] == "ignore" and first[2] is FutureWarning and first[1] is not None
            and first[1].pattern == PEFT_WARNING):
        warnings.filterwarnings("ignore", message=PEFT_WARNING, category=FutureWarning)


drop_peft_warning()  # at import, before any thread: every later `catch_warnings` saves and restores it


@contextlib.contextmanager
def peft_wrapping() -> Iterator[None]:
    """Around building a peft `PeftModel` (get_peft_model, PeftModel.from_pretrained): its constructor reads
    transformers' deprecated `is_gradient_checkpointing` whichever public entry point is used, so nothing on our side
    avoids that FutureWarning; it alone is dropped (`drop_peft_warning`, again here in case a caller's filters put
    another first, e.g. FutureWarning as an error) instead of shown on every fine-tune and adapter load."""
    drop_peft_warning()
    yield


def is_adapter_dir(path: str | Path | None) -> bool:
    """Whether `path` is a directory holding `adapter_config.json` (False for a name the file system cannot take)."""
    try:
        return bool(path) and (Path(str(path)).expanduser() / "adapter_config.json").is_file()
    except (OSError, ValueError, RuntimeError):  # too long for the file system, not encodable, `~user` of no user
        return False


def read_manifest(adapter_dir: str | Path) -> dict[str, Any]:
    """The `rise_adapter.json` of an adapter directory ({} for a plain peft adapter without one)."""
    path = Path(adapter_dir) / MANIFEST_NAME
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ModelLoadError(f"{path} is not valid JSON ({exc}); the adapter's manifest is damaged") from None


def adapter_digest(adapter_dir: str | Path) -> str:
    """sha256 (16 hex digits) of the adapter's weight file(s): the adapter's identity in a model fingerprint."""
    d = Path(adapter_dir)
    files = sorted(d.glob("adapter_model.*"))
    if not files:
        raise ModelLoadError(f"{d} has adapter_config.json but no adapter_model.safetensors/.bin")
    h = hashlib.sha256()
    for f in files:
        with f.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:16]


def write_manifest(adapter_dir: str | Path, manifest: dict[str, Any]) -> None:
    """Write `rise_adapter.json` (the manifest plus the digest of the weights already in the directory) and a README
    (`model_card`) into an adapter directory."""
    d = Path(adapter_dir)
    (d / MANIFEST_NAME).write_text(json.dumps({**manifest, "adapter_digest": adapter_digest(d)}, indent=2))
    (d / "README.md").write_text(model_card(manifest))  # peft's own card names this machine's paths


def model_card(manifest: dict[str, Any]) -> str:
    """A short README for an adapter directory: what it is, how it was made, how to use it."""
    r = manifest["recipe"]
    return (f"# LoRA adapter for {manifest['base_model']}\n\n"
            f"Fine-tuned by `rise finetune` on {manifest['n_samples']} samples of `{manifest.get('pool_source')}` "
            f"(pool hash {manifest['pool_hash']}): LoRA r={r['rank']}, alpha={r['alpha']} on "
            f"{', '.join(r['target_modules'] or ['peft defaults'])}; {r['epochs']} epochs at lr {r['learning_rate']}, "
            f"batch {r['batch_size']}, seed {r['seed']}; loss on {r['loss_on']} tokens. Epoch losses: "
            f"{', '.join(f'{x:.3f}' for x in manifest['epoch_losses'])}.\n\n"
            "Use it wherever a model is named: `rise build POOL --index I --model THIS_DIR`, `--adapter THIS_DIR`, "
            "or `RISE_MODEL=THIS_DIR`. `rise_adapter.json` is the full manifest.\n")


@dataclass(frozen=True)
class ModelSpec:
    """What a model spec loads: `base` (a hub id, a local checkpoint directory or the embedded default's id) and
    `adapter` (a LoRA adapter directory merged into it, as written in the spec; None for a plain model)."""

    base: str
    adapter: str | None = None
    base_from_manifest: bool = False
    """the spec named the adapter directory alone and `base` is the one its manifest names."""

    @property
    def parts(self) -> tuple[str, ...]:
        """Everything this spec loads: the base, then the adapter."""
        return (self.base,) if self.adapter is None else (self.base, self.adapter)


def _check_part(part: str, what: str, spec: str) -> str:
    if not part.strip():
        raise ModelLoadError(f"the model spec {spec!r} has an empty {what}: name the model as BASE, ADAPTER_DIR "
                             f"or BASE{ADAPTER_SEPARATOR}ADAPTER_DIR")
    if len(part) > MAX_MODEL_SPEC_CHARS:
        raise ModelLoadError(f"the {what} of the model spec is {len(part):,} characters long (at most "
                             f"{MAX_MODEL_SPEC_CHARS}): {part[:40]!r}...")
    return part


def parse_model_spec(spec: str) -> ModelSpec:
    """The one reading of a model spec, used by `load_model` and by the app's path check alike.

    `BASE@ADAPTER_DIR` is split at its last `@` (so a path naming an adapter cannot hold one, whatever exists on
    disk); without `@`, a directory holding `adapter_config.json` is an adapter whose manifest names the base, and
    anything else is the base. Specs with control characters, an empty part or a part over MAX_MODEL_SPEC_CHARS
    characters are a ModelLoadError."""
    if not isinstance(spec, str):
        raise ModelLoadError(f"a model spec is text, got {type(spec).__name__}")
    bad = next((c for c in spec if unicodedata.category(c) in _REFUSED_CATEGORIES), None)
    if bad is not None:
        raise ModelLoadError(f"the model spec {spec[:60]!r} contains the control character {bad!r}; type the "
                             "model's hub id or folder only")
    spec = spec.strip()
    if ADAPTER_SEPARATOR in spec:
        head, tail = spec.rsplit(ADAPTER_SEPARATOR, 1)
        return ModelSpec(_check_part(head.strip(), "base (before @)", spec),
                         _check_part(tail.strip(), "adapter directory (after @)", spec))
    _check_part(spec, "name", spec)
    if is_adapter_dir(spec):
        return ModelSpec(_manifest_base(spec), spec, base_from_manifest=True)
    return ModelSpec(spec)


def _manifest_base(adapter: str) -> str:
    base = read_manifest(adapter).get("base_model") or _adapter_config(adapter).get("base_model_name_or_path")
    if not base:
        raise ModelLoadError(f"{adapter} does not name its base model; give it: --model BASE --adapter DIR")
    return str(base)


def split_model_spec(spec: str | None, adapter: str | None = None) -> tuple[str | None, str | None]:
    """(base, adapter directory) that `load_model` loads for a spec (`parse_model_spec`; None: the embedded
    default) and an optional explicit `adapter`, which wins over one named in the spec."""
    base = None
    if spec is not None:
        parsed = parse_model_spec(spec)
        base, adapter = parsed.base, adapter or parsed.adapter
        if adapter is not None and parsed.base_from_manifest and adapter != parsed.adapter:
            base = None  # an explicit adapter with a spec that is itself an adapter directory: the former's base
    if adapter is not None:
        _check_part(adapter, "adapter directory", adapter)
        if not is_adapter_dir(adapter):
            raise ModelLoadError(f"{adapter} is not a LoRA adapter directory (no adapter_config.json in it)")
        base = base or _manifest_base(adapter)
        adapter = str(Path(adapter).expanduser().resolve())
    return base, adapter


def _adapter_config(adapter: str) -> dict[str, Any]:
    try:
        return json.loads((Path(adapter) / "adapter_config.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelLoadError(f"{adapter}/adapter_config.json cannot be read: {exc}") from None


def model_spec(base: str, adapter: str, manifest: dict[str, Any]) -> str:
    """The spec `load_model` reloads base + adapter from (what an index records as its model id): the adapter
    directory alone when its manifest names this base, else `BASE@ADAPTER_DIR`."""
    return adapter if manifest.get("base_model") == base else f"{base}{ADAPTER_SEPARATOR}{adapter}"


def apply_adapter(lm: LoadedModel, adapter: str) -> LoadedModel:
    """Merge the LoRA adapter in directory `adapter` into `lm`'s weights (in place) and record it."""
    peft = require_peft()
    manifest = read_manifest(adapter)
    base_print = lm.fingerprint()
    if manifest.get("base_fingerprint") and manifest["base_fingerprint"] != base_print:
        raise ModelLoadError(
            f"adapter {adapter} was trained on {manifest.get('base_model')!r} (fingerprint "
            f"{manifest['base_fingerprint']}); the base loaded for it, {lm.model_id!r}, has fingerprint {base_print}")
    try:
        with MODEL_LOAD_LOCK, peft_wrapping():  # peft builds LoRA layers under transformers' global loading state
            merged = peft.PeftModel.from_pretrained(lm.model, adapter).merge_and_unload()
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ModelLoadError(f"could not apply adapter {adapter} to {lm.model_id!r}: {exc}") from exc
    merged.eval()
    lm.model = merged
    lm.model_id = model_spec(lm.model_id, adapter, manifest)
    lm.adapter = {"path": adapter, "digest": adapter_digest(adapter), "base_model": manifest.get("base_model"),
                  "base_fingerprint": base_print, "rise_manifest": bool(manifest),
                  # the rendering it trained on; manifests from before the chat template was a choice: plain text
                  "chat_template": manifest.get("chat_template", "off") if manifest else None}
    lm._fingerprint = None
    verify_readout(lm)
    return lm


def is_peft_model(model: Any) -> bool:
    """Whether `model` is a `peft` model (adapters wrapped around a base model, unmerged)."""
    return hasattr(model, "peft_config") and hasattr(model, "get_base_model")


def _lora_layers(model: Any) -> tuple[str, dict[str, Any]]:
    """(adapter name, LoRA layers by module name of the base) of a peft model with one plain LoRA adapter on Linear
    layers, unmerged, whose config names its base; a ModelLoadError for anything `wrap_peft_model` cannot reproduce
    as merged weights or its index could not reload."""
    peft = require_peft()
    from peft.tuners.lora import Linear as LoraLinear
    from peft.tuners.lora import LoraLayer

    names = list(model.peft_config)
    active = getattr(model, "active_adapters", names)
    if len(names) != 1 or list(active) != names:
        raise ModelLoadError(f"the model carries adapters {names} (active {list(active)}); index one LoRA adapter at "
                             "a time")
    name, cfg = names[0], model.peft_config[names[0]]
    unsupported = [what for what, present in (
        (f"a {cfg.peft_type} adapter", cfg.peft_type != peft.PeftType.LORA),
        ("DoRA", getattr(cfg, "use_dora", False)), ("LoRA biases", getattr(cfg, "lora_bias", False)),
        (f"modules_to_save {cfg.modules_to_save}", bool(getattr(cfg, "modules_to_save", None)))) if present]
    base = model.get_base_model()
    layers = {n: m for n, m in base.named_modules() if isinstance(m, LoraLayer)}
    unsupported += [f"LoRA on {n} ({type(m).__name__})" for n, m in layers.items() if type(m) is not LoraLinear]
    unsupported += [f"{n} already merged" for n, m in layers.items() if m.merged]
    unsupported += [f"a LoRA variant on {n}" for n, m in layers.items() if getattr(m, "lora_variant", {}).get(name)]
    if base.get_output_embeddings() is not None and type(base.get_output_embeddings()).__module__.startswith("peft"):
        unsupported.append("an adapted LM head")
    if unsupported:
        raise ModelLoadError(f"cannot index this peft model as it trains ({'; '.join(unsupported[:3])}): save the "
                             "adapter and build the index of the merged model: build_index(path, pool, "
                             "load_model('BASE@ADAPTER_DIR'))")
    if not cfg.base_model_name_or_path:
        raise ModelLoadError("the peft model's config names no base model (base_model_name_or_path): its index "
                             "could not reload it")
    return name, layers


def check_peft_model(model: Any) -> None:
    """A ModelLoadError, naming what, when `wrap_peft_model` cannot index `model` (see there)."""
    _lora_layers(model)


def _named_weights(base: Any, adapter: str, layers: dict[str, Any], merged: bool) -> list[tuple[str, Any]]:
    """The base's tensors under the names the merged model gives them (LoRA factors left out, `base_layer.` dropped),
    sorted; with `merged`, each LoRA layer's weight plus its delta computed as peft's merge computes it."""
    import torch

    out = []
    with torch.no_grad():
        for key, value in base.state_dict().items():
            parts = key.split(".")
            if any(p.startswith("lora_") for p in parts):
                continue
            owner = ".".join(parts[:-2]) if len(parts) > 2 and parts[-2] == "base_layer" else None
            if owner in layers:
                key = f"{owner}.{parts[-1]}"
                if merged and parts[-1] == "weight":
                    value = value + layers[owner].get_delta_weight(adapter)  # peft's merge: weight += delta
            out.append((key, value))
    return sorted(out, key=lambda kv: kv[0])


def wrap_peft_model(model: Any, tokenizer: Any, adapter_dir: str | Path,
                    device: str | Any = "cpu") -> LoadedModel:
    """A peft LoRA model as it is in memory (unmerged, e.g. while it trains) as the `LoadedModel` that `load_model`
    reloads from `adapter_dir`, where its adapter is saved (`BASE@ADAPTER_DIR`, the base named by the adapter's
    config): forward passes run through the LoRA layers (the merged model's function, summed in another order), the
    fingerprint is the merged weights' (each adapted weight plus its delta, one layer at a time; nothing in `model`
    changes), so an index built from it is queried with the reloaded model. Plain LoRA on Linear layers only."""
    from .models import weights_fingerprint, wrap_model

    adapter, layers = _lora_layers(model)
    base_id = model.peft_config[adapter].base_model_name_or_path
    adapter_dir = str(Path(adapter_dir).expanduser().resolve())
    digest = adapter_digest(adapter_dir)
    base = model.get_base_model()
    lm = wrap_model(base, tokenizer, model_spec(str(base_id), adapter_dir, {}), device=device)
    base_print = weights_fingerprint(base.config, tokenizer, _named_weights(base, adapter, layers, merged=False))
    lm.adapter = {"path": adapter_dir, "digest": digest, "base_model": None, "base_fingerprint": base_print,
                  "rise_manifest": False, "chat_template": None}  # as apply_adapter records a plain peft adapter
    lm._fingerprint = weights_fingerprint(base.config, tokenizer, _named_weights(base, adapter, layers, merged=True),
                                          digest)
    return lm


register_adapter_support(split_model_spec, apply_adapter)
