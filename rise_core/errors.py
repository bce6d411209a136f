"""The project's exception hierarchy: every error a user can cause is a `RiseError` with a message saying what to do."""

from __future__ import annotations


class RiseError(Exception):
    """Base class for errors meant to be shown to a user (CLI message, `st.error` in the app)."""


class ConfigError(RiseError, ValueError):
    """A configuration value is impossible or inconsistent."""


class ModelLoadError(RiseError):
    """A model or tokenizer could not be loaded (missing package, bad path, unsupported architecture)."""


class InputDataError(RiseError, ValueError):
    """Input samples or files are malformed (missing field, empty text, bad encoding, duplicate ids)."""


class IndexMismatchError(RiseError):
    """An index was built with another model or RISE configuration than the one requested."""


class IndexStoreError(RiseError):
    """The index file is missing, corrupted, foreign, read-only or otherwise unusable."""


class FinetuneError(RiseError):
    """A fine-tune cannot start or resume (foreign checkpoint, existing output, missing peft)."""


class DistributedBuildError(RiseError):
    """A sharded build could not run: Ray missing or unreachable, workers that cannot start or keep dying."""
