"""Field maps: which of a pool's columns hold the text, prompt + completion (with an optional Alpaca `input`), the
conversation, the id and the label, guessed from common column names or given."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import InputDataError

# candidate column names for FieldMap.guess, in order of preference (matched case-insensitively)
TEXT_NAMES = ("text", "content", "document", "passage", "sentence", "body")
_PROMPT_NAMES = ("prompt", "instruction", "question", "query", "input")
_COMPLETION_NAMES = ("completion", "response", "output", "answer", "generation", "target")
_MESSAGES_NAMES = ("messages",)
PLAIN_NAMES = (*TEXT_NAMES, *_PROMPT_NAMES, *_COMPLETION_NAMES)  # the columns of the forms that are not conversations
# the context column of instruction datasets (Alpaca's `input`, Dolly's `context`), appended to an `instruction`
_INPUT_NAMES = ("input", "context")
INPUT_SEPARATOR = "\n\n"
FIELD_NAMES = ("text", "prompt", "completion", "messages", "input", "id", "label")
_ID_NAMES = ("id", "sample_id", "uid", "idx", "_id")
_LABEL_NAMES = ("label", "labels", "is_positive")


@dataclass(frozen=True)
class FieldMap:
    """Column names in the user's file: `text`; or `prompt` + `completion` (prompt optional; `input`, optional, is
    appended to the prompt after a blank line, as Alpaca's instruction + input); or `messages`, a conversation (a
    list of {role, content} turns, or its JSON text in a CSV cell); `id`, `label` optional.

    When `text` is set, prompt/completion are ignored; `messages` excludes text, prompt and completion. The default
    names "prompt", "id" and "label" are used only when the file has such a column; any other name that is set must
    exist in the file.
    """

    text: str | None = None
    prompt: str | None = "prompt"
    completion: str | None = "completion"
    id: str | None = "id"
    label: str | None = "label"
    messages: str | None = None
    input: str | None = None

    @classmethod
    def guess(cls, columns: Sequence[str], **given: str | None) -> FieldMap:
        """Pick fields from common names (text/content, prompt/instruction/question, completion/response/output,
        messages, id, label; an `instruction` column's `input` or `context` column is appended to it, as Alpaca and
        Dolly rows mean it); names in `given` win (a given text field means plain text, a given completion or prompt
        field means pairs, a given messages field conversations). A `messages` column is read as conversations
        unless a text, prompt or completion field is given. Raises InputDataError listing the columns when no text
        column can be found."""
        cols = [str(c) for c in columns]
        given = {k: v for k, v in given.items() if v is not None}
        unknown = set(given) - set(FIELD_NAMES)
        if unknown:
            raise InputDataError(f"unknown field names {sorted(unknown)}; use {', '.join(FIELD_NAMES)}")

        def find(names: Iterable[str]) -> str | None:
            lower = {c.lower(): c for c in reversed(cols)}
            for name in names:
                if name in lower:
                    return lower[name]
            return None

        extra = {"id": given.get("id", find(_ID_NAMES)), "label": given.get("label", find(_LABEL_NAMES))}
        completion, text = given.get("completion", find(_COMPLETION_NAMES)), find(TEXT_NAMES)
        if "text" in given:
            return cls(text=given["text"], prompt=None, completion=None, **extra)
        messages = given.get("messages", find(_MESSAGES_NAMES))
        if messages is not None and ("messages" in given or not {"prompt", "completion"} & set(given)):
            return cls(text=None, prompt=None, completion=None, messages=messages, **extra)
        pair = "completion" in given or "prompt" in given or (
            completion is not None and (text is None or find(_PROMPT_NAMES) is not None))
        if pair and completion is not None:
            prompt = given.get("prompt", find(n for n in _PROMPT_NAMES if n != completion.lower()))
            context = given.get("input")
            if context is None and prompt is not None and prompt.lower() == "instruction":
                context = find(n for n in _INPUT_NAMES if n != completion.lower())
            return cls(text=None, prompt=prompt, completion=completion, input=context, **extra)
        if text is not None and not pair:
            return cls(text=text, prompt=None, completion=None, **extra)
        raise InputDataError(
            f"cannot tell which column holds the text among {cols}; name it with --text-field (plain text), "
            "--prompt-field/--completion-field (instruction -> response) or --messages-field (conversations)"
        )

    @property
    def is_pair(self) -> bool:
        return self.text is None and self.messages is None

    def used(self) -> set[str]:
        """Column names mapped onto Sample fields (the rest become metadata)."""
        if self.text is not None:
            names = [self.text]
        elif self.messages is not None:
            names = [self.messages]
        else:
            names = [self.prompt, self.completion, self.input]
        return {n for n in [*names, self.id, self.label] if n is not None}

    @classmethod
    def for_columns(cls, columns: Sequence[str], fields: FieldMap | dict[str, str | None] | None,
                    name: str) -> FieldMap:
        """`fields` (a map, names given as a dict, or None: all guessed) resolved against a file's `columns`; errors
        name the file `name`."""
        try:
            if fields is None or isinstance(fields, dict):
                fields = cls.guess(columns, **(fields or {}))
            return fields.resolve(columns)
        except InputDataError as exc:
            raise InputDataError(f"{name}: {exc}") from None

    def resolve(self, columns: Sequence[str]) -> FieldMap:
        """This map with optional default-named fields (prompt, id, label) that the file lacks set to None; raises
        for any other named field that is missing, listing the file's columns."""
        cols = set(map(str, columns))
        if self.text is not None:
            out = {"text": self.text, "prompt": None, "completion": None, "id": self.id, "label": self.label}
        elif self.messages is not None:
            if self.completion not in (None, FieldMap.completion) or self.prompt not in (None, FieldMap.prompt):
                raise InputDataError("the field map names a messages field and a prompt or completion field; a "
                                     "conversation holds its own turns: give one or the other")
            out = {"text": None, "prompt": None, "completion": None, "messages": self.messages, "id": self.id,
                   "label": self.label}
        elif self.completion is not None:
            out = {"text": None, "prompt": self.prompt, "completion": self.completion, "input": self.input,
                   "id": self.id, "label": self.label}
        else:
            raise InputDataError("the field map names neither a text field, a completion field nor a messages "
                                 "field")
        defaults = FieldMap()
        for name, col in list(out.items()):
            if col is None or col in cols:
                continue
            if name in ("prompt", "id", "label") and col == getattr(defaults, name):
                out[name] = None
                continue
            raise InputDataError(f"missing field {col!r} ({name}); the file's columns are {sorted(cols)}; "
                                 f"choose another with --{name}-field")
        return FieldMap(**out)
