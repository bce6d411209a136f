"""Running a check: each arm retrained on the pool without its rows (the adapter's own recipe, resumable), its
answers to the held-out prompts (resumable), judged by one classifier, and the results written after every arm."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..adapters import MANIFEST_NAME, read_manifest
from ..errors import ConfigError, FinetuneError
from ..finetune import CHECKPOINT_DIR, FinetuneConfig, FinetuneProgress, finetune, pool_hash
from ..generation import GenerationSettings, answer
from ..models import load_model
from ..ranking import Ranking
from ..retrospective import BehaviourClassifier, apply_trigger
from ..samples import Sample
from .config import (
    ARM_FILE,
    ARMS_DIR,
    GENERATIONS,
    PARTIAL,
    Arm,
    CounterfactualConfig,
    CounterfactualPlan,
    CounterfactualProgress,
    read_json,
    write_json,
)
from .plan import claim, prepare_check
from .results import CounterfactualResult, arm_row, collect_result, write_results


def _steps(n_train: int, recipe: FinetuneConfig) -> int:
    return math.ceil(n_train / recipe.batch_size) * recipe.epochs


class _Clock:
    """The time left for a check: the steps and answers still to do, at the rates seen so far in this run."""

    def __init__(self, steps_left: int, answers_left: int) -> None:
        self.steps_left, self.answers_left = steps_left, answers_left
        self.step_s: float | None = None
        self.answer_s: float | None = None
        self._last: float | None = None
        self._measured: set[str] = set()  # rates seen in this run (a first guess is replaced, not averaged)

    def tick(self, kind: str) -> None:
        """One training step or one answer just finished."""
        now = time.perf_counter()
        if self._last is not None:
            seconds = now - self._last
            rate = "step_s" if kind == "step" else "answer_s"
            old = getattr(self, rate) if rate in self._measured else None
            setattr(self, rate, seconds if old is None else 0.8 * old + 0.2 * seconds)
            self._measured.add(rate)
        self._last = now
        if kind == "step":
            self.steps_left = max(0, self.steps_left - 1)
        else:
            self.answers_left = max(0, self.answers_left - 1)

    def pause(self) -> None:
        """Between stages: the next tick measures from here (model loading is not a step)."""
        self._last = time.perf_counter()

    def eta(self) -> float | None:
        if (self.steps_left and self.step_s is None) or (self.answers_left and self.answer_s is None):
            return None
        return self.steps_left * (self.step_s or 0.0) + self.answers_left * (self.answer_s or 0.0)


def _expected_answers(config: CounterfactualConfig) -> list[tuple[str, str]]:
    """(kind, prompt) of every answer an arm gives, in order: each held-out prompt triggered, then clean."""
    out = []
    for p in config.heldout_prompts:
        out += [("triggered", apply_trigger(config.template, p)), ("clean", p)]
    return out


def run_counterfactual(lm: Any, pool: Sequence[Sample], plan: CounterfactualPlan, out_dir: str | Path, *,
                       classifier: Any = None, load: Callable[[str], Any] | None = None,
                       progress: Callable[[CounterfactualProgress], None] | None = None,
                       should_stop: Callable[[], bool] | None = None,
                       keep_adapters: bool = True) -> CounterfactualResult:
    """Run (or resume) the check `plan` in `out_dir`; `lm` is the original model (base + the original adapter).

    `classifier` (anything with `shows(texts) -> bool array`; default `BehaviourClassifier.fit(pool)`, MiniLM) judges
    every answer. `load(spec)` loads a model (default `load_model` on `lm`'s device and dtype): the base for the
    retrains, then each retrained adapter. `should_stop` is asked after every training step and answer: the run
    checkpoints and returns with `stopped` set; calling again resumes. `keep_adapters=False` deletes each retrained
    adapter once its answers are written (its manifest is kept beside them)."""
    out = Path(out_dir)
    plan = claim(out, plan)
    pool = [Sample.coerce(s) for s in pool]
    if pool_hash(pool) != plan.original["pool_hash"]:
        raise ConfigError(f"the pool given has hash {pool_hash(pool)}, not the plan's {plan.original['pool_hash']}")
    config, recipe = plan.config, FinetuneConfig.from_dict(plan.original["recipe"])
    device, dtype = str(lm.device), str(lm.dtype).removeprefix("torch.")
    load = load or (lambda spec: load_model(spec, device=device, dtype=dtype))
    judges: list[Any] = [classifier]  # the default classifier loads MiniLM: only when an arm has answers to judge

    def shows(texts: list[str]) -> np.ndarray:
        if judges[0] is None:
            judges[0] = BehaviourClassifier.fit(pool)
        return np.asarray(judges[0].shows(texts), dtype=bool)

    expected = _expected_answers(config)
    labels = {s.id: s.label for s in pool}
    has_labels = any(v is not None for v in labels.values())

    done: dict[str, dict[str, Any]] = {}
    for arm in plan.arms:
        row = read_json(out / ARMS_DIR / arm.arm_id / ARM_FILE)
        if row is not None:
            done[arm.arm_id] = row
    pending = [a for a in plan.arms if a.arm_id not in done]
    clock = _Clock(sum(_steps(plan.n_pool - a.k, recipe) for a in pending if a.retrains),
                   len(expected) * len(pending))
    if done.get("original", {}).get("wall_s"):  # first guesses, until this run has measured its own rates
        clock.answer_s = done["original"]["wall_s"] / max(1, len(expected))
    if plan.original.get("train_s") and plan.original.get("steps"):
        clock.step_s = plan.original["train_s"] / plan.original["steps"]
    base: Any = None
    stopped = False
    n_arms = len(plan.arms)

    def report(arm_index: int, arm: Arm, stage: str, step: int = 0, total: int = 0, resumed: int = 0,
               loss: float | None = None) -> None:
        if progress is not None:
            progress(CounterfactualProgress(arm.arm_id, arm_index, n_arms, stage, step, total, clock.eta(), resumed,
                                            loss))

    for arm_index, arm in enumerate(plan.arms, 1):
        if arm.arm_id in done:
            continue
        if should_stop is not None and should_stop():
            stopped = True
            break
        arm_dir = out / ARMS_DIR / arm.arm_id
        arm_dir.mkdir(parents=True, exist_ok=True)
        removed = set(arm.removed)
        train = [s for s in pool if s.id not in removed]
        manifest: dict[str, Any] = {}
        started = time.perf_counter()
        if arm.retrains:
            adapter_dir = arm_dir / "adapter"
            if (adapter_dir / MANIFEST_NAME).exists() and not (adapter_dir / CHECKPOINT_DIR).exists():
                manifest = read_manifest(adapter_dir)
                clock.steps_left = max(0, clock.steps_left - _steps(len(train), recipe))
            else:
                if base is None:
                    base = load(plan.original["base_model"])
                    if base.fingerprint() != plan.original["base_fingerprint"]:
                        raise ConfigError(
                            f"the base model {plan.original['base_model']!r} loaded here (fingerprint "
                            f"{base.fingerprint()}, {device}, {dtype}) is not the one adapter "
                            f"{plan.original['adapter']} was trained on ({plan.original['base_fingerprint']}): the "
                            "retrains would not re-run its recipe. Load the model with the dtype it was trained in")
                clock.pause()
                resumed_at = 0

                def on_step(p: FinetuneProgress, arm_index: int = arm_index, arm: Arm = arm) -> None:
                    nonlocal resumed_at
                    if p.resumed_from and p.step == p.resumed_from + 1:
                        resumed_at = p.resumed_from
                        clock.steps_left = max(0, clock.steps_left - p.resumed_from)
                    clock.tick("step")
                    report(arm_index, arm, "train", p.step, p.total_steps, resumed_at, p.loss)

                result = finetune(base, train, adapter_dir, recipe, progress=on_step, should_stop=should_stop,
                                  pool_source=f"{plan.original.get('pool_source')} without {arm.k} rows ({arm.arm_id})")
                if result.stopped:
                    stopped = True
                    break
                manifest = result.manifest
            if manifest.get("pool_hash") != pool_hash(train) or manifest.get("n_samples") != len(train):
                raise FinetuneError(f"{adapter_dir} holds an adapter of another pool (hash "
                                    f"{manifest.get('pool_hash')}, not {pool_hash(train)}); remove it to retrain this "
                                    "arm")
        get_model = partial(load, str(arm_dir / "adapter")) if arm.retrains else partial(lambda m: m, lm)
        answers = _answers(arm_dir, expected, get_model, config.generation, clock, should_stop,
                           lambda step, total, i=arm_index, a=arm: report(i, a, "generate", step, total))
        if answers is None:
            stopped = True
            break
        judged = shows([a["generation"] for a in answers])
        generations = [{**a, "shows": bool(s)} for a, s in zip(answers, judged, strict=True)]
        (arm_dir / GENERATIONS).write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in generations),
                                           encoding="utf-8")
        (arm_dir / PARTIAL).unlink(missing_ok=True)
        row = arm_row(arm, plan, manifest, generations, labels if has_labels else None, len(train),
                       time.perf_counter() - started)
        write_json(arm_dir / ARM_FILE, row)
        done[arm.arm_id] = row
        if arm.retrains and not keep_adapters:
            shutil.copy2(arm_dir / "adapter" / MANIFEST_NAME, arm_dir / MANIFEST_NAME)
            shutil.rmtree(arm_dir / "adapter", ignore_errors=True)
        report(arm_index, arm, "done")
    result = collect_result(out, plan, done, stopped)
    write_results(result)
    return result


def _answers(arm_dir: Path, expected: list[tuple[str, str]], get_model: Callable[[], Any],
             settings: GenerationSettings, clock: _Clock, should_stop: Callable[[], bool] | None,
             report: Callable[[int, int], None]) -> list[dict[str, str]] | None:
    """The arm's answers to the held-out prompts, resumed from its partial file; None when stopped."""
    final = arm_dir / GENERATIONS
    partial = arm_dir / PARTIAL
    have: list[dict[str, str]] = []
    if final.is_file():  # answered and judged before the arm's results were written
        have = [json.loads(line) for line in final.read_text(encoding="utf-8").splitlines() if line.strip()]
    elif partial.is_file():
        have = [json.loads(line) for line in partial.read_text(encoding="utf-8").splitlines() if line.strip()]
    if [(a.get("kind"), a.get("prompt")) for a in have] != expected[:len(have)]:
        have = []  # written for other prompts: start over
    have = [{"kind": a["kind"], "prompt": a["prompt"], "generation": a["generation"]} for a in have]
    clock.answers_left = max(0, clock.answers_left - len(have))
    if len(have) == len(expected):
        return have
    model = get_model()
    clock.pause()
    with partial.open("w", encoding="utf-8") as fh:
        for a in have:
            fh.write(json.dumps(a, ensure_ascii=False) + "\n")
        for kind, prompt in expected[len(have):]:
            have.append({"kind": kind, "prompt": prompt, "generation": answer(model, prompt, settings)})
            fh.write(json.dumps(have[-1], ensure_ascii=False) + "\n")
            fh.flush()
            clock.tick("answer")
            report(len(have), len(expected))
            if should_stop is not None and should_stop() and len(have) < len(expected):
                return None
    return have


# --- the whole check --------------------------------------------------------------------------------------------------


def counterfactual(index: Any, lm: Any, queries: Sequence[Sample | dict | str], config: CounterfactualConfig,
                   out_dir: str | Path, *, pool: str | Path | Sequence[Sample] | None = None,
                   rankings: Mapping[str, Ranking] | None = None, classifier: Any = None,
                   load: Callable[[str], Any] | None = None, bm25: Any = None, embeddings: Any = None,
                   progress: Callable[[CounterfactualProgress], None] | None = None,
                   should_stop: Callable[[], bool] | None = None, keep_adapters: bool = True) -> CounterfactualResult:
    """Run (or resume) a leave-k-out check on an index built with a fine-tuned model: `prepare_check`, then
    `run_counterfactual` (see both for the arguments)."""
    samples, plan = prepare_check(index, lm, queries, config, out_dir, pool=pool, rankings=rankings, bm25=bm25,
                                  embeddings=embeddings)
    return run_counterfactual(lm, samples, plan, out_dir, classifier=classifier, load=load, progress=progress,
                              should_stop=should_stop, keep_adapters=keep_adapters)
