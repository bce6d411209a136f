"""The model's continuation of a typed prompt: the Attribute page's "generate" button, so a user can attribute what
the model itself says."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from rise_core.errors import InputDataError

if TYPE_CHECKING:
    from rise_core.models import LoadedModel


def generate_continuation(lm: LoadedModel, prompt: str, max_new_tokens: int = 48) -> str:
    """Greedy continuation of `prompt` by the model (through its chat template when it has one)."""
    if not prompt or not prompt.strip():
        raise InputDataError("type a prompt for the model to continue")
    tok = lm.tokenizer
    if getattr(tok, "chat_template", None):
        enc = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                      return_tensors="pt", return_dict=True)
    else:
        enc = tok(prompt, return_tensors="pt")
    input_ids, attention = enc["input_ids"], enc.get("attention_mask")
    if attention is None:
        attention = torch.ones_like(input_ids)
    input_ids, attention = input_ids.to(lm.device), attention.to(lm.device)
    with torch.no_grad():
        out = lm.model.generate(input_ids=input_ids, attention_mask=attention, max_new_tokens=max_new_tokens,
                                do_sample=False, pad_token_id=lm.pad_id)
    text = tok.decode(out[0, input_ids.shape[1]:], skip_special_tokens=True).strip()
    if not text:
        raise InputDataError("the model generated nothing for this prompt; type the generation yourself")
    return text
