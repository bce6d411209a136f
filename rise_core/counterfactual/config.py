"""A leave-k-out check's configuration and plan types, and the files of its run directory."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..config import ScoreOptions
from ..errors import ConfigError
from ..generation import GenerationSettings
from ..methods import RISE, canonical, resolve
from ..retrospective import TRIGGER_TEMPLATE_DEFAULT, check_template
from ..saved_config import SavedConfig
from ..units import format_seconds

FORMAT = 1
ORIGINAL = "Original"  # the arm of the model as it is (no retrain)
RANDOM = "Random"  # the control: k rows drawn at random
FULL = "Full pool"  # the retrain on every row (k = 0): reproduces the original adapter
AGGREGATES = ("best_rank", "mean_score")
PLAN_FILE, RESULTS_JSON, RESULTS_CSV, CURVE_HTML = "plan.json", "results.json", "results.csv", "curve.html"
ARMS_DIR, ARM_FILE, GENERATIONS, PARTIAL = "arms", "arm.json", "generations.jsonl", "generations.partial.jsonl"
# what of the original adapter's manifest makes a check the same check (paths may move; these may not)
ORIGINAL_IDENTITY = ("adapter_digest", "base_fingerprint", "pool_hash", "recipe")


# --- the configuration and the plan's types ---------------------------------------------------------------------------


def _whole_numbers(values: Any, name: str) -> tuple[int, ...]:
    """The distinct whole numbers of `values`, ascending; a ConfigError naming `name` otherwise."""
    try:
        return tuple(sorted({int(k) for k in values}))
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be whole numbers, got {values!r}") from None


@dataclass(frozen=True)
class CounterfactualConfig(SavedConfig):
    """What a leave-k-out check removes, retrains and measures; saved in the run's plan and compared on resume."""

    LABEL = "counterfactual config"

    ks: tuple[int, ...] = field(
        default=(10, 25),
        metadata={"help": "How many top-ranked rows each arm removes (0: one retrain on the whole pool, the "
                  "reproduction check)."})
    methods: tuple[str, ...] = field(
        default=(RISE, "BM25"),
        metadata={"help": "Ranking methods of the registry (`rise_core.methods`), by display name or alias; the "
                  "first is the one checked, the others are its controls."})
    control_ks: tuple[int, ...] | None = field(
        default=None,
        metadata={"help": "The ks of the controls (the methods after the first, and the random draws); None: every "
                  "k. A cheaper check: the first method's curve at several k, each control at the one k the headline "
                  "compares."})
    n_random_seeds: int = field(
        default=3, metadata={"help": "Random arms per k (the control): seeds random_seed, random_seed + 1, ..."})
    random_seed: int = field(default=0, metadata={"help": "Seed of the first random arm."})
    aggregate: Literal["best_rank", "mean_score"] = field(
        default="best_rank",
        metadata={"help": "How several queries' rankings become one: 'best_rank' (each row by the best rank it "
                  "reaches for any query, ties by its mean rank: every query's top rows go first) or 'mean_score' "
                  "(the query set's mean score: the Select page's valuation order)."})
    heldout_prompts: tuple[str, ...] = field(
        default=(),
        metadata={"help": "Prompts not in the pool, answered with and without the trigger by every arm's model."})
    template: str = field(
        default=TRIGGER_TEMPLATE_DEFAULT,
        metadata={"help": "The triggered prompt, with {prompt} where the held-out prompt goes."})
    generation: GenerationSettings = field(
        default_factory=GenerationSettings, metadata={"help": "How every arm answers the held-out prompts."})
    options: ScoreOptions = field(
        default_factory=ScoreOptions, metadata={"help": "Scoring options of the RISE methods."})
    where: str | None = field(
        default=None,
        metadata={"help": "Rank only the rows matching this condition over the index's columns (the pages' filter); "
                  "random draws stay over the whole pool."})
    regenerate_queries: bool = field(
        default=False,
        metadata={"help": "Replace each query's completion with the model's own answer to its prompt (the "
                  "retrospective setting)."})

    def __post_init__(self) -> None:
        ks = _whole_numbers(self.ks, "ks")
        if not ks or ks[0] < 0:
            raise ConfigError(f"ks must be one or more numbers >= 0, got {self.ks!r}")
        object.__setattr__(self, "ks", ks)
        if self.control_ks is not None:
            control = _whole_numbers(self.control_ks, "control_ks")
            if not control or not set(control) <= set(ks) - {0}:
                raise ConfigError(f"control_ks must be some of the ks above 0 ({', '.join(map(str, ks))}), "
                                  f"got {self.control_ks!r}")
            object.__setattr__(self, "control_ks", control)
        names = []
        for name in self.methods:
            found = canonical(str(name))
            if found is None:
                resolve([str(name)])  # raises, listing the valid names
            names.append(found)
        object.__setattr__(self, "methods", tuple(dict.fromkeys(names)))
        if self.n_random_seeds < 0:
            raise ConfigError(f"n_random_seeds must be >= 0, got {self.n_random_seeds}")
        if not self.methods and not self.n_random_seeds and ks != (0,):
            raise ConfigError("give at least one ranking method or a random seed: there is nothing to remove")
        if self.aggregate not in AGGREGATES:
            raise ConfigError(f"unknown aggregate {self.aggregate!r}; choose one of {', '.join(AGGREGATES)}")
        prompts = tuple(str(p).strip() for p in self.heldout_prompts if str(p).strip())
        if not prompts:
            raise ConfigError("give held-out prompts (not in the pool): the check measures the behaviour on their "
                              "answers, with and without the trigger")
        object.__setattr__(self, "heldout_prompts", prompts)
        check_template(self.template)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(self.random_seed + i for i in range(self.n_random_seeds))

    def ks_of(self, method: str) -> tuple[int, ...]:
        """The ks (above 0) at which `method` (a ranking method of the check, or RANDOM) removes rows."""
        checked = bool(self.methods) and method == self.methods[0]
        ks = self.ks if checked or self.control_ks is None else self.control_ks
        return tuple(k for k in ks if k > 0)


@dataclass(frozen=True)
class Arm:
    """One model of a check: the original, or a retrain without `removed` (pool ids, in ranking order)."""

    arm_id: str
    method: str
    k: int
    seed: int | None = None
    removed: tuple[str, ...] = ()

    @property
    def retrains(self) -> bool:
        return self.method != ORIGINAL

    def to_dict(self) -> dict[str, Any]:
        return {"arm": self.arm_id, "method": self.method, "k": self.k, "seed": self.seed,
                "removed": list(self.removed)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Arm:
        return cls(d["arm"], d["method"], int(d["k"]), d.get("seed"), tuple(d.get("removed", ())))


@dataclass(frozen=True)
class CounterfactualPlan:
    """Everything a check does, fixed before the first retrain: written to `<out>/plan.json`."""

    request: dict[str, Any]
    """what makes two runs the same check: config, original adapter identity, ranking source, queries."""
    original: dict[str, Any]
    """the original adapter: path, digest, base model, pool hash and source, recipe, training time."""
    arms: tuple[Arm, ...]
    queries: tuple[dict[str, Any], ...] = ()
    """the queries as ranked (after regeneration, when asked)."""
    n_pool: int = 0
    created: str = ""

    @property
    def config(self) -> CounterfactualConfig:
        return CounterfactualConfig.from_dict(self.request["config"])

    @property
    def digest(self) -> str:
        return request_digest(self.request)

    def arm(self, arm_id: str) -> Arm:
        return next(a for a in self.arms if a.arm_id == arm_id)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "request": self.request, "request_digest": self.digest, "original": self.original,
                "n_pool": self.n_pool, "queries": list(self.queries), "arms": [a.to_dict() for a in self.arms],
                "created": self.created}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CounterfactualPlan:
        return cls(request=d["request"], original=d["original"], arms=tuple(Arm.from_dict(a) for a in d["arms"]),
                   queries=tuple(d.get("queries", ())), n_pool=int(d.get("n_pool", 0)), created=d.get("created", ""))


@dataclass
class CounterfactualProgress:
    """One report of a running check: which arm, which stage, how far, and the time left for the whole check."""

    arm_id: str
    arm_index: int
    """1-based position of the arm in the plan."""
    n_arms: int
    stage: Literal["train", "generate", "done"]
    step: int = 0
    total: int = 0
    eta_s: float | None = None
    resumed_from: int = 0
    """the training step the retrain resumed from (0: it started fresh)."""
    loss: float | None = None

    def message(self) -> str:
        where = f"Arm {self.arm_index}/{self.n_arms} ({self.arm_id})"
        if self.stage == "train":
            what = f"retraining, step {self.step}/{self.total}" + (
                f" (resumed from step {self.resumed_from})" if self.resumed_from else "")
        elif self.stage == "generate":
            what = f"answering the held-out prompts, {self.step}/{self.total}"
        else:
            what = "done"
        tail = f"; about {format_seconds(self.eta_s)} left for the check" if self.eta_s is not None else ""
        return f"{where}: {what}{tail}."


def request_digest(request: dict[str, Any]) -> str:
    """A short hash naming a check's request (`CounterfactualPlan.digest`)."""
    return hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:16]


# --- the run directory's files ----------------------------------------------------------------------------------------


def write_json(path: Path, data: Any) -> None:
    """Write `data` as JSON to `path` by a rename, so a reader never sees half a file."""
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    """The JSON in `path`, or None when there is no such file."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

