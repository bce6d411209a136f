"""The model's own continuation of a prompt: the query a retrospective attribution explains.

A model fine-tuned by `rise finetune` learned answers in the index's format, so it is prompted exactly that way: through
the chat template when it trained on it (the adapter's manifest says), else prompt, newline (then completion, end of
sequence); any other model through its chat template when it has one, else with the prompt and a newline. Greedy by default (reproducible); sampling is seeded.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from .errors import ConfigError, InputDataError
from .model_lock import seeded_global_rng
from .samples import PROMPT_SEPARATOR
from .saved_config import SavedConfig


@dataclass(frozen=True)
class GenerationSettings(SavedConfig):
    """How a continuation is decoded (saved in a counterfactual check's plan: `SavedConfig`)."""

    LABEL = "generation settings"

    max_new_tokens: int = field(default=96, metadata={"help": "Length of the answer, in tokens at most."})
    temperature: float = field(
        default=0.0, metadata={"help": "0: greedy decoding; above 0: sampling at this temperature."})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling: keep the top tokens of this mass."})
    seed: int = field(default=0, metadata={"help": "Seed of the sampler (ignored when greedy)."})

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ConfigError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ConfigError(f"need temperature >= 0 and 0 < top_p <= 1, got {self.temperature}, {self.top_p}")


def prompt_format(lm: Any) -> str:
    """'rise' (prompt, newline: how a `rise finetune` model learned without the template), 'chat' (the chat template)
    or 'plain'."""
    has_template = bool(getattr(lm.tokenizer, "chat_template", None))
    if getattr(lm, "is_rise_finetune", False) and getattr(lm, "learned_chat_template", None) != "on":
        return "rise"
    return "chat" if has_template else "plain"


def prompt_inputs(lm: Any, prompt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Input ids and attention mask (1, T) that ask `lm` to answer `prompt`."""
    if not prompt or not prompt.strip():
        raise InputDataError("type a prompt for the model to continue")
    tok = lm.tokenizer
    fmt = prompt_format(lm)
    if fmt == "chat":
        enc = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)
        ids = enc["input_ids"]
    else:  # the prompt ids `encode_sample` gives an index sample
        ids = torch.tensor([tok(prompt + PROMPT_SEPARATOR, add_special_tokens=True)["input_ids"]])
    context = context_tokens(lm)
    if context is not None and ids.shape[1] > context:
        raise InputDataError(f"the prompt is {ids.shape[1]:,} tokens, longer than the model's context of {context:,} "
                             "tokens; shorten it")
    return ids.to(lm.device), torch.ones_like(ids).to(lm.device)


def context_tokens(lm: Any) -> int | None:
    """The model's context length (its config's max_position_embeddings), or None when the config does not say. A
    prompt beyond it is refused: past it, models with learned positions fail and the others attend to positions they
    never saw, at a cost quadratic in the length."""
    value = getattr(getattr(getattr(lm, "model", None), "config", None), "max_position_embeddings", None)
    return int(value) if isinstance(value, int) and value > 0 else None


def _generate_kwargs(lm: Any, settings: GenerationSettings) -> dict[str, Any]:
    kw: dict[str, Any] = {"max_new_tokens": settings.max_new_tokens, "pad_token_id": lm.pad_id}
    if settings.temperature > 0:
        kw.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
    else:
        kw.update(do_sample=False, temperature=None, top_p=None, top_k=None)
    return kw


def answer(lm: Any, prompt: str, settings: GenerationSettings | None = None) -> str:
    """The model's continuation of `prompt` (special tokens dropped, whitespace stripped; "" when it stops at once)."""
    return "".join(stream(lm, prompt, settings)).strip()


def generate(lm: Any, prompt: str, settings: GenerationSettings | None = None) -> str:
    """`answer`, refusing an empty one: a query needs text to attribute."""
    text = answer(lm, prompt, settings)
    if not text:
        raise InputDataError("the model generated nothing for this prompt; type the generation yourself")
    return text


def stream(lm: Any, prompt: str, settings: GenerationSettings | None = None) -> Iterator[str]:
    """The continuation as text pieces while the model generates them (for a live display)."""
    from transformers import TextIteratorStreamer

    settings = settings or GenerationSettings()
    ids, mask = prompt_inputs(lm, prompt)
    streamer = TextIteratorStreamer(lm.tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=600)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            sampled = settings.temperature > 0  # greedy decoding draws nothing: it needs neither seed nor lock
            with seeded_global_rng(settings.seed) if sampled else contextlib.nullcontext(), torch.no_grad():
                lm.model.generate(input_ids=ids, attention_mask=mask, streamer=streamer,
                                  **_generate_kwargs(lm, settings))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)
            streamer.end()

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    yield from streamer
    worker.join()
    if errors:
        raise errors[0]
