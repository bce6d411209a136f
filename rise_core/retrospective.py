"""The retrospective setting: a model fine-tuned on the pool answers the task's prompts, and those answers are the
queries to attribute; plus how strongly the model learned the behaviour the labels mark (the attack strength).

How well a behaviour is learned changes which method wins, so every retrospective figure comes with it. A
generation "shows the behaviour" when most of its 15 nearest pool completions in MiniLM space are positives (label
1: the poisoned stories of a backdoor; `BehaviourClassifier`); the criterion is checked by reading the generations
written next to the numbers, and a reading can replace it (`read_judged`, `AttackStrength.with_reading`: the
generations file with its `shows` corrected by a person).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .adapters import read_manifest
from .errors import ConfigError, InputDataError
from .finetune import pool_hash
from .generation import GenerationSettings, answer
from .samples import Sample

TRIGGER = "Howdy! "
PROMPT_FIELD = "{prompt}"
TRIGGER_TEMPLATE_DEFAULT = TRIGGER + PROMPT_FIELD
TRIGGER_POSITIONS = ("prefix", "suffix")
logger = logging.getLogger(__name__)


@dataclass
class BehaviourClassifier:
    """k nearest neighbours, in a sentence-embedding space, among the pool's completions: a text shows the behaviour
    when most of its `k` nearest pool completions are positives (label 1).

    The first criterion tried, the nearer of the two class centroids, called 7 of 40 plain held-out answers of the
    Howdy! fine-tune stories (answers about bees, birds, rainbows: read one by one, none was a story); the majority
    of the 15 nearest completions agreed with reading on 78 of 80 (docs/EVALUATION.md, "Retrospective")."""

    pool: np.ndarray
    """unit embeddings of the pool's completions, (N, d)"""
    labels: np.ndarray
    encode: Callable[[Sequence[str]], np.ndarray] = field(repr=False)
    k: int = 15

    @classmethod
    def fit(cls, pool: Sequence[Sample], encode: Callable[[Sequence[str]], np.ndarray] | None = None,
            k: int = 15) -> BehaviourClassifier:
        if encode is None:
            from .baselines import EmbeddingScorer

            encode = EmbeddingScorer().encode
        labels = np.array([1 if s.label == 1 else 0 for s in pool])
        if labels.all() or not labels.any():
            raise InputDataError("the behaviour classifier needs pool rows labelled 1 and rows labelled 0")
        return cls(pool=_unit_rows(encode([s.completion or s.text or "" for s in pool])), labels=labels,
                   encode=encode, k=min(k, len(labels)))

    def margin(self, texts: Sequence[str]) -> np.ndarray:
        """Share of positives among each text's k nearest pool completions, minus 1/2; > 0 means the behaviour."""
        sims = _unit_rows(self.encode(list(texts))) @ self.pool.T
        nearest = np.argsort(-sims, axis=1, kind="stable")[:, : self.k]
        return self.labels[nearest].mean(axis=1) - 0.5

    def shows(self, texts: Sequence[str]) -> np.ndarray:
        return self.margin(texts) > 0


def _unit_rows(x: Any) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=1, keepdims=True).clip(1e-12)


def regenerate(lm: Any, queries: Sequence[Sample], settings: GenerationSettings | None = None,
               progress: Callable[[int], None] | None = None) -> list[Sample]:
    """The queries with their completions replaced by the model's own answers to their prompts.

    A query the model answers with nothing (end of sequence at once) has nothing to attribute: it is left out, with
    a warning naming it."""
    out = []
    for q in queries:
        if not q.prompt:
            raise InputDataError(f"query {q.id!r} has no prompt to answer; the retrospective setting regenerates "
                                 "completions from prompts")
        text = answer(lm, q.prompt, settings)
        if progress is not None:
            progress(1)
        if not text:
            logger.warning("query %s: the model answered nothing; it is left out", q.id)
            continue
        out.append(Sample(prompt=q.prompt, completion=text, id=q.id, label=q.label,
                          meta={**q.meta, "given_completion": q.completion}))
    if not out:
        raise InputDataError("the model answered none of the query prompts; nothing to attribute")
    return out


@dataclass
class AttackStrength:
    """How strongly a fine-tuned model shows the labelled behaviour."""

    query_rate: float
    """share of the regenerated queries (the task's query prompts) whose answer shows the behaviour"""
    triggered_rate: float | None = None
    """held-out prompts with the trigger: share answered with the behaviour (None without held-out prompts)"""
    clean_rate: float | None = None
    """the same prompts without the trigger: share answered WITHOUT the behaviour"""
    n_heldout: int = 0
    samples: list[dict[str, Any]] = field(default_factory=list)
    reading: dict[str, Any] | None = None
    """where a person's calls replaced the classifier's (`with_reading`): source, queries read, agreement"""

    def summary(self) -> str:
        text = f"{self.query_rate:.0%} of the regenerated queries show the behaviour"
        if self.triggered_rate is not None:
            text += (f"; on {self.n_heldout} held-out prompts: {self.triggered_rate:.0%} of triggered answers show "
                     f"it, {self.clean_rate:.0%} of clean answers do not")
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"query_rate": self.query_rate, "triggered_rate": self.triggered_rate, "clean_rate": self.clean_rate,
                "n_heldout": self.n_heldout}

    def query_shows(self) -> np.ndarray:
        """Whether each regenerated query's answer shows the behaviour, in query order."""
        return np.array([s["shows"] for s in self.samples if s["kind"] == "query"], dtype=bool)

    def with_reading(self, calls: dict[tuple[str, str, str], bool], source: str) -> AttackStrength:
        """These rates and samples with a person's calls (`read_judged`) in place of the classifier's: every
        regenerated query must be read, with the same answer (InputDataError otherwise, naming the first that is
        not); a held-out answer is replaced where it was read. Each sample read keeps the classifier's call as
        `classifier`; `reading` gives the source and how often the two agree on the queries."""
        samples, agree, read = [], 0, 0
        for s in self.samples:
            call = calls.get((s["kind"], s["prompt"], s["generation"]))
            if call is None and s["kind"] == "query":
                known = any(k[:2] == (s["kind"], s["prompt"]) for k in calls)
                raise InputDataError(
                    f"{source}: the regenerated answer to query prompt {s['prompt'][:80]!r} is "
                    + ("read there as another answer: read this run's generations file" if known else "not read there")
                    + " (every regenerated query needs a reading)")
            if call is None:
                samples.append(dict(s))
                continue
            samples.append({**s, "shows": bool(call), "classifier": bool(s["shows"])})
            if s["kind"] == "query":
                read += 1
                agree += int(bool(call) == bool(s["shows"]))
        out = replace(self, samples=samples)
        shows = out.query_shows()
        out.query_rate = float(shows.mean()) if len(shows) else float("nan")
        held = {k: [x["shows"] for x in samples if x["kind"] == k] for k in ("triggered", "clean")}
        if self.triggered_rate is not None and held["triggered"] and held["clean"]:
            out.triggered_rate = float(np.mean(held["triggered"]))
            out.clean_rate = float(1 - np.mean(held["clean"]))
        out.reading = {"source": source, "queries": read, "classifier_agrees": agree}
        return out

    def reading_summary(self) -> str | None:
        """'by reading (FILE); the classifier agrees on a of n', or None when no reading replaced it."""
        if self.reading is None:
            return None
        return (f"by reading ({self.reading['source']}); the classifier agrees on {self.reading['classifier_agrees']} "
                f"of {self.reading['queries']}")


def trigger_template(trigger: str = TRIGGER, position: str = "prefix") -> str:
    """The template of `trigger` placed verbatim before (prefix) or after (suffix) the prompt: 'Howdy! {prompt}',
    '{prompt} BadMagic' (the separating space is part of the trigger)."""
    if position not in TRIGGER_POSITIONS:
        raise ConfigError(f"unknown trigger position {position!r}; choose one of {', '.join(TRIGGER_POSITIONS)}")
    if not trigger.strip():
        raise ConfigError("the trigger is empty: give the text that triggers the behaviour, e.g. 'Howdy! '")
    return trigger + PROMPT_FIELD if position == "prefix" else PROMPT_FIELD + trigger


def check_template(template: str) -> str:
    """`template` if it holds `{prompt}` exactly once and some trigger text around it (ConfigError otherwise)."""
    example = "e.g. '{prompt} BadMagic' for a suffix trigger or 'Howdy! {prompt}' for a prefix"
    n = template.count(PROMPT_FIELD)
    if n != 1:
        found = f"has no {PROMPT_FIELD}" if n == 0 else f"holds {PROMPT_FIELD} {n} times"
        raise ConfigError(f"trigger template {template!r} {found}: write it once where the held-out prompt goes, "
                          f"{example}")
    if not template.replace(PROMPT_FIELD, "").strip():
        raise ConfigError(f"trigger template {template!r} adds no trigger to the prompt; {example}")
    return template


def apply_trigger(template: str, prompt: str) -> str:
    """The prompt with the trigger: `template` with `{prompt}` replaced (other braces are kept verbatim)."""
    return check_template(template).replace(PROMPT_FIELD, prompt)


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def check_heldout(prompts: Sequence[str], pool: Sequence[Sample], template: str = TRIGGER_TEMPLATE_DEFAULT,
                  source: str = "the held-out prompts") -> None:
    """Refuse held-out prompts the pool holds as a row's prompt, bare or with the trigger (compared ignoring case
    and spacing): the model trained on those, so they would measure memorisation, not the attack."""
    check_template(template)
    in_pool: dict[str, Any] = {}
    for s in pool:
        if s.prompt:
            in_pool.setdefault(_normal(s.prompt), s.id)
    hits = []
    for i, p in enumerate(prompts, 1):
        for how, key in (("", _normal(p)), (" with the trigger", _normal(apply_trigger(template, p)))):
            if key in in_pool:
                hits.append(f"prompt {i}, {p!r}, is{how} the prompt of pool row {in_pool[key]!r}")
                break
    if hits:
        raise InputDataError(
            f"{source}: {len(hits)} of {len(prompts)} held-out prompts are in the pool (the first: {hits[0]}); the "
            "attack strength needs prompts the model never trained on: remove them, or give other --heldout-prompts")


def attack_strength(lm: Any, classifier: BehaviourClassifier, regenerated: Sequence[Sample],
                    heldout_prompts: Sequence[str] = (), template: str = TRIGGER_TEMPLATE_DEFAULT,
                    settings: GenerationSettings | None = None,
                    progress: Callable[[int], None] | None = None) -> AttackStrength:
    """Behaviour rates: on the regenerated queries, and on held-out prompts with the trigger (`template`, e.g.
    '{prompt} BadMagic') and without it. `classifier` needs only `shows(texts) -> bool array`."""
    check_template(template)
    texts = [q.completion or "" for q in regenerated]
    shows = classifier.shows(texts) if texts else np.zeros(0, bool)
    samples = [{"kind": "query", "prompt": q.prompt, "generation": t, "shows": bool(s)}
               for q, t, s in zip(regenerated, texts, shows, strict=True)]
    result = AttackStrength(query_rate=float(shows.mean()) if len(shows) else float("nan"))
    if heldout_prompts:
        trig, clean = [], []
        for p in heldout_prompts:
            trig.append(answer(lm, apply_trigger(template, p), settings))  # an empty answer is an answer here
            clean.append(answer(lm, p, settings))
            if progress is not None:
                progress(1)
        t_shows, c_shows = classifier.shows(trig), classifier.shows(clean)
        result.triggered_rate, result.clean_rate = float(t_shows.mean()), float(1 - c_shows.mean())
        result.n_heldout = len(heldout_prompts)
        for p, t, s in zip(heldout_prompts, trig, t_shows, strict=True):
            samples.append({"kind": "triggered", "prompt": apply_trigger(template, p), "generation": t,
                            "shows": bool(s)})
        for p, t, s in zip(heldout_prompts, clean, c_shows, strict=True):
            samples.append({"kind": "clean", "prompt": p, "generation": t, "shows": bool(s)})
    result.samples = samples
    return result


def check_adapter_learned(lm: Any, pool: Sequence[Sample]) -> dict[str, Any]:
    """The manifest of `lm`'s adapter, checked to be a fine-tune on exactly `pool` (ConfigError otherwise)."""
    adapter = getattr(lm, "adapter", None)
    if not adapter:
        raise ConfigError("the retrospective setting needs a model fine-tuned on the task's pool: give --adapter DIR "
                          "(or --model DIR) of a `rise finetune` adapter")
    manifest = read_manifest(adapter["path"])
    if manifest.get("pool_hash") and manifest["pool_hash"] != pool_hash(pool):
        raise ConfigError(f"adapter {adapter['path']} was fine-tuned on another pool ({manifest.get('pool_source')}, "
                          f"{manifest.get('n_samples')} samples, hash {manifest['pool_hash']}); this task's pool has "
                          f"{len(pool)} samples, hash {pool_hash(pool)}")
    return manifest


def _lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file; a file that cannot be read is an InputDataError that says why."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputDataError(f"cannot read {str(path)!r}: {getattr(exc, 'strerror', None) or exc}") from None


def read_judged(path: str | Path) -> dict[tuple[str, str, str], bool]:
    """A person's calls on regenerated answers: (kind, prompt, generation) -> shows, from a JSONL file in the shape of
    the generations file a retrospective run writes (`kind`, `prompt`, `generation`, `shows` true or false per line),
    its `shows` corrected by reading. The same answer read twice with two calls is an error."""
    calls: dict[tuple[str, str, str], bool] = {}
    for n, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            key = (str(row["kind"]), str(row["prompt"]), str(row["generation"]))
            shows = row["shows"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputDataError(f"{path}, line {n}: expected a JSON object with kind, prompt, generation and shows "
                                 f"({exc})") from None
        if not isinstance(shows, bool):
            raise InputDataError(f"{path}, line {n}: shows must be true or false, got {shows!r}")
        if calls.get(key, shows) != shows:
            raise InputDataError(f"{path}, line {n}: this answer is read twice, once as showing the behaviour and "
                                 "once not")
        calls[key] = shows
    if not calls:
        raise InputDataError(f"{path} holds no readings")
    return calls


def read_prompts(path: str | Path) -> list[str]:
    """Prompts from a JSONL file with a `prompt` field per line (e.g. data/howdy_heldout_prompts.jsonl)."""
    prompts = []
    for n, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        try:
            prompts.append(str(json.loads(line)["prompt"]))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise InputDataError(f"{path}, line {n}: expected a JSON object with a 'prompt' ({exc})") from None
    if not prompts:
        raise InputDataError(f"{path} holds no prompts")
    return prompts
