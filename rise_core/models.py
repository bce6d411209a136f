"""Loading a Hugging Face causal LM and reading out what RISE needs: final hidden states and the LM head.

Works for tied heads (Llama/SmolLM2, GPT-2: the head is the input embedding) and untied ones (GPT-NeoX `embed_out`,
OLMo). The readout is verified once at load time: W h + b must reproduce the model's own logits, which rules out
architectures that transform logits after the head (soft-capping, scaling) where the r h^T factorisation fails.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import threading
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch

from .errors import ModelLoadError
from .model_lock import MODEL_LOAD_LOCK  # re-exported: held around every model load (see model_lock)

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


_VOLATILE_CONFIG = ("_name_or_path", "transformers_version", "torch_dtype", "dtype", "_attn_implementation",
                    "_attn_implementation_autoset", "architectures", "_commit_hash")


def weights_fingerprint(config: Any, tokenizer: Any, named_tensors: Iterable[tuple[str, torch.Tensor]],
                        adapter_digest: str | None = None) -> str:
    """16 hex digits naming a model: its config (less what varies between loads of the same weights), vocabulary,
    each named tensor's shape, sum and strided sample (in the order given: a state dict's, sorted), and the digest of
    a merged adapter (named even where merging left a weight unchanged)."""
    h = hashlib.sha256()
    cfg = config.to_dict()
    for volatile in _VOLATILE_CONFIG:
        cfg.pop(volatile, None)
    h.update(json.dumps(cfg, sort_keys=True, default=str).encode())
    h.update(json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False).encode())
    with torch.no_grad():
        for name, p in named_tensors:
            flat = p.detach().reshape(-1).float().cpu()
            step = max(1, flat.numel() // 2048)
            h.update(f"{name}:{tuple(p.shape)}:{flat.double().sum().item():.6e}".encode())
            h.update(flat[::step].numpy().tobytes())
    if adapter_digest is not None:
        h.update(f"adapter:{adapter_digest}".encode())
    return h.hexdigest()[:16]


def chat_template_digest(tokenizer: Any) -> str | None:
    """16 hex digits naming the tokenizer's chat template (None without one): it decides how pairs and conversations
    become tokens, and the weights' fingerprint does not cover it (a template added to the same weights)."""
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        return None
    text = template if isinstance(template, str) else json.dumps(template, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def hs_layer_index(depth: float, n_layers: int) -> int:
    """The layer `RiseConfig.hs_depth` names in a model of `n_layers` decoder layers: round(depth * n_layers), at
    least 1 (after the first layer), where n_layers is the final hidden state (after the final norm)."""
    return max(1, min(n_layers, int(depth * n_layers + 0.5)))


_LAYER_CAPTURE = threading.local()
"""per thread: the decoder layer whose output `LoadedModel.hidden_with_layer` wants (`want`) and that output (`seen`)."""
_CAPTURE_INSTALL = threading.Lock()
_CAPTURING: weakref.WeakSet[torch.nn.ModuleList] = weakref.WeakSet()
"""the decoder stacks whose layers carry `_capture_layer_output` (checked before taking the lock on each pass)."""


def _capture_layer_output(module: torch.nn.Module, _inputs: Any, out: Any) -> None:
    """Forward hook on every decoder layer: keep the output of the layer this thread asked for, ignore the rest."""
    if getattr(_LAYER_CAPTURE, "want", None) is module:
        _LAYER_CAPTURE.seen = out[0] if isinstance(out, tuple) else out


def _install_capture(blocks: torch.nn.ModuleList) -> None:
    """Put `_capture_layer_output` on each of `blocks` once (it stays: a hook added or removed while another thread
    runs the model would change what that pass runs)."""
    if blocks in _CAPTURING:
        return
    with _CAPTURE_INSTALL:
        for block in blocks:
            if not any(h is _capture_layer_output for h in block._forward_hooks.values()):
                block.register_forward_hook(_capture_layer_output)
        _CAPTURING.add(blocks)


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

    def release_weights(self) -> None:
        """Free the weights (moved to the meta device), for a caller done with this model, so that another model loads
        in their place without the two held together (`rise build` of a fine-tune, before its base model loads). The
        model cannot run afterwards; its tokenizer stays."""
        self.model.to("meta")

    def private_copy(self) -> LoadedModel:
        """The same model with weights of its own (a deep copy; the tokenizer is shared), for work that hooks the
        model's layers or turns its gradients on and off (a Bergson build or query) while other threads run this one:
        their forward passes would fire its hooks. Costs the weights' memory again."""
        return dataclasses.replace(self, model=copy.deepcopy(self.model))

    @property
    def is_tied(self) -> bool:
        return self.readout_weight.data_ptr() == self.model.get_input_embeddings().weight.data_ptr()

    def final_hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Final hidden states after the final norm, (B, T, d), without computing logits."""
        out = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        return out.last_hidden_state

    @property
    def n_layers(self) -> int:
        """How many decoder layers the model has (`num_hidden_layers`, or `n_layer` for GPT-2)."""
        cfg = self.model.config
        n = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", None)
        if not n:
            raise ModelLoadError(f"{type(self.model).__name__}'s config names no layer count (num_hidden_layers)")
        return int(n)

    def hidden_with_layer(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, layer: int
                          ) -> tuple[torch.Tensor, torch.Tensor]:
        """(final hidden states after the final norm, the hidden states after `layer` decoder layers), each (B, T, d);
        `layer` indexes `output_hidden_states` (0: the embeddings, n_layers: the final hidden state). A layer inside
        the model is read by a forward hook on that decoder layer, so one pass keeps one layer's states besides the
        final ones (not every layer's, as `output_hidden_states` does); a model whose decoder layers are not found
        (`decoder_layers`) takes `output_hidden_states`. Threads share the model: the hooks are installed once and
        each keeps only the output its own thread asked for (`_LAYER_CAPTURE`)."""
        blocks = self.decoder_layers() if 0 < layer < self.n_layers else None
        if blocks is None:
            out = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False,
                                        output_hidden_states=True)
            return out.last_hidden_state, out.hidden_states[layer]
        _install_capture(blocks)
        _LAYER_CAPTURE.want, _LAYER_CAPTURE.seen = blocks[layer - 1], None
        try:
            out = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
            seen = _LAYER_CAPTURE.seen
        finally:
            _LAYER_CAPTURE.want, _LAYER_CAPTURE.seen = None, None
        if seen is None:
            raise RuntimeError(f"decoder layer {layer} of {self.model_id} did not run in the forward pass")
        return out.last_hidden_state, seen

    def decoder_layers(self) -> torch.nn.ModuleList | None:
        """The model's n_layers decoder layers in order (`layers` of Llama, Mistral, Qwen, GPT-NeoX; `h` of GPT-2,
        GPT-J, Falcon; `decoder.layers` of OPT), or None when none of those holds exactly n_layers modules."""
        for path in ("layers", "h", "decoder.layers"):
            module: Any = self.model.base_model
            for part in path.split("."):
                module = getattr(module, part, None)
            if isinstance(module, torch.nn.ModuleList) and len(module) == self.n_layers:
                return module
        return None

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """z = W h (+ b) for hidden rows (..., d) -> (..., V)."""
        z = hidden @ self.readout_weight.T
        bias = self.readout_bias
        return z if bias is None else z + bias

    def fingerprint(self) -> str:
        """Identity of weights + tokenizer: config, vocabulary, and per-parameter shape, sum and strided sample
        (`weights_fingerprint`), with the merged adapter's digest."""
        if self._fingerprint is None:
            self._fingerprint = weights_fingerprint(self.model.config, self.tokenizer,
                                                    sorted(self.model.state_dict().items()),
                                                    None if self.adapter is None else self.adapter["digest"])
        return self._fingerprint

    def describe(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "fingerprint": self.fingerprint(), "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size, "n_layers": self.n_layers, "tied_head": self.is_tied, "dtype": str(self.dtype).replace("torch.", ""),
                "architecture": type(self.model).__name__, "chat_template": chat_template_digest(self.tokenizer),
                **({"adapter": self.adapter} if self.adapter is not None else {})}

    @property
    def is_rise_finetune(self) -> bool:
        """True when the weights carry a `rise finetune` adapter (it was trained on prompt, newline, completion)."""
        return bool(self.adapter and self.adapter.get("rise_manifest"))

    @property
    def learned_chat_template(self) -> str | None:
        """'on' / 'off': whether the `rise finetune` adapter in the weights trained on chat-template renderings (what
        chat_template 'auto' follows); None without such an adapter."""
        return (self.adapter or {}).get("chat_template") if self.is_rise_finetune else None


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


SplitSpec = Callable[[str | None, str | None], tuple[str | None, str | None]]
ApplyAdapter = Callable[[LoadedModel, str], LoadedModel]


class AdapterSupport(NamedTuple):
    """How `load_model` reads a model spec that names a LoRA adapter, and merges the adapter into the base."""

    split: SplitSpec
    """(spec, adapter) -> (base, adapter directory or None)."""
    apply: ApplyAdapter
    """(loaded base, adapter directory) -> the model with the adapter merged."""


_adapter_support: AdapterSupport | None = None


def register_adapter_support(split: SplitSpec, apply: ApplyAdapter) -> None:
    """Let `load_model` take adapter specs. `rise_core.adapters` registers its parser and merger on import (the
    package imports it): this module sits below it in the layers, so it is told how rather than importing upward."""
    global _adapter_support
    _adapter_support = AdapterSupport(split, apply)


def load_model(
    name_or_path: str | None = None,
    device: str | torch.device | None = "cpu",
    dtype: str | torch.dtype = "float32",
    trust_remote_code: bool = False,
    cache_dir: str | None = None,
    adapter: str | None = None,
) -> LoadedModel:
    """Load a causal LM by hub id or local path; None or the default id gives the embedded SmolLM2-135M-Instruct.

    A LoRA adapter (`adapter`, a directory; or a spec `ADAPTER_DIR` / `BASE@ADAPTER_DIR`, read by
    `rise_core.adapters.parse_model_spec`) is merged into the weights, and the model's fingerprint names it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import default_model

    support = _adapter_support
    if support is not None:
        name_or_path, adapter = support.split(name_or_path, adapter)
    elif adapter is not None:  # pragma: no cover - importing rise_core registers adapter support
        raise ModelLoadError("adapters need rise_core.adapters imported (`import rise_core` does it)")
    dev, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    model_id = name_or_path or default_model.DEFAULT_MODEL_ID
    path = str(default_model.ensure_default_model(cache_dir)) if model_id == default_model.DEFAULT_MODEL_ID else model_id
    with MODEL_LOAD_LOCK:
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, trust_remote_code=trust_remote_code)
        except (OSError, ValueError, KeyError) as exc:
            raise ModelLoadError(
                f"could not load model {model_id!r}: {exc}. Give a local directory with a Hugging Face checkpoint, "
                f"a hub id (needs network access), or '{default_model.DEFAULT_MODEL_ID}' for the embedded default."
            ) from exc
        lm = wrap_model(model, tokenizer, model_id, dev)
        return support.apply(lm, adapter) if support is not None and adapter else lm


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
