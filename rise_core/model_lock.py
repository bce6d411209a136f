"""The one lock around torch's process-global state (`rise_core.models` re-exports it as `models.MODEL_LOAD_LOCK`):
model loads, and the global random generator (`seeded_global_rng`).

It sits below `models` and `default_model`, both of which load weights with it held."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import torch

MODEL_LOAD_LOCK = threading.RLock()
"""Held around every `from_pretrained`, adapter merge and LoRA wrapping in this process. transformers builds a model
under process-global state (torch's default dtype, the meta device of its empty-weight init, patched initialisers),
so two loads at once in threads corrupt each other ("Cannot copy out of meta tensor"): two sessions of the app, or a
fine-tune loading its copy of the model, load one after the other instead. Re-entrant, so a load may call another
(converting the embedded default, merging an adapter). `seeded_global_rng` holds it too."""


@contextlib.contextmanager
def seeded_global_rng(seed: int) -> Iterator[None]:
    """torch's global random generator seeded with `seed` for this block alone, with MODEL_LOAD_LOCK held.

    Sampled decoding (`generate` takes no generator), dropout in training and the initialisation of new layers all draw
    from the one process-wide generator, so a seeded sampled answer or a fine-tune's LoRA initialisation and dropout
    masks would change with whatever another thread (another session of the app, a counterfactual retrain) seeded or
    drew meanwhile. Every path in rise_core that seeds it does so in this block: the draws of one block never interleave
    with another's or with a model load's, and the generator's state before the block is restored after it."""
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with MODEL_LOAD_LOCK, torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield
