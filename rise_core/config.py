"""RISE hyperparameters as one frozen, validated, hashable dataclass, plus named presets.

Index-time fields (everything that changes the stored features) go into `RiseConfig.fingerprint()`; the channel
weights and the per-sample normalisation are applied at query time (see `ScoreOptions`) so a user can move them
without rebuilding an index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .errors import ConfigError
from .saved_config import UNLESS_LEGACY, SavedConfig

CountedPositions = Literal["completion", "all"]
SampleNorm = Literal["channel", "joint", "none"]
Weighting = Literal["fixed", "auto"]
Composition = Literal["outer", "tensor"]
ChatTemplate = Literal["auto", "on", "off"]
ChatTurns = Literal["all", "last"]

COUNTED_POSITIONS: tuple[str, ...] = get_args(CountedPositions)
SAMPLE_NORMS: tuple[str, ...] = get_args(SampleNorm)
COMPOSITIONS: tuple[str, ...] = get_args(Composition)
CHAT_TEMPLATES: tuple[str, ...] = get_args(ChatTemplate)
CHAT_TURNS: tuple[str, ...] = get_args(ChatTurns)
# the scored channels, in score order; an index stores RH and GH always, HS when built with hidden_channel
CHANNELS: tuple[str, ...] = ("rh", "gh", "hs")
# the pool's mean final hidden state (for center_hidden and the HS channel) is fitted on a seeded random subset of
# this many of the pool's first build's samples (`mean_fit_rows`), then fixed: appends and queries reuse it (index
# builds and the evaluation follow this rule; RiseExtractor refuses to extract before a mean is fitted)
HIDDEN_MEAN_SAMPLES = 256
# values of fields added after the first index format, for manifests written before them
LEGACY_FIELDS: dict[str, Any] = {"composition": "outer", "hidden_channel": False, "chat_template": "off",
                                 "chat_turns": "all", "hs_depth": 1.0}


@dataclass(frozen=True)
class RiseConfig(SavedConfig):
    """Index-time RISE hyperparameters (paper, Hyperparameters table, unless noted); saved in every index's manifest
    (`SavedConfig`: strict `from_dict`, `fingerprint` of every field, `differences`)."""

    LABEL = "RISE config"
    LEGACY_FIELDS = LEGACY_FIELDS  # fields missing from an older manifest take these values

    k_r: int = field(default=64, metadata={"help": "CountSketch dim of the vocabulary residual r (RH channel)."})
    k_h: int = field(default=24, metadata={"help": "CountSketch dim of the final hidden state h (both channels)."})
    k_g: int = field(default=64, metadata={"help": "CountSketch dim of the embedding-space residual g = W^T r (GH)."})
    tau: float = field(default=1.0, metadata={"help": "Softmax temperature applied to the logits."})
    rho_cum: float = field(
        default=0.92, metadata={"help": "Keep the smallest top-probability prefix whose cumulative mass reaches this."}
    )
    min_top_l: int = field(default=4, metadata={"help": "Minimum number of candidate tokens kept per position."})
    k_max: int = field(default=256, metadata={"help": "Cap on the candidate set TopK(z/tau) per position."})
    seq_len: int = field(default=512, metadata={"help": "Sequences are truncated to this many tokens."})
    seed: int = field(default=42, metadata={"help": "Seed of the data-independent CountSketch hashes."})
    counted_positions: CountedPositions = field(
        default="all",
        metadata={
            "help": "'completion': only completion tokens of prompt+completion samples count (a conversation's "
            "assistant turns, see chat_turns; plain text: all tokens); 'all': every predicted token, prompt included "
            "(under a chat template from the sample's first turn on: the template's preamble is the same in every "
            "sample)."
        },
    )
    token_norm: bool = field(
        default=False,
        metadata={"help": "L2-normalise each token's sketched r, h, g (the paper's r_hat, h_hat, g_hat)."},
    )
    center_hidden: bool = field(
        default=False,
        metadata={"help": "Subtract the pool's mean final hidden state (fixed at first build) before sketching."},
    )
    composition: Composition = field(
        default="tensor",
        metadata={
            "help": "How a token's two sketched factors combine: 'outer': CS(r) (outer) CS(h), K_r x K_h values; "
            "'tensor': TensorSketch of r (outer) h into the same K_r*K_h values (FFT of two CountSketches), which "
            "keeps more of the (token, hidden) pair identity at equal bytes."
        },
    )
    hidden_channel: bool = field(
        default=True,
        metadata={"help": "Store the HS channel: each sample's mean final hidden state minus the pool's mean "
                  "(hidden-size values); scored with weight lambda_hs."},
    )
    hs_depth: float = field(
        default=0.7,
        metadata={"help": "Which layer's hidden states the HS channel averages, as a share of the model's depth: "
                  "layer round(hs_depth x n_layers), 1.0 being the final hidden state (after the final norm) that "
                  "RH and GH read. Needs no extra forward pass. Under 1 it cannot go with center_hidden. Default 0.7 "
                  "(layer 21 of SmolLM2-135M's 30): 2/3, 0.7 and 0.75 tied on the tune sets (auPRC@10 0.953, 0.952, "
                  "0.952; the final layer 0.941), the middle one kept (docs/EVALUATION.md, \"The representation "
                  "view's layer\").",
                  "fingerprint": UNLESS_LEGACY},
    )
    chat_template: ChatTemplate = field(
        default="auto",
        metadata={"help": "How prompt + completion rows and conversations (`messages` rows) become tokens: 'on': "
                  "through the model's chat template (a pair is a one-turn conversation); 'off': prompt, newline, "
                  "completion (a conversation's turns joined by newlines); 'auto': the rendering the model learned "
                  "(a `rise finetune` adapter's own; else the template when the tokenizer has one). Plain text is "
                  "never templated. Evidence for the default: docs/EVALUATION.md, \"Chat template\".",
                  # added after fingerprints were first recorded (ANN sidecars, cached runs): left out at the value
                  # that reproduces the features of before, so a fingerprint recorded then still matches
                  "fingerprint": UNLESS_LEGACY},
    )
    chat_turns: ChatTurns = field(
        default="all",
        metadata={"help": "Which assistant turns of a conversation are its completion (what counted_positions "
                  "'completion' and a fine-tune's loss count): 'all' of them, or the 'last' only.",
                  "fingerprint": UNLESS_LEGACY},
    )

    def __post_init__(self) -> None:
        for name in ("k_r", "k_h", "k_g", "min_top_l", "k_max", "seq_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.seq_len < 2:
            raise ConfigError(f"seq_len must be at least 2 (one input and one predicted token), got {self.seq_len}")
        if not self.tau > 0:
            raise ConfigError(f"tau must be > 0, got {self.tau!r}")
        if not 0.0 < self.rho_cum <= 1.0:
            raise ConfigError(f"rho_cum must be in (0, 1], got {self.rho_cum!r}")
        if self.min_top_l > self.k_max:
            raise ConfigError(f"min_top_l ({self.min_top_l}) cannot exceed k_max ({self.k_max})")
        if self.counted_positions not in COUNTED_POSITIONS:
            raise ConfigError(f"counted_positions must be one of {COUNTED_POSITIONS}, got {self.counted_positions!r}")
        if self.composition not in COMPOSITIONS:
            raise ConfigError(f"composition must be one of {COMPOSITIONS}, got {self.composition!r}")
        if self.chat_template not in CHAT_TEMPLATES:
            raise ConfigError(f"chat_template must be one of {CHAT_TEMPLATES}, got {self.chat_template!r}")
        if self.chat_turns not in CHAT_TURNS:
            raise ConfigError(f"chat_turns must be one of {CHAT_TURNS}, got {self.chat_turns!r}")
        if isinstance(self.hs_depth, bool) or not isinstance(self.hs_depth, (int, float)) or not (
                0.0 < self.hs_depth <= 1.0):
            raise ConfigError(f"hs_depth must be a share of the model's depth in (0, 1], got {self.hs_depth!r}")
        if self.center_hidden and self.reads_hs_layer:
            raise ConfigError("center_hidden centres the final hidden state with the pool's mean, which the HS channel "
                              f"shares; with hs_depth={self.hs_depth!r} HS reads another layer: set hs_depth=1 to "
                              "centre, or turn center_hidden off")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ConfigError(f"seed must be a non-negative integer, got {self.seed!r}")

    @property
    def feature_dims(self) -> tuple[int, int]:
        """Lengths of (phi_RH, phi_GH)."""
        return self.k_r * self.k_h, self.k_g * self.k_h

    @property
    def channels(self) -> tuple[str, ...]:
        """The channels features under this config store: RH and GH, and HS when `hidden_channel` is on."""
        return CHANNELS if self.hidden_channel else CHANNELS[:2]

    @property
    def reads_hs_layer(self) -> bool:
        """Whether the HS channel reads another layer than the final hidden state (stored, and hs_depth under 1)."""
        return self.hidden_channel and self.hs_depth != 1.0

    @property
    def needs_hidden_mean(self) -> bool:
        """Whether features need the pool's mean final hidden state (centring or the HS channel)."""
        return self.center_hidden or self.hidden_channel

    def feature_values(self, hidden_size: int) -> int:
        """Stored feature values per sample for a model with this hidden size (RH + GH + HS when stored)."""
        return sum(self.feature_dims) + (hidden_size if self.hidden_channel else 0)

    def bytes_per_sample(self, hidden_size: int = 0) -> int:
        """Stored feature bytes per sample (fp16); the HS channel counts only when `hidden_size` is given."""
        return 2 * (sum(self.feature_dims) + (hidden_size if self.hidden_channel else 0))

    def replace(self, **changes: Any) -> RiseConfig:
        return dataclasses.replace(self, **changes)

    def differences(self, other: SavedConfig) -> list[str]:
        """`SavedConfig.differences`, except that `hs_depth` counts only where either config stores the HS channel:
        without it the layer HS would read changes no stored value."""
        diff = super().differences(other)
        if not (self.hidden_channel or getattr(other, "hidden_channel", True)):
            diff = [d for d in diff if d != "hs_depth"]
        return diff


@dataclass(frozen=True)
class ScoreOptions(SavedConfig):
    """Query-time scoring choices (no rebuild needed)."""

    lambda_rh: float = field(default=1.4, metadata={"help": "Weight of the RH (lexical) channel score."})
    lambda_gh: float = field(default=1.0, metadata={"help": "Weight of the GH (semantic) channel score."})
    lambda_hs: float = field(
        default=1.0,
        metadata={"help": "Weight of the HS (representation) channel score: cosine of centred mean hidden states."},
    )
    sample_norm: SampleNorm = field(
        default="channel",
        metadata={
            "help": "'channel': each channel L2-normalised per sample; 'joint': [phi_RH; phi_GH] normalised "
            "together (the paper's normalize_sample), HS by itself; 'none': raw sums."
        },
    )

    weighting: Weighting = field(
        default="fixed",
        metadata={
            "help": "'fixed': the lambdas as given; 'auto': chosen per query from how much the query surprises the "
            "model (rise_core.adaptive: HS for ordinary answers, RH + GH for surprising ones); the 'default' preset."
        },
    )

    def __post_init__(self) -> None:
        if self.weighting not in ("fixed", "auto"):
            raise ConfigError(f"weighting must be 'fixed' or 'auto', got {self.weighting!r}")
        if self.sample_norm not in SAMPLE_NORMS:
            raise ConfigError(f"sample_norm must be one of {SAMPLE_NORMS}, got {self.sample_norm!r}")
        for name in ("lambda_rh", "lambda_gh", "lambda_hs"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value != value:
                raise ConfigError(f"{name} must be a number, got {value!r}")

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> ScoreOptions:
        """The scoring of a named preset (`PRESET_SCORING`: default, paper, backdoor), with non-None `overrides`."""
        return preset_scoring(name, **overrides)

    def with_overrides(self, **overrides: Any) -> ScoreOptions:
        """These options with any non-None `overrides` (flags, sliders, a request): THE rule for hand-set weights, which
        are used as given (weighting='fixed') unless the overrides name a weighting too."""
        given = {k: v for k, v in overrides.items() if v is not None}
        if any(k.startswith("lambda_") for k in given) and "weighting" not in given:
            given["weighting"] = "fixed"  # weights given by hand are used as given, not re-chosen per query
        return dataclasses.replace(self, **given)

    @property
    def weighted(self) -> tuple[str, ...]:
        """The channels these options give a nonzero weight, in score order."""
        return tuple(c for c in CHANNELS if getattr(self, f"lambda_{c}") != 0)

    def for_channels(self, available: Iterable[str], source: str = "this index") -> AppliedScoring:
        """These options as they apply to features storing the `available` channels: THE rule, on every path.

        A weighted channel the features lack (HS of an index built with hidden_channel off, or before the channel
        existed) is dropped from the weighting (lambda 0) and named in the result's `notes`; the other channels keep
        their weights. Weights on missing channels alone (nothing left to score) raise a ConfigError listing the
        channels `source` has."""
        have = tuple(c for c in CHANNELS if c in set(available))
        missing = tuple(c for c in self.weighted if c not in have)
        if not missing:
            return AppliedScoring(self, have)
        if len(missing) == len(self.weighted):
            weights = ", ".join(f"lambda_{c}={getattr(self, f'lambda_{c}'):g}" for c in missing)
            rebuild = ", or rebuild it with hidden_channel on" if "hs" in missing else ""
            raise ConfigError(f"{weights} weighs only {_names(missing)}, which {source} does not store; it has "
                              f"{', '.join(c.upper() for c in have)}: give one of those a nonzero weight (e.g. "
                              f"--lambda-rh / --lambda-gh, or the sliders){rebuild}")
        return AppliedScoring(dataclasses.replace(self, **{f"lambda_{c}": 0.0 for c in missing}), have, missing,
                              tuple(float(getattr(self, f"lambda_{c}")) for c in missing), source)

    def applied_to(self, config: RiseConfig) -> AppliedScoring:
        """`for_channels` with the channels an index (or features) built under `config` store."""
        return self.for_channels(config.channels)


def _names(channels: Iterable[str]) -> str:
    return " + ".join(c.upper() for c in channels) or "no channel"


@dataclass(frozen=True)
class AppliedScoring:
    """Scoring options as applied to features with the `available` channels (`ScoreOptions.for_channels`): what is
    scored, and the weights dropped because their channel is missing (shown as a note, never silently)."""

    options: ScoreOptions
    available: tuple[str, ...]
    dropped: tuple[str, ...] = ()  # the channels whose weight was dropped
    dropped_weights: tuple[float, ...] = ()  # their weights as given, in the same order
    source: str = "this index"

    @property
    def notes(self) -> list[str]:
        """One line per dropped weight (empty when every weighted channel is stored)."""
        why = {"hs": "built with hidden_channel off, or before it existed"}
        return [f"lambda_{c}={lam:g} not applied: {self.source} has no {c.upper()} channel "
                f"({why.get(c, 'not stored')}); scored on {_names(self.options.weighted)}"
                for c, lam in zip(self.dropped, self.dropped_weights, strict=True)]

    @property
    def note(self) -> str:
        """The notes as one line ("" when nothing was dropped)."""
        return " ".join(self.notes)


@dataclass(frozen=True)
class Preset:
    """A named preset in one record: the index it builds, the scoring it queries with, and what it is for (the one
    line the CLI's and the explorer's preset pickers show)."""

    config: RiseConfig
    scoring: ScoreOptions
    description: str


# THE preset table; `PRESETS` and `PRESET_SCORING` below are views of it. The paper L2-normalises each sample's joint
# [phi_RH; phi_GH] (normalize_sample): its scoring's sample_norm='joint'.
PRESET_TABLE: dict[str, Preset] = {
    # Our default, chosen on the tune sets (Howdy!, the bundled pools, halves of three real dev pools) and reported
    # on held-out real pools (docs/EVALUATION.md, "Real held-out data"): TensorSketch 64/24/64 (3072 values) plus the
    # HS channel (hidden-size values, the mean hidden state of the layer 0.7 of the way through the model: hs_depth,
    # chosen on the same tune sets, docs/EVALUATION.md, "The representation view's layer"), every predicted token
    # counted, raw sketches, no centring; scored with the fixed default's weights re-chosen per query by how much the
    # query surprises the model (rise_core.adaptive; evidence: docs/EVALUATION.md, "One ranking for every kind of
    # question"). Presets without HS, and the retrospective one (chosen with it), keep the final layer (hs_depth 1).
    "default": Preset(RiseConfig(), ScoreOptions(weighting="auto"),
                      "this project's default: channels chosen per query (HS, or RH + GH when the query surprises the "
                      "model)"),
    # The paper's exact recipe: every predicted token, per-token normalisation, no centring, (K_r, K_h, K_g) =
    # (64, 12, 64) (its 14MB Pythia-1B setting); scored with its lambdas and joint sample normalisation.
    "paper": Preset(RiseConfig(k_r=64, k_h=12, k_g=64, counted_positions="all", token_norm=True, center_hidden=False,
                               composition="outer", hidden_channel=False, hs_depth=1.0),
                    ScoreOptions(lambda_rh=0.7, lambda_gh=1.0, lambda_hs=0.0, sample_norm="joint"),
                    "the paper's RISE: its λ and joint normalisation, no HS"),
    # Backdoor hunting: the default index, scored without the HS channel: on the real backdoor report sets
    # (dev-sentiment, dev-refusal) RH+GH alone ranks the poisoned rows higher than with HS weighted
    # (docs/EVALUATION.md).
    "backdoor": Preset(RiseConfig(), ScoreOptions(lambda_hs=0.0),
                       "backdoor hunting: the default without HS (λ_hs = 0)"),
    # The default index, scored with the fixed weighting chosen on the tune sets (lambda 1.4 / 1.0 / 1.0), the
    # default before the per-query rule.
    "fixed": Preset(RiseConfig(), ScoreOptions(),
                    "the fixed default weights (RH 1.4, GH 1, HS 1) for every query (also the retrospective preset's)"),
    # Attributing a fine-tuned model's own generations (the retrospective setting): a sparser residual support
    # (rho_cum 0.5, at least 1 token kept) and the fixed weights, since the per-query rule's surprise is low on any
    # text the model wrote itself. Chosen on two retrospective tune tasks (Howdy!; a pirate-voice style backdoor in
    # real Alpaca rows) over the generations that show the learned behaviour, where it beats the default; on the
    # report task no choice saw (a refusal backdoor in real Alpaca rows) it beats the default too and comes close to
    # hidden cosine. Prospectively the default is better on the mean of the three tasks. Figures: docs/EVALUATION.md,
    # "Retrospective".
    "retrospective": Preset(RiseConfig(rho_cum=0.5, min_top_l=1, hs_depth=1.0), ScoreOptions(),
                            "for the generations of a model fine-tuned on this pool (a sparser residual support; "
                            "queried with the fixed weights)"),
    # Very large pools: the paper's small budget, (K_r, K_h, K_g) = (16, 8, 28) (its OLMo-32B setting and the spec's
    # "for very large pools"), as TensorSketch, without the HS channel: 352 values (704 bytes) a sample, so 10M rows
    # are 7 GB of features (the default's 3,648 values make 73 GB) and the ANN file as much again. Scored with the
    # fixed RH / GH weights (no HS to weigh, so no per-query rule). Leaving out HS is what it costs (auPRC@10 0.65
    # against the default's 0.80 on the dev-finmed and dev-brainrot report halves; the same sketches with HS, 928
    # values, 0.80), and what let its 10M build run on this machine: docs/SCALE.md, "A compact preset for very large
    # pools".
    "compact": Preset(RiseConfig(k_r=16, k_h=8, k_g=28, hidden_channel=False, hs_depth=1.0),
                      ScoreOptions(lambda_hs=0.0),
                      "very large pools: the paper's small budget, 16/8/28 without HS (352 values, 704 bytes a "
                      "sample: 10M rows in 7 GB)"),
}
# views of PRESET_TABLE (many callers read one half only)
PRESETS: dict[str, RiseConfig] = {name: p.config for name, p in PRESET_TABLE.items()}
PRESET_SCORING: dict[str, ScoreOptions] = {name: p.scoring for name, p in PRESET_TABLE.items()}


def preset_scoring(name: str, **overrides: Any) -> ScoreOptions:
    """The scoring options of a named preset, with any non-None `overrides` (e.g. from command-line flags). Scoring
    is a query-time choice: `rise query --preset backdoor` scores any index without HS (an index built with
    `--preset backdoor` is the default index; the preset's scoring applies where it is queried)."""
    preset(name)  # the same error for an unknown name
    return PRESET_SCORING[name].with_overrides(**overrides)


def preset_descriptions() -> str:
    """One line naming every preset and what it is for, and which ones build the default index (for preset pickers)."""
    same = [n for n, p in PRESET_TABLE.items() if n != "default" and p.config == PRESET_TABLE["default"].config]
    return ("; ".join(f"'{n}': {p.description}" for n, p in PRESET_TABLE.items())
            + (f". {' and '.join(repr(n) for n in same)} build the default index." if same else ""))


def config_preset(config: RiseConfig) -> str | None:
    """The preset an index built with `config` is for when exactly one preset has that config ('paper',
    'retrospective'); None when several share it (the default index: default, backdoor, fixed) or none has it."""
    names = [name for name, cfg in PRESETS.items() if cfg == config]
    return names[0] if len(names) == 1 else None


def index_preset_line(name: str, change: str) -> str:
    """The one line saying that a query was scored with the preset its index was built for (`change`: how to
    choose another, e.g. "--preset")."""
    return f"scored with the index's preset {name!r} (built with it); {change} to change"


def mean_fit_rows(n: int, seed: int) -> list[int]:
    """Rows (sorted) of the seeded random subset of a pool of n on which its hidden-state mean is fitted."""
    import random

    if n <= HIDDEN_MEAN_SAMPLES:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), HIDDEN_MEAN_SAMPLES))


def preset(name: str) -> RiseConfig:
    """A named configuration; raises with the list of valid names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}") from None


def field_choices(config_type: type[SavedConfig]) -> dict[str, tuple[Any, ...]]:
    """The allowed values of each `Literal`-typed field of a config (`SavedConfig.field_choices`: flags and forms)."""
    return config_type.field_choices()


def field_help(config_type: type[SavedConfig]) -> dict[str, str]:
    """Help text of each field of a config (`SavedConfig.field_help`), for CLI flags and UI tooltips."""
    return config_type.field_help()
