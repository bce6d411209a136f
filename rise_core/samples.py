"""Samples (plain text, or prompt + completion) and their tokenisation into model inputs with counted positions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from .errors import InputDataError

PROMPT_SEPARATOR = "\n"


def _blank(text: str | None) -> str:
    """' (only whitespace)' for a text of spaces, tabs or newlines, so it is not mistaken for a missing one."""
    return " (only whitespace)" if text else ""


@dataclass(frozen=True)
class Sample:
    """One training example or query.

    Either `text` alone (plain text: every token after the first is predicted) or `prompt` + `completion`
    (instruction -> response; by default only completion tokens count). `id` identifies it in an index.
    """

    text: str | None = None
    prompt: str | None = None
    completion: str | None = None
    id: str | None = None
    label: Any = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        has_text = self.text is not None
        has_pair = self.prompt is not None or self.completion is not None
        if has_text and has_pair:
            raise InputDataError("a sample has either `text` or `prompt` + `completion`, not both")
        who = f"sample {self.id!r}" if self.id is not None else "a sample without an id"
        if has_text:
            if not self.text.strip():
                raise InputDataError(f"{who} has empty text{_blank(self.text)}")
        elif has_pair:
            if self.completion is None or not self.completion.strip():
                raise InputDataError(f"{who} has an empty completion{_blank(self.completion)}")
        else:
            raise InputDataError(f"{who} has no text: give `text`, or `prompt` and `completion`")

    @property
    def is_pair(self) -> bool:
        return self.text is None

    @property
    def full_text(self) -> str:
        """The text the model reads (prompt, separator, completion for pairs)."""
        if self.is_pair:
            return f"{self.prompt or ''}{PROMPT_SEPARATOR}{self.completion}" if self.prompt else self.completion
        return self.text  # type: ignore[return-value]

    @classmethod
    def coerce(cls, item: Sample | str | dict[str, Any]) -> Sample:
        """Accept a Sample, a plain string, or a dict with text / prompt+completion keys."""
        if isinstance(item, Sample):
            return item
        if isinstance(item, str):
            return cls(text=item)
        if isinstance(item, dict):
            known = {k: item.get(k) for k in ("text", "prompt", "completion", "id", "label")}
            meta = {k: v for k, v in item.items() if k not in known}
            return cls(**known, meta=meta)
        raise InputDataError(f"cannot read a sample from {type(item).__name__}; give a str, dict or Sample")


@dataclass
class EncodedSample:
    """Token ids of one sample and which next-token predictions count.

    `counted[t]` says whether the prediction of token t+1 from position t counts (length len(input_ids) - 1).
    """

    input_ids: list[int]
    counted: list[bool]
    n_prompt_tokens: int
    truncated: bool

    @property
    def n_counted(self) -> int:
        return int(sum(self.counted))


def encode_sample(sample: Sample, tokenizer: Any, seq_len: int, counted_positions: str) -> EncodedSample:
    """Tokenise a sample, truncate it to `seq_len` tokens and mark the counted prediction positions."""
    if sample.is_pair and sample.prompt:
        prompt_ids = tokenizer(sample.prompt + PROMPT_SEPARATOR, add_special_tokens=True)["input_ids"]
        completion_ids = tokenizer(sample.completion, add_special_tokens=False)["input_ids"]
    else:
        prompt_ids = []
        completion_ids = tokenizer(sample.full_text, add_special_tokens=True)["input_ids"]
    ids = list(prompt_ids) + list(completion_ids)
    truncated = len(ids) > seq_len
    ids = ids[:seq_len]
    n_prompt = min(len(prompt_ids), len(ids))
    if counted_positions == "all" or not prompt_ids:
        counted = [True] * (len(ids) - 1)
    else:
        # position t predicts token t+1: it counts when token t+1 belongs to the completion
        counted = [t + 1 >= n_prompt for t in range(len(ids) - 1)]
    return EncodedSample(input_ids=ids, counted=counted, n_prompt_tokens=n_prompt, truncated=truncated)


@dataclass
class TokenBatch:
    """A right-padded batch: ids (B, T), attention mask (B, T), counted mask (B, T) aligned with positions."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    counted: torch.Tensor
    targets: torch.Tensor

    def to(self, device: torch.device | str) -> TokenBatch:
        """The batch with every tensor on `device`."""
        return TokenBatch(self.input_ids.to(device), self.attention_mask.to(device), self.counted.to(device),
                          self.targets.to(device))


def collate(encoded: list[EncodedSample], pad_id: int) -> TokenBatch:
    """Right-pad encoded samples into tensors; `targets[b, t]` is the next token (pad where not counted)."""
    if not encoded:
        raise InputDataError("cannot collate an empty batch")
    width = max(len(e.input_ids) for e in encoded)
    batch = len(encoded)
    ids = torch.full((batch, width), pad_id, dtype=torch.long)
    attn = torch.zeros((batch, width), dtype=torch.long)
    counted = torch.zeros((batch, width), dtype=torch.bool)
    targets = torch.zeros((batch, width), dtype=torch.long)
    for b, e in enumerate(encoded):
        n = len(e.input_ids)
        ids[b, :n] = torch.tensor(e.input_ids, dtype=torch.long)
        attn[b, :n] = 1
        if n > 1:
            counted[b, : n - 1] = torch.tensor(e.counted, dtype=torch.bool)
            targets[b, : n - 1] = ids[b, 1:n]
    return TokenBatch(input_ids=ids, attention_mask=attn, counted=counted, targets=targets)
