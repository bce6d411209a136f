"""Per-query channel weights without labels: lean on the gradient channels when the query surprises the model.

Which RISE channel finds the right training rows depends on the kind of question (docs/EVALUATION.md): the
representation (HS) wins topical questions, whose answers read like the pool, while the gradient channels (RH, GH)
win behaviours the model had to learn from a few specific rows (a backdoor's frame, a refusal), which surprise it.
The rule measures that surprise directly, from what every index already stores: the query's mean next-token loss
minus the pool's median loss, in nats per token, over the same counted positions. A logistic gate turns it into

    g = sigmoid(SLOPE * (surprise - MIDPOINT));  lambda_rh = 1.4 g,  lambda_gh = g,  lambda_hs = 1 - g,

so a query the model finds as ordinary as the pool is scored by HS, and one it finds surprising by RH + GH.

Evidence (studies/query_channels.py; auPRC@10 of the embedded SmolLM2-135M, prospective): SLOPE and MIDPOINT
were chosen among 6 midpoints x 4 slopes x 2 HS weights on the tune sets only (the bundled pools and the first halves
of dev-finmed, dev-brainrot, dev-sentiment), with the label-free alternatives tried beside it (top-k sharpness, the
coherence of each channel's top rows, cross-channel agreement, rank fusion), which did no better than the fixed
default there. The report sets no choice saw are in docs/EVALUATION.md, "One ranking for every kind of question".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .config import PRESET_SCORING, AppliedScoring, ScoreOptions, index_preset_line, preset_scoring
from .errors import InputDataError

SLOPE = 4.0
"""per nat per token: how sharply the gate turns (chosen on the tune sets)."""
MIDPOINT = 0.5
"""nats per token above the pool's median loss at which the gate weighs both sides equally (chosen on the tune sets)."""
GRADIENT_WEIGHTS = {"rh": 1.4, "gh": 1.0}
"""RH : GH inside the gradient side: the fixed default's ratio (chosen on the tune sets, docs/EVALUATION.md)."""


@dataclass(frozen=True)
class ChannelChoice:
    """What the per-query rule decided for one query (or query set), and why, for the pages and the CLI."""

    surprise: float
    """query mean loss minus the pool's median loss (nats per token); nan when either is unknown."""
    gate: float
    """weight of the gradient side (RH + GH), in [0, 1]; HS gets 1 - gate."""
    options: ScoreOptions
    """the fixed weights this query is scored with."""
    query_loss: float = float("nan")
    pool_loss: float = float("nan")

    @property
    def leaning(self) -> str:
        """'gradient (RH + GH)', 'representation (HS)' or 'both'."""
        if self.gate >= 2 / 3:
            return "gradient (RH + GH)"
        if self.gate <= 1 / 3:
            return "representation (HS)"
        return "both"

    @property
    def reason(self) -> str:
        """One line: which channels, and the surprise that chose them."""
        if math.isnan(self.surprise):
            return "fixed weights: the query's or the pool's loss is unknown, so the per-query rule could not run"
        w = self.options
        feel = "surprises the model more than" if self.surprise > MIDPOINT else "reads like"
        return (f"leaned on {self.leaning}: the query's loss is {self.query_loss:.2f} nats/token against the pool's "
                f"median {self.pool_loss:.2f} (surprise {self.surprise:+.2f}), so it {feel} the pool; weights "
                f"RH {w.lambda_rh:.2f}, GH {w.lambda_gh:.2f}, HS {w.lambda_hs:.2f}")

    def as_dict(self) -> dict:
        return {"surprise": self.surprise, "gate": self.gate, "leaning": self.leaning, "query_loss": self.query_loss,
                "pool_loss": self.pool_loss, "lambda_rh": self.options.lambda_rh,
                "lambda_gh": self.options.lambda_gh, "lambda_hs": self.options.lambda_hs, "reason": self.reason}


def gate(surprise: float) -> float:
    """The gradient side's weight for a surprise (nats per token above the pool's median loss)."""
    x = SLOPE * (float(surprise) - MIDPOINT)
    return 1.0 / (1.0 + math.exp(-x)) if x >= -700 else 0.0


def pool_loss(losses: torch.Tensor | None) -> float:
    """THE pool's reference loss, for in-memory features and for an index (`RiseIndex.reference_loss` reads its stored
    losses and calls this): the median, in float64, of the samples' float32 mean losses (samples with no counted
    token skipped; an even count takes the mean of the middle two). Kept over DuckDB's median of the FLOAT column,
    which rounds that mean to float32, because the in-memory path has no SQL engine and one function cannot drift."""
    if losses is None:
        return float("nan")
    x = torch.as_tensor(losses, dtype=torch.float64)
    x = x[torch.isfinite(x)]
    return float(np.median(x.numpy())) if x.numel() else float("nan")


def choose(options: ScoreOptions, query_loss: float, reference_loss: float, has_hs: bool = True) -> ChannelChoice:
    """The per-query weights for `options` with weighting='auto' (other options are returned as they are)."""
    if options.weighting != "auto":
        return ChannelChoice(float("nan"), float("nan"), options)
    fixed = dataclasses.replace(options, weighting="fixed")
    q, p = float(query_loss), float(reference_loss)
    if not (math.isfinite(q) and math.isfinite(p)):
        return ChannelChoice(float("nan"), float("nan"), fixed, q, p)
    surprise = q - p
    g = gate(surprise) if has_hs else 1.0  # without HS the gradient side is all there is
    chosen = dataclasses.replace(fixed, lambda_rh=GRADIENT_WEIGHTS["rh"] * g, lambda_gh=GRADIENT_WEIGHTS["gh"] * g,
                                 lambda_hs=(1.0 - g) if has_hs else 0.0)
    if not chosen.weighted:  # g underflowed to exactly 0 or 1 on a channel-poor index: keep something to rank with
        chosen = dataclasses.replace(chosen, lambda_rh=GRADIENT_WEIGHTS["rh"], lambda_gh=GRADIENT_WEIGHTS["gh"])
    return ChannelChoice(surprise, g, chosen, q, p)


def query_loss(losses: torch.Tensor | None) -> float:
    """A query set's loss: the mean of its queries' mean losses (nan when unknown)."""
    if losses is None or len(losses) == 0:
        return float("nan")
    x = torch.as_tensor(losses, dtype=torch.float64)
    x = x[torch.isfinite(x)]
    if not x.numel():
        raise InputDataError("no query has a counted token to measure its loss on")
    return float(x.mean())


@dataclass(frozen=True)
class Weighting:
    """How one query's (or query set's) scoring was resolved (`resolve`): the options asked for as applied to the
    channels present, the weights then chosen for the query, and the line saying the index's preset was used."""

    applied: AppliedScoring
    """the options asked for (given, or the index's preset) as applied to the channels present (`notes`)."""
    choice: ChannelChoice
    """the fixed weights scored (the per-query rule's when weighting='auto') and why."""
    preset_note: str = ""
    """the line saying the index's build preset chose the scoring ('' when options were given)."""

    @property
    def options(self) -> ScoreOptions:
        """The fixed weights every channel sum of this query uses."""
        return self.choice.options

    @property
    def notes(self) -> list[str]:
        return self.applied.notes


def resolve(options: ScoreOptions | None, channels: Iterable[str], query_losses: torch.Tensor | None,
            reference_loss: Callable[[], float], build_preset: str | None = None, change: str = "pass options",
            overrides: Mapping[str, Any] | None = None) -> Weighting:
    """THE resolution of a query's weights, on every path (library, CLI, pages): `options` (None: the scoring of
    `build_preset`, the preset the index was built for, with a line saying so (`change`: how to choose another); else
    ScoreOptions()), with the non-None `overrides` (flags, sliders: `ScoreOptions.with_overrides`), applied to the `channels` present (`ScoreOptions.for_channels`: a missing
    channel's weight is dropped with a note), then, with weighting='auto', the per-query rule (`choose`) against
    `reference_loss()` (the pool's median loss, asked for only then), applied to the channels again.

    Before any query (`query_losses` None: the CLI's options) the choice is unknown; `applied` is the scoring asked
    for."""
    channels = tuple(channels)
    said = ""
    if options is None:
        if build_preset in PRESET_SCORING:
            said = index_preset_line(build_preset, change)
            options = preset_scoring(build_preset)
        else:
            options = ScoreOptions()
    if overrides:
        options = options.with_overrides(**overrides)
    applied = options.for_channels(channels)
    q = query_loss(query_losses)
    p = reference_loss() if applied.options.weighting == "auto" else float("nan")
    choice = choose(applied.options, q, p, "hs" in channels)
    return Weighting(applied, dataclasses.replace(choice, options=choice.options.for_channels(channels).options), said)
