"""The saved-config base (`rise_core.saved_config`): round trips, strict reading, fingerprints, differences, and the
one comma-list parser."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from rise_core.config import PRESETS, RiseConfig, ScoreOptions
from rise_core.counterfactual import CounterfactualConfig
from rise_core.diagnostics import DiagnosticsOptions
from rise_core.errors import ConfigError
from rise_core.finetune import FinetuneConfig
from rise_core.generation import GenerationSettings
from rise_core.saved_config import SavedConfig, dict_differences, parse_list

# one non-default instance of every saved config (nested configs, tuples, optional and Literal fields set)
CONFIGS: list[SavedConfig] = [
    RiseConfig(k_r=8, k_h=4, k_g=8, tau=0.5, counted_positions="completion", composition="outer"),
    ScoreOptions(lambda_rh=0.5, lambda_hs=0.0, sample_norm="joint", weighting="auto"),
    FinetuneConfig(rank=4, target_modules=("q_proj", "v_proj"), loss_on="all", save_dtype="float16"),
    GenerationSettings(max_new_tokens=12, temperature=0.7, seed=3),
    CounterfactualConfig(ks=(0, 5, 10), methods=("BM25",), control_ks=(5,), heldout_prompts=("Say hi",),
                         generation=GenerationSettings(max_new_tokens=8), options=ScoreOptions(lambda_gh=2.0),
                         where="label = 1", aggregate="mean_score"),
    DiagnosticsOptions(n_samples=4, k_values=(2, 4), tau_values=(0.5,), fidelity_dims=((8, 4, 8),), top_k=(1,)),
]
IDS = [type(c).__name__ for c in CONFIGS]


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_round_trip_of_every_config(config):
    saved = config.to_dict()
    assert type(config).from_dict(saved) == config
    assert list(saved) == [f.name for f in dataclasses.fields(config)]  # every field, in declaration order


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_unknown_field_is_named(config):
    with pytest.raises(ConfigError, match=r"unknown .* fields \['bogus_field'\]; valid fields: .*"):
        type(config).from_dict({**config.to_dict(), "bogus_field": 1})


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_every_field_has_help(config):
    helps = type(config).field_help()
    assert list(helps) == [f.name for f in dataclasses.fields(config)]
    assert all(helps.values()), [name for name, text in helps.items() if not text]


@pytest.mark.parametrize(("cls", "data", "named"), [
    (RiseConfig, {"k_r": "64"}, "'k_r' expects a whole number"),
    (RiseConfig, {"token_norm": 1}, "'token_norm' expects true or false"),
    (RiseConfig, {"tau": True}, "'tau' expects a number"),
    (RiseConfig, {"composition": "cubic"}, "'composition' must be one of"),
    (FinetuneConfig, {"target_modules": "q_proj"}, "'target_modules' expects a list or null"),
    (CounterfactualConfig, {"heldout_prompts": ["p"], "generation": {"top_k": 3}},
     r"unknown generation settings fields \['top_k'\]"),
    (CounterfactualConfig, {"heldout_prompts": ["p"], "ks": [1, "x"]}, "'ks' expects a whole number, got 'x'"),
    (DiagnosticsOptions, {"fidelity_dims": [[8, 4]]}, "'fidelity_dims' expects a list, got \\[8, 4\\]"),
])
def test_wrong_types_are_named(cls, data, named):
    with pytest.raises(ConfigError, match=named):
        cls.from_dict(data)


def test_missing_fields_take_legacy_values_then_defaults():
    old = RiseConfig.from_dict({"k_r": 16})  # a manifest written before composition and hidden_channel existed
    assert (old.composition, old.hidden_channel, old.k_h) == ("outer", False, RiseConfig().k_h)
    assert FinetuneConfig.from_dict({}) == FinetuneConfig(chat_template="off")  # recorded before it was a choice


def test_rise_config_fingerprints_match_the_old_code():
    """Hashes computed with the hand-written RiseConfig.fingerprint before the base (commit a712c28): every stored
    index and ANN sidecar names its config by them, so they must never move."""
    # the old code knew no chat rendering and no HS layer: its configs are today's with chat_template 'off' (plain
    # text) and hs_depth 1 (the final hidden state)
    plain = {name: dataclasses.replace(cfg, chat_template="off", hs_depth=1.0) for name, cfg in PRESETS.items()}
    assert {name: cfg.fingerprint() for name, cfg in plain.items()} == {
        "default": "08ef5f6c6a708eb5", "paper": "7c9817e8c3b56baa", "backdoor": "08ef5f6c6a708eb5",
        "fixed": "08ef5f6c6a708eb5", "retrospective": "60034ae753bda62c",
        "compact": "dfa2b3bc3be67a9f"}  # added later, pinned from then on
    assert all(PRESETS[n].fingerprint() != plain[n].fingerprint() for n in PRESETS)  # templated features differ
    custom = RiseConfig(k_r=8, k_h=4, k_g=8, tau=0.5, seq_len=32, counted_positions="completion",
                        center_hidden=True, composition="outer", hidden_channel=False, chat_template="off",
                        hs_depth=1.0)
    assert custom.fingerprint() == "c0178c6e6078c70e"
    # an old manifest (no composition / hidden_channel, tau saved as the integer 1): read, it keeps its hash
    legacy = RiseConfig.from_dict({"k_r": 16, "k_h": 8, "k_g": 16, "tau": 1, "rho_cum": 0.9, "min_top_l": 4,
                                   "k_max": 64, "seq_len": 128, "seed": 7, "counted_positions": "completion",
                                   "token_norm": True, "center_hidden": False})
    assert legacy.fingerprint() == "9d49ce3f5d900831"


@dataclass(frozen=True)
class _Grown(SavedConfig):
    """A config that gained a field: `extra` counts in the fingerprint only when set."""

    size: int = field(default=2, metadata={"help": "A size."})
    extra: str | None = field(default=None, metadata={"help": "Added later.", "fingerprint": "unless-default"})


@dataclass(frozen=True)
class _Original(SavedConfig):
    size: int = field(default=2, metadata={"help": "A size."})


def test_a_field_added_later_needs_only_its_declaration():
    assert _Grown().fingerprint() == _Original().fingerprint()
    assert _Grown(extra="x").fingerprint() != _Original().fingerprint()
    assert _Grown.from_dict(_Original(size=5).to_dict()) == _Grown(size=5)  # saved before the field: its default
    assert _Grown.field_help()["extra"] == "Added later."


def test_differences_name_the_fields_in_order():
    a = RiseConfig()
    assert a.differences(a) == []
    assert a.differences(a.replace(seed=1, k_r=32)) == ["k_r", "seed"]
    cf = CONFIGS[4]
    other = dataclasses.replace(cf, ks=(0, 5), generation=GenerationSettings(max_new_tokens=9, seed=1))
    assert cf.differences(other) == ["ks", "generation.max_new_tokens", "generation.seed"]
    assert dict_differences({"recipe": {"rank": 4}, "pool": "a"}, {"recipe": {"rank": 8}, "pool": "a", "n": 1}) == [
        "recipe.rank", "n"]


def test_field_choices_include_optional_literals():
    assert FinetuneConfig.field_choices() == {"loss_on": ("completion", "all"),
                                             "save_dtype": ("float32", "float16", "bfloat16"),
                                             "chat_template": ("auto", "on", "off"), "chat_turns": ("all", "last")}
    assert RiseConfig.field_choices()["composition"] == ("outer", "tensor")


def test_parse_list():
    assert parse_list("10, 25,,") == ("10", "25")
    assert parse_list(" 10; 25 ", int, "k") == (10, 25)  # the counterfactual form took semicolons: every list does
    assert parse_list("0.5,1", float) == (0.5, 1.0)
    assert parse_list("", int) == ()
    with pytest.raises(ConfigError, match=r"--ks expects comma-separated whole numbers .*'x' is not one"):
        parse_list("1,x", int, "--ks")
