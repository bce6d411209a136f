"""Loading a Hugging Face causal LM and reading out what RISE needs: final hidden states and the LM head.

Works for tied heads (Llama/SmolLM2, GPT-2: the head is the input embedding) and untied ones (GPT-NeoX `embed_out`,
OLMo). The readout is verified once at load time: W h + b must reproduce the model's own logits, which rules out
architectures that transform logits after the head (soft-capping, scaling) where the r h^T factorisation fails.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .errors import ModelLoadError

logger = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16, "float64": torch.float64, "fp64": torch.float64}


def resolve_device(device: str | torch.device | None) -> torch.device:
    """'auto' or None picks cuda when available, else cpu; an unavailable cuda is a clear error."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("device 'cuda' was requested but no CUDA GPU is available; use --device cpu")
    return dev


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return DTYPES[dtype]
    except KeyError:
        raise ModelLoadError(f"unknown dtype {dtype!r}; choose one of {sorted(set(DTYPES))}") from None


@dataclass
class LoadedModel:
    """A causal LM with its tokenizer and the readout RISE uses."""

    model: Any
    tokenizer: Any
    model_id: str
    adapter: dict[str, Any] | None = None
    """the LoRA adapter merged into the weights: {"path", "digest", "base_model", ...}; None for a plain model."""
    _fingerprint: str | None = field(default=None, repr=False)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return self.readout_weight.dtype

    @property
    def readout_weight(self) -> torch.Tensor:
        """LM-head weight W (V, d); for tied models this is the input embedding matrix."""
        return self.model.get_output_embeddings().weight

    @property
    def readout_bias(self) -> torch.Tensor | None:
        return getattr(self.model.get_output_embeddings(), "bias", None)

    @property
    def vocab_size(self) -> int:
        return int(self.readout_weight.shape[0])

    @property
    def hidden_size(self) -> int:
        return int(self.readout_weight.shape[1])

    @property
    def pad_id(self) -> int:
        tok = self.tokenizer
        for candidate in (tok.pad_token_id, tok.eos_token_id, 0):
            if candidate is not None:
                return int(candidate)
        return 0

    @property
    def is_tied(self) -> bool:
        return self.readout_weight.data_ptr() == self.model.get_input_embeddings().weight.data_ptr()

    def final_hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Final hidden states after the final norm, (B, T, d), without computing logits."""
        out = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return out.last_hidden_state

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """z = W h (+ b) for hidden rows (..., d) -> (..., V)."""
        z = hidden @ self.readout_weight.T
        bias = self.readout_bias
        return z if bias is None else z + bias

    def fingerprint(self) -> str:
        """Identity of weights + tokenizer: config, vocabulary, and per-parameter shape, sum and strided sample."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            cfg = self.model.config.to_dict()
            for volatile in ("_name_or_path", "transformers_version", "torch_dtype", "dtype", "_attn_implementation",
                             "_attn_implementation_autoset", "architectures", "_commit_hash"):
                cfg.pop(volatile, None)
            h.update(json.dumps(cfg, sort_keys=True, default=str).encode())
            vocab = self.tokenizer.get_vocab()
            h.update(json.dumps(sorted(vocab.items()), ensure_ascii=False).encode())
            with torch.no_grad():
                for name, p in sorted(self.model.state_dict().items()):
                    flat = p.detach().reshape(-1).float().cpu()
                    step = max(1, flat.numel() // 2048)
                    h.update(f"{name}:{tuple(p.shape)}:{flat.double().sum().item():.6e}".encode())
                    h.update(flat[::step].numpy().tobytes())
            if self.adapter is not None:  # an adapter is named even where merging it left a weight unchanged
                h.update(f"adapter:{self.adapter['digest']}".encode())
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "fingerprint": self.fingerprint(), "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size, "tied_head": self.is_tied, "dtype": str(self.dtype).replace("torch.", ""),
                "architecture": type(self.model).__name__,
                **({"adapter": self.adapter} if self.adapter is not None else {})}

    @property
    def is_rise_finetune(self) -> bool:
        """True when the weights carry a `rise finetune` adapter (it was trained on prompt, newline, completion)."""
        return bool(self.adapter and self.adapter.get("rise_manifest"))


def verify_readout(lm: LoadedModel, atol: float = 1e-3) -> None:
    """Check on a short probe that W h + b reproduces the model's logits (raises ModelLoadError if not)."""
    ids = torch.tensor([[lm.pad_id if lm.pad_id < lm.vocab_size else 0] + list(range(1, 6))], device=lm.device)
    ids = ids.clamp_max(lm.vocab_size - 1)
    mask = torch.ones_like(ids)
    with torch.no_grad():
        ref = lm.model(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
        ours = lm.logits(lm.final_hidden(ids, mask)).float()
    scale = ref.abs().max().clamp_min(1.0)
    tol = atol if lm.dtype in (torch.float32, torch.float64) else 5e-2
    if not torch.allclose(ours / scale, ref / scale, atol=tol):
        raise ModelLoadError(
            f"{type(lm.model).__name__}: logits are not W h + b of the final hidden state (the model transforms "
            "logits after its head, e.g. soft-capping or scaling), so RISE's readout factorisation does not hold"
        )


ADAPTER_SEPARATOR = "@"


def split_model_spec(spec: str | None, adapter: str | None = None) -> tuple[str | None, str | None]:
    """(base, adapter directory) of a model spec: `BASE`, `ADAPTER_DIR` (base from its manifest) or `BASE@ADAPTER_DIR`.

    An explicit `adapter` wins over one named in the spec."""
    from .finetune import is_adapter_dir, read_manifest

    base = spec
    if spec and ADAPTER_SEPARATOR in spec and not Path(spec).expanduser().exists():
        head, tail = spec.rsplit(ADAPTER_SEPARATOR, 1)
        if is_adapter_dir(tail):
            base, adapter = head or None, adapter or tail
    if spec and is_adapter_dir(spec) and base == spec:
        adapter = adapter or spec
        base = None
    if adapter is not None:
        if not is_adapter_dir(adapter):
            raise ModelLoadError(f"{adapter} is not a LoRA adapter directory (no adapter_config.json in it)")
        if base is None:
            base = read_manifest(adapter).get("base_model") or _adapter_config(adapter).get("base_model_name_or_path")
            if not base:
                raise ModelLoadError(f"{adapter} does not name its base model; give it: --model BASE --adapter DIR")
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
    from .finetune import _require_peft, adapter_digest, read_manifest

    peft = _require_peft()
    manifest = read_manifest(adapter)
    base_print = lm.fingerprint()
    if manifest.get("base_fingerprint") and manifest["base_fingerprint"] != base_print:
        raise ModelLoadError(
            f"adapter {adapter} was trained on {manifest.get('base_model')!r} (fingerprint "
            f"{manifest['base_fingerprint']}); the base loaded for it, {lm.model_id!r}, has fingerprint {base_print}")
    try:
        merged = peft.PeftModel.from_pretrained(lm.model, adapter).merge_and_unload()
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise ModelLoadError(f"could not apply adapter {adapter} to {lm.model_id!r}: {exc}") from exc
    merged.eval()
    lm.model = merged
    lm.model_id = model_spec(lm.model_id, adapter, manifest)
    lm.adapter = {"path": adapter, "digest": adapter_digest(adapter), "base_model": manifest.get("base_model"),
                  "base_fingerprint": base_print, "rise_manifest": bool(manifest)}
    lm._fingerprint = None
    verify_readout(lm)
    return lm


def load_model(
    name_or_path: str | None = None,
    device: str | torch.device | None = "cpu",
    dtype: str | torch.dtype = "float32",
    trust_remote_code: bool = False,
    cache_dir: str | None = None,
    adapter: str | None = None,
) -> LoadedModel:
    """Load a causal LM by hub id or local path; None or the default id gives the embedded SmolLM2-135M-Instruct.

    A LoRA adapter (`adapter`, a directory; or a spec `ADAPTER_DIR` / `BASE@ADAPTER_DIR`, see `split_model_spec`)
    is merged into the weights, and the model's fingerprint names it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import default_model

    name_or_path, adapter = split_model_spec(name_or_path, adapter)
    dev, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    model_id = name_or_path or default_model.DEFAULT_MODEL_ID
    path = str(default_model.ensure_default_model(cache_dir)) if model_id == default_model.DEFAULT_MODEL_ID else model_id
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelLoadError(
            f"could not load model {model_id!r}: {exc}. Give a local directory with a Hugging Face checkpoint, "
            f"a hub id (needs network access), or '{default_model.DEFAULT_MODEL_ID}' for the embedded default."
        ) from exc
    lm = wrap_model(model, tokenizer, model_id, dev)
    return apply_adapter(lm, adapter) if adapter else lm


def wrap_model(model: Any, tokenizer: Any, model_id: str, device: str | torch.device = "cpu") -> LoadedModel:
    """Wrap an already-built model + tokenizer (used by tests with tiny random models)."""
    if model.get_output_embeddings() is None:
        raise ModelLoadError(f"{type(model).__name__} has no LM head (get_output_embeddings() is None)")
    model.to(resolve_device(device)).eval()
    if getattr(tokenizer, "pad_token_id", None) is None and getattr(tokenizer, "eos_token_id", None) is not None:
        tokenizer.pad_token = tokenizer.eos_token
    lm = LoadedModel(model=model, tokenizer=tokenizer, model_id=model_id)
    verify_readout(lm)
    return lm
