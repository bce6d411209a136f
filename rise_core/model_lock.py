"""The one lock around model loads in this process (`rise_core.models` re-exports it as `models.MODEL_LOAD_LOCK`).

It sits below `models` and `default_model`, both of which load weights with it held."""

from __future__ import annotations

import threading

MODEL_LOAD_LOCK = threading.RLock()
"""Held around every `from_pretrained`, adapter merge and LoRA wrapping in this process. transformers builds a model
under process-global state (torch's default dtype, the meta device of its empty-weight init, patched initialisers),
so two loads at once in threads corrupt each other ("Cannot copy out of meta tensor"): two sessions of the app, or a
fine-tune loading its copy of the model, load one after the other instead. Re-entrant, so a load may call another
(converting the embedded default, merging an adapter)."""
