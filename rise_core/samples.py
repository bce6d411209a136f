"""Samples (plain text, prompt + completion, or a conversation) and their tokenisation into model inputs with
counted positions.

How a pair or a conversation becomes tokens is a `Rendering` (`resolve_rendering` from the config's `chat_template`
and `chat_turns`): through the tokenizer's chat template (a pair is a one-turn conversation; the assistant turns'
tokens are the completion), or as plain text (prompt, newline, completion; a conversation's turns joined by
newlines). Plain text is never templated. Every consumer (index build, queries, the evaluation's readouts, fine-tunes)
tokenises through `encode_sample`, so they agree on the tokens and on which of them count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from .config import CHAT_TEMPLATES, CHAT_TURNS
from .errors import ConfigError, InputDataError

PROMPT_SEPARATOR = "\n"
ROLES = ("system", "user", "assistant", "tool")
# a template that marks the assistant's tokens itself (transformers' return_assistant_tokens_mask reads these)
_GENERATION_BLOCK = re.compile(r"\{%-?\s*generation\s*-?%\}")


def _blank(text: str | None) -> str:
    """' (only whitespace)' for a text of spaces, tabs or newlines, so it is not mistaken for a missing one."""
    return " (only whitespace)" if text else ""


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation: its role (system, user, assistant, tool) and its text."""

    role: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def conversation_turns(messages: Any, who: str = "the conversation") -> tuple[Turn, ...]:
    """Validated turns of a conversation given as a list of {role, content} dicts (or Turns): roles among `ROLES`,
    text content that is not blank, at least one assistant turn, and not an assistant turn first. Keys whose value is
    None are ignored (Parquet fills a struct's absent keys with None); any other key is refused, so nothing is
    dropped silently. InputDataError messages start with `who`."""
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise InputDataError(f"{who}: `messages` must be a list of {{role, content}} turns, got "
                             f"{type(messages).__name__}")
    if not messages:
        raise InputDataError(f"{who}: `messages` holds no turn")
    turns = []
    for i, turn in enumerate(messages, 1):
        if isinstance(turn, Turn):
            turn = turn.to_dict()
        if not isinstance(turn, dict):
            raise InputDataError(f"{who}: turn {i} is a {type(turn).__name__}, not a {{role, content}} object")
        extra = sorted(str(k) for k, v in turn.items() if k not in ("role", "content") and v is not None)
        if extra:
            raise InputDataError(f"{who}: turn {i} has keys {extra}; a turn holds only `role` and `content` (text)")
        role, content = turn.get("role"), turn.get("content")
        if role not in ROLES:
            raise InputDataError(f"{who}: turn {i} has role {role!r}; roles are {', '.join(ROLES)}")
        if not isinstance(content, str):
            got = "no content" if content is None else f"content of type {type(content).__name__}"
            raise InputDataError(f"{who}: turn {i} ({role}) has {got}; a turn's content is text")
        if not content.strip():
            raise InputDataError(f"{who}: turn {i} ({role}) has empty content{_blank(content)}")
        turns.append(Turn(role, content))
    if not any(t.role == "assistant" for t in turns):
        raise InputDataError(f"{who}: no assistant turn (nothing the model says to attribute)")
    if turns[0].role == "assistant":
        raise InputDataError(f"{who}: the first turn is the assistant's; a conversation opens with a system or user "
                             "turn (the assistant answers something)")
    return tuple(turns)


@dataclass(frozen=True)
class Sample:
    """One training example or query.

    Either `text` alone (plain text: every token after the first is predicted), `prompt` + `completion`
    (instruction -> response; by default only completion tokens count) or `messages`, a conversation: a list of
    {role, content} turns (system, user, assistant, tool) with at least one assistant turn, whose assistant turns are
    its completion. `id` identifies it in an index.
    """

    text: str | None = None
    prompt: str | None = None
    completion: str | None = None
    id: str | None = None
    label: Any = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    messages: tuple[Turn, ...] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        has_text = self.text is not None
        has_pair = self.prompt is not None or self.completion is not None
        who = f"sample {self.id!r}" if self.id is not None else "a sample without an id"
        wrong = next((k for k in ("text", "prompt", "completion") if not isinstance(getattr(self, k), (str, type(None)))),
                     None)
        if wrong is not None:
            raise InputDataError(f"{who}: {wrong} is of type {type(getattr(self, wrong)).__name__}, not a string")
        if self.messages is not None:
            if has_text or has_pair:
                raise InputDataError(f"{who} has `messages` and also `text` or `prompt` + `completion`; give one")
            object.__setattr__(self, "messages", conversation_turns(self.messages, who))
            return
        if has_text and has_pair:
            raise InputDataError("a sample has either `text` or `prompt` + `completion`, not both")
        if has_text:
            if not self.text.strip():
                raise InputDataError(f"{who} has empty text{_blank(self.text)}")
        elif has_pair:
            if self.completion is None or not self.completion.strip():
                raise InputDataError(f"{who} has an empty completion{_blank(self.completion)}")
        else:
            raise InputDataError(f"{who} has no text: give `text`, `prompt` and `completion`, or `messages`")

    @property
    def is_pair(self) -> bool:
        return self.text is None and self.messages is None

    @property
    def is_conversation(self) -> bool:
        return self.messages is not None

    @property
    def full_text(self) -> str:
        """The text the model reads without a chat template (prompt, separator, completion for pairs; a
        conversation's turns joined by the separator)."""
        if self.messages is not None:
            return PROMPT_SEPARATOR.join(t.content for t in self.messages)
        if self.is_pair:
            return f"{self.prompt or ''}{PROMPT_SEPARATOR}{self.completion}" if self.prompt else self.completion
        return self.text  # type: ignore[return-value]

    def with_id(self, sample_id: str | None) -> Sample:
        """This sample under another id (text fields, label and metadata kept)."""
        return Sample(text=self.text, prompt=self.prompt, completion=self.completion, id=sample_id, label=self.label,
                      meta=dict(self.meta), messages=self.messages)

    @classmethod
    def coerce(cls, item: Sample | str | dict[str, Any]) -> Sample:
        """Accept a Sample, a plain string, or a dict with text / prompt+completion / messages keys."""
        if isinstance(item, Sample):
            return item
        if isinstance(item, str):
            return cls(text=item)
        if isinstance(item, dict):
            known = {k: item.get(k) for k in ("text", "prompt", "completion", "id", "label")}
            meta = {k: v for k, v in item.items() if k not in known and k != "messages"}
            return cls(**known, meta=meta, messages=item.get("messages"))
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


@dataclass(frozen=True)
class Rendering:
    """How pairs and conversations become tokens: through the tokenizer's chat template (`template`) or as plain
    text; and which assistant turns are a conversation's completion (`turns`: 'all' or 'last')."""

    template: bool = False
    turns: str = "all"

    def __post_init__(self) -> None:
        if self.turns not in CHAT_TURNS:
            raise ConfigError(f"chat_turns must be one of {CHAT_TURNS}, got {self.turns!r}")

    @property
    def chat_template(self) -> str:
        """The config value that names this rendering exactly ('on' or 'off'), as a fine-tune records it."""
        return "on" if self.template else "off"


def has_chat_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def resolve_rendering(chat_template: str, chat_turns: str, tokenizer: Any, learned: str | None = None) -> Rendering:
    """The rendering a config's `chat_template` ('auto', 'on', 'off') and `chat_turns` mean for this tokenizer.

    'auto' is the rendering the model learned: `learned` ('on'/'off', what a `rise finetune` adapter in the weights
    was trained on) when given, else the chat template when the tokenizer has one. 'on' without a template is a
    ConfigError."""
    if chat_template not in CHAT_TEMPLATES:
        raise ConfigError(f"chat_template must be one of {CHAT_TEMPLATES}, got {chat_template!r}")
    has = has_chat_template(tokenizer)
    if chat_template == "on" and not has:
        raise ConfigError("chat_template 'on' needs a tokenizer with a chat template, and this model's has none; use "
                          "'auto' or 'off' (prompt, newline, completion)")
    if chat_template == "auto":
        use = (learned == "on") if learned in ("on", "off") else has
    else:
        use = chat_template == "on"
    return Rendering(template=use and has, turns=chat_turns)


def sample_turns(sample: Sample) -> tuple[Turn, ...] | None:
    """The turns a pair or conversation is rendered from (a pair: user prompt, assistant completion); None for plain
    text and for a pair without a prompt (read as the plain text of its completion)."""
    if sample.messages is not None:
        return sample.messages
    if sample.is_pair and sample.prompt:
        return (Turn("user", sample.prompt), Turn("assistant", sample.completion or ""))
    return None


def _plain_pieces(turns: Sequence[Turn], tokenizer: Any) -> tuple[list[int], list[int]]:
    """Token ids of the turns joined by the separator (each turn tokenised on its own: a pair gives exactly
    prompt + newline, then completion), and the index of the turn each token belongs to."""
    ids: list[int] = []
    owner: list[int] = []
    for i, turn in enumerate(turns):
        text = turn.content + (PROMPT_SEPARATOR if i < len(turns) - 1 else "")
        piece = tokenizer(text, add_special_tokens=i == 0)["input_ids"]
        ids += piece
        owner += [i] * len(piece)
    return ids, owner


def _chat_error(exc: Exception) -> InputDataError:
    return InputDataError(f"the model's chat template cannot render this conversation: {exc}")


def _render(tokenizer: Any, messages: list[dict[str, str]], generation_prompt: bool = False) -> str:
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)
    except Exception as exc:  # noqa: BLE001 - jinja's TemplateError, or a template's own raise_exception
        raise _chat_error(exc) from None


def _preamble(messages: list[dict[str, str]], text: str, ids: list[int], tokenizer: Any) -> int:
    """How many leading tokens the template writes before the first turn's content (a default system prompt, the
    first header): the same tokens in every sample, with the same predictions, so they say nothing about this one.
    Found by rendering the conversation with a marker for that content; 0 when the template does not allow it."""
    marker = "\ue000"  # a private-use character no text holds
    try:
        probe = _render(tokenizer, [{**messages[0], "content": marker}, *messages[1:]])
    except InputDataError:
        return 0
    at = probe.find(marker)
    if at < 0 or not text.startswith(probe[:at]):
        return 0
    head = list(tokenizer(probe[:at], add_special_tokens=False)["input_ids"])
    return len(head) if ids[:len(head)] == head else 0


def _templated(turns: Sequence[Turn], tokenizer: Any, which: str) -> tuple[list[int], list[bool], int]:
    """Token ids of a conversation rendered by the chat template, which tokens are the completion (the counted
    assistant turns, `which`: all, or the last; each from the end of its header to its end-of-turn marker), and the
    length of the template's preamble (`_preamble`).

    A template with `{% generation %}` blocks marks those tokens itself (transformers' assistant mask); for any other,
    each assistant turn is found by rendering the conversation up to it and counting tokens: up to the turn with
    the generation prompt (its header), and up to its end (trailing whitespace left out)."""
    messages = [t.to_dict() for t in turns]
    text = _render(tokenizer, messages)
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    preamble = _preamble(messages, text, ids, tokenizer)
    if _GENERATION_BLOCK.search(str(tokenizer.chat_template or "")):
        try:
            out = tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                                return_assistant_tokens_mask=True)
        except Exception as exc:  # noqa: BLE001 - as `_render`
            raise _chat_error(exc) from None
        if list(out["input_ids"]) != ids:
            raise InputDataError("the chat template's assistant mask is over other tokens than its rendering")
        mask = [bool(m) for m in out["assistant_masks"]]
        if which == "last":  # the last run of marked tokens: the last assistant turn's block
            end = max((t for t, m in enumerate(mask) if m), default=-1)
            start = end
            while start > 0 and mask[start - 1]:
                start -= 1
            mask = [start <= t <= end for t in range(len(mask))]
        return ids, mask, preamble

    def tokens_before(prefix: str) -> int:
        head = list(tokenizer(prefix, add_special_tokens=False)["input_ids"])
        if not text.startswith(prefix) or ids[:len(head)] != head:
            raise InputDataError("the model's chat template does not render a conversation's earlier turns as a "
                                 "prefix of the whole, so its assistant tokens cannot be told apart; use a template "
                                 "with {% generation %} blocks, or chat_template 'off'")
        return len(head)

    mask = [False] * len(ids)
    spans = [i for i, t in enumerate(turns) if t.role == "assistant"]
    for i in spans[-1:] if which == "last" else spans:
        start = tokens_before(_render(tokenizer, messages[:i], generation_prompt=True))
        end = tokens_before(_render(tokenizer, messages[:i + 1]).rstrip())
        mask[start:end] = [True] * (end - start)
    return ids, mask, preamble


def encode_sample(sample: Sample, tokenizer: Any, seq_len: int, counted_positions: str,
                  rendering: Rendering | None = None) -> EncodedSample:
    """Tokenise a sample (`rendering`: default plain text, no template), truncate it to `seq_len` tokens and mark
    the counted prediction positions: every predicted token ('all'; under a chat template, from the sample's first
    turn on: the template's preamble before it is the same in every sample), or the completion's ('completion': a
    pair's completion, a conversation's assistant turns as `rendering.turns` says)."""
    rendering = rendering or Rendering()
    turns = sample_turns(sample)
    preamble = 0
    if turns is None:
        ids = list(tokenizer(sample.full_text, add_special_tokens=True)["input_ids"])
        completion = [True] * len(ids)
    elif rendering.template:
        ids, completion, preamble = _templated(turns, tokenizer, rendering.turns)
    else:
        ids, owner = _plain_pieces(turns, tokenizer)
        counted_turns = [i for i, t in enumerate(turns) if t.role == "assistant"]
        if rendering.turns == "last":
            counted_turns = counted_turns[-1:]
        completion = [o in counted_turns for o in owner]
    truncated = len(ids) > seq_len
    ids, completion = ids[:seq_len], completion[:seq_len]
    n_prompt = next((t for t, c in enumerate(completion) if c), len(ids))
    if counted_positions == "all" or turns is None:
        counted = [t + 1 >= preamble for t in range(len(ids) - 1)]
    else:
        # position t predicts token t+1: it counts when token t+1 belongs to the completion
        counted = completion[1:]
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
