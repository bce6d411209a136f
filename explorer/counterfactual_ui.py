"""'Check: retrain without these' on the Attribute and Select pages: the leave-k-out check (`rise_core.counterfactual`)
of the current query and ranking as a background job (progress, ETA, stop and resume; the page stays usable), its
results side by side (the original model's answers and the retrained one's, each arm's behaviour rate, the random
control, the leave-k-out curve), the past checks, and the Home page's shipped results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from rise_core.counterfactual import (
    ORIGINAL,
    RANDOM,
    CounterfactualConfig,
    CounterfactualProgress,
    CounterfactualResult,
    list_runs,
    load_plan,
    load_result,
    original_model,
    prepare_check,
    request_digest,
    run_counterfactual,
    side_by_side,
    training_pool,
)
from rise_core.errors import ConfigError, InputDataError
from rise_core.generation import GenerationSettings
from rise_core.methods import BM25, EMBEDDING, HIDDEN_COSINE, RISE, needs_forward_pass
from rise_core.ranking import Ranking
from rise_core.retrospective import TRIGGER_TEMPLATE_DEFAULT, read_prompts
from rise_core.saved_config import parse_list
from rise_core.units import format_seconds

from .counterfactual_charts import curve_figure
from .jobs import BackgroundJob
from .plain import code, md
from .request_limits import CheckLimits, request_limits
from .ui import friendly, settings
from .widgets import stop_button

CHECK_DIR_ENV = "RISE_COUNTERFACTUAL_DIR"
SHIPPED = ("counterfactual", "howdy")  # under the data folder: the demo's results, when they ship
# the page ranks with them before the job starts: baselines read from the index or fitted once on its pool (Grad-Sketch,
# a forward pass over the whole pool, is left to `rise counterfactual`)
BASELINES = (BM25, HIDDEN_COSINE, EMBEDDING)
RETRAINED_COLUMNS = ["arm", "method", "k", "seed", "n_removed", "n_positive_removed", "n_train", "triggered_rate",
                     "clean_behaviour_rate", "train_s", "reproduces_original"]


GENERATION_TOKENS_PER_S = 20.0  # greedy decoding of the embedded 135M model on 2 CPU cores, measured about 20-40/s:
# the estimate takes the slow end, since a check shares the machine


@dataclass(frozen=True)
class CheckRequest:
    """A check as the form asks for it, bounded by `CheckLimits` and with its cost estimated before Start."""

    ks: tuple[int, ...]
    seeds: int
    baselines: tuple[str, ...]
    prompts: tuple[str, ...]
    new_tokens: int

    @property
    def retrains(self) -> int:
        n_pos = sum(1 for k in self.ks if k > 0)
        return (1 + len(self.baselines) + self.seeds) * n_pos + (0 in self.ks)

    @property
    def answers(self) -> int:
        """Answers generated: every retrained model and the original answer each prompt with and without trigger."""
        return (self.retrains + 1) * len(self.prompts) * 2

    def check(self, limits: CheckLimits) -> CheckRequest:
        """This request, or a ConfigError naming the first limit it passes and its setting."""
        over = [(len(self.ks), limits.max_ks, "values of k", "RISE_CHECK_MAX_KS"),
                (self.seeds, limits.max_seeds, "random seeds", "RISE_CHECK_MAX_SEEDS"),
                (len(self.prompts), limits.max_prompts, "held-out prompts", "RISE_CHECK_MAX_PROMPTS"),
                (self.new_tokens, limits.max_new_tokens, "answer tokens", "RISE_CHECK_MAX_TOKENS"),
                (self.retrains, limits.max_retrains, "retrains", "RISE_CHECK_MAX_RETRAINS")]
        for value, cap, what, env in over:
            if value > cap:
                raise ConfigError(f"this check asks for {value} {what}; a check started here may have at most {cap} "
                                  f"(the server's {env}). Run larger checks with `rise counterfactual`")
        if any(k < 0 for k in self.ks):
            raise ConfigError("k must be 0 or more")
        if self.seeds < 0 or self.new_tokens < 1:
            raise ConfigError("seeds must be 0 or more and the answer length at least 1 token")
        return self

    def estimate_s(self, train_s: float | None) -> float | None:
        """Seconds: the retrains at the original fine-tune's time, plus the answers at GENERATION_TOKENS_PER_S."""
        if not train_s:
            return None
        return self.retrains * float(train_s) + self.answers * self.new_tokens / GENERATION_TOKENS_PER_S


def checks_root(index_dir: Path) -> Path:
    """Where the app writes its checks: `RISE_COUNTERFACTUAL_DIR`, else `counterfactual/` beside the index folder."""
    import os

    configured = os.environ.get(CHECK_DIR_ENV)
    return Path(configured).expanduser() if configured else index_dir.parent / "counterfactual"


@dataclass
class CounterfactualJob(BackgroundJob):
    """A leave-k-out check (`run_counterfactual`) in a background thread. Stopping ends it after the training step or
    answer in progress (a retrain keeps its checkpoint); starting the same check again resumes it."""

    lm: Any
    pool: list
    plan: Any  # rise_core.counterfactual.CounterfactualPlan
    out_dir: Path
    last: CounterfactualProgress | None = None
    result: CounterfactualResult | None = None
    _arms_done: set = field(default_factory=set, repr=False)

    def _thread_name(self) -> str:
        return f"rise-check-{self.out_dir.name}"

    def _progress(self, p: CounterfactualProgress) -> None:
        self.last = p
        if p.stage == "done":
            self._arms_done.add(p.arm_id)

    def _work(self) -> str:
        self.result = run_counterfactual(self.lm, self.pool, self.plan, self.out_dir, progress=self._progress,
                                         should_stop=self._stop.is_set)
        return "stopped" if self.result.stopped else "done"

    @property
    def fraction(self) -> float:
        if self.status == "done":
            return 1.0
        p = self.last
        if p is None:
            return 0.0
        within = 1.0 if p.stage == "done" else (p.step / p.total if p.total else 0.0)
        return min(1.0, (p.arm_index - 1 + within) / max(1, p.n_arms))

    def message(self) -> str:
        n = len(self.plan.arms)
        if self.status in ("queued", "cancelled"):
            return self.queued_message()
        if self.running:
            if self.last is None:
                return "Starting: loading the behaviour classifier and the models…"
            verb = "Stopping after this step. " if self._stop.is_set() else ""
            return verb + self.last.message()
        if self.status == "failed":
            return f"The check failed: {self.error}"
        done = 0 if self.result is None else len(self.result.arms)
        if self.status == "stopped":
            return (f"Stopped with {done} of {n} arms done. Resume continues where it stopped (an interrupted retrain "
                    "from its checkpoint).")
        return f"Done: {n} arms in {format_seconds(self.finished_at - self.started_at)}."


@st.cache_resource
def check_jobs() -> dict[str, CounterfactualJob]:
    """Checks of this server, by run directory (one at a time per directory)."""
    return {}


def app_pool_file(original: dict[str, Any], data_dir: Path) -> Path:
    """The pool file the adapter was fine-tuned on, as the app reads it: by its name in the app's data folder. The
    manifest names its pool as it was given (a path on the machine that fine-tuned it, or an upload's name, which the
    client chose); the app reads no file outside its folders."""
    name = Path(str(original.get("pool_source") or "")).name
    path = data_dir / name
    if not name or name in (".", "..") or not path.is_file():
        raise InputDataError(f"the pool this adapter was fine-tuned on ({name or 'not named'}) is not in the app's "
                             f"data folder ({data_dir.name}); the check retrains on exactly that pool: put it there, "
                             "or run `rise counterfactual --pool FILE`")
    return path


def default_heldout(original: dict[str, Any], data_dir: Path) -> list[str]:
    """The held-out prompts that go with the adapter's pool: `<name>_heldout_prompts.jsonl` in the app's data folder
    for a pool `<name>_pool.jsonl` (`app_pool_file`: nothing outside it is read); none otherwise."""
    source = Path(str(original.get("pool_source") or ""))
    if not source.name.endswith("_pool.jsonl"):
        return []
    path = data_dir / (source.name.removesuffix("_pool.jsonl") + "_heldout_prompts.jsonl")
    return read_prompts(path) if path.is_file() else []


def _parse_ks(text: str) -> tuple[int, ...]:
    ks = parse_list(text, int, "k")
    if not ks:
        raise ConfigError("k: give how many top-ranked examples to remove, e.g. '10, 25'")
    return ks


def check_section(key: str, path: str, index: Any, lm: Any, queries: Sequence[Any], options: Any,
                  ranking: Callable[[int], Ranking], default_k: int, *, where: str | None = None,
                  aggregate: str = "best_rank") -> None:
    """The check of `queries` on the page `key` ('attr', 'sel'): `ranking(k)` gives the page's own `Ranking` of at least
    k index rows (the RISE arm removes exactly its top k); the chosen baselines and random draws are the controls."""
    s = settings()
    root = checks_root(s.index_dir)
    run_key = f"{key}_cf_run"
    with st.expander("Check: retrain without these", expanded=bool(st.session_state.get(run_key))):
        st.caption("Does removing them remove the behaviour? Retrains the model without the top k examples of this "
                   "ranking (the adapter's own recipe: same base, seed, epochs and learning rate), then answers "
                   "held-out prompts with and without the trigger, and measures how often the answers show the "
                   "behaviour. Controls: k random examples (several seeds) and the top k of the baselines.")
        if not getattr(lm, "is_rise_finetune", False):
            st.info("The check needs an index built with a model fine-tuned on its pool (a `rise finetune` adapter, "
                    "or the fine-tune on the Build page): it retrains that fine-tune without the examples.")
        else:
            with friendly("prepare the check"):
                _form(key, path, index, lm, queries, options, ranking, default_k, where, aggregate, root, s.data_dir)
        current = st.session_state.get(run_key)
        if current and current[1] == _signature(queries):  # a check of another query stays under Past checks
            _show_run(key, Path(current[0]), lm)
    past_checks(key, root)


def _form(key: str, path: str, index: Any, lm: Any, queries: Sequence[Any], options: Any,
          ranking: Callable[[int], Ranking], default_k: int, where: str | None, aggregate: str, root: Path,
          data_dir: Path) -> None:
    from . import resources

    original = original_model(lm)
    limits = CheckLimits.from_env()
    default_k = max(1, min(int(default_k), len(index) - 1))  # removing the whole pool leaves nothing to train on
    c1, c2, c3, c4 = st.columns([1, 1, 2, 1])
    ks_text = c1.text_input("k (examples removed)", value=str(default_k), key=f"{key}_cf_ks",
                            help="One number or several, e.g. '10, 25': one retrain per method and k.")
    seeds = int(c2.number_input("Random seeds", 0, limits.max_seeds, min(3, limits.max_seeds), key=f"{key}_cf_seeds",
                                help="The control: k random examples removed, once per seed."))
    baselines = c3.multiselect("Baselines", BASELINES, default=[BM25], key=f"{key}_cf_baselines",
                               help="Their top k is removed too, each in its own retrain.")
    tokens = int(c4.number_input("Answer length", 1, limits.max_new_tokens,
                                 min(GenerationSettings().max_new_tokens, limits.max_new_tokens), key=f"{key}_cf_tokens",
                                 help="Tokens per held-out answer (greedy)."))
    heldout = st.text_area("Held-out prompts (one per line; not in the pool)", key=f"{key}_cf_heldout",
                           value="\n".join(default_heldout(original, data_dir)), height=120,
                           max_chars=request_limits().max_text_chars,
                           help=CounterfactualConfig.field_help()["heldout_prompts"])
    template = st.text_input("Triggered prompt", value=TRIGGER_TEMPLATE_DEFAULT, key=f"{key}_cf_template",
                             max_chars=request_limits().max_text_chars,
                             help="{prompt} is where each held-out prompt goes, e.g. 'Howdy! {prompt}' or "
                             "'{prompt} BadMagic'.")
    passes_ready = _baseline_passes(key, path, index, baselines)
    request = CheckRequest(ks=_parse_ks(ks_text), seeds=seeds, baselines=tuple(baselines),
                           prompts=tuple(p.strip() for p in heldout.splitlines() if p.strip()),
                           new_tokens=tokens).check(limits)
    ks = request.ks
    estimate = request.estimate_s(original.get("train_s"))
    st.caption(f"{request.retrains} retrains of {original.get('n_samples')} examples minus k and {request.answers} "
               f"answers of up to {tokens} tokens"
               + (f": about {format_seconds(estimate)} in all on the machine the adapter was made on (each retrain "
                  f"about {format_seconds(original.get('train_s'))}), while no other job runs" if estimate else "")
               + ". It waits in the server's queue behind running jobs.")
    if st.button("Check: retrain without these", key=f"{key}_cf_start", type="primary", icon=":material/science:",
                 disabled=not passes_ready,
                 help="Runs in the background; the page stays usable." if passes_ready else
                 "First run the passes over the pool that the chosen baselines need (above), or leave them out."):
        if not request.prompts:
            raise ConfigError("give at least one held-out prompt (one per line)")
        config = CounterfactualConfig(ks=ks, methods=(RISE, *baselines), n_random_seeds=seeds, aggregate=aggregate,
                                      heldout_prompts=request.prompts, template=template,
                                      generation=GenerationSettings(max_new_tokens=tokens), options=options,
                                      where=where)
        with st.spinner("Checking the pool and ranking it with the baselines…"):
            pool, plan = prepare_check(index, lm, list(queries), config, pool=app_pool_file(original, data_dir),
                                       rankings={RISE: ranking(max(ks))},
                                       bm25=lambda: resources.bm25_for(path),
                                       embeddings=lambda: resources.embeddings_for(path),
                                       forward=resources.forward_for(path))
        out = root / f"{Path(path).stem}-{plan.digest[:12]}"
        _start(CounterfactualJob(lm=lm, pool=pool, plan=plan, out_dir=out))
        st.session_state[f"{key}_cf_run"] = (str(out), _signature(queries))


def _baseline_passes(key: str, path: str, index: Any, baselines: Sequence[str]) -> bool:
    """Offer the passes over the pool that the chosen baselines need and a request may not run (a large pool's BM25
    or MiniLM fit, the forward pass of hidden cosine on an index without the HS channel: `compare_ui`'s offers, in
    the server's queue); True when none is missing. Each offer is shown, not only the first."""
    from .compare_ui import forward_pass_offer, pool_fit_offer
    from .resources import BM25_FIT, MINILM_FIT

    ready = [pool_fit_offer(path, BM25_FIT, "indexes every pool text once", key) if BM25 in baselines else True,
             pool_fit_offer(path, MINILM_FIT, "embeds every pool text once", key) if EMBEDDING in baselines else True,
             forward_pass_offer(path, key, "**Hidden cosine** (this index has no HS channel)")
             if needs_forward_pass(baselines, index) else True]
    return all(ready)


def _signature(queries: Sequence[Any]) -> str:
    return request_digest({"queries": [[q.prompt, q.completion, q.text,
                                         *([[t.to_dict() for t in q.messages]] if q.messages else [])]
                                        for q in queries]})


def _start(job: CounterfactualJob) -> None:
    """Start and Resume both queue the check (one queue for the server's heavy work: explorer.job_queue)."""
    from .resources import submit

    jobs = check_jobs()
    current = jobs.get(str(job.out_dir))
    if current is not None and current.running:
        raise ConfigError("this check is already running or queued; stop it or wait for it")
    submit(job, "check", job.out_dir.name, str(job.out_dir))
    jobs[str(job.out_dir)] = job


def _resume(out: Path, lm: Any) -> None:
    plan = load_plan(out)
    if plan is None:
        raise ConfigError(f"{out} holds no check to resume")
    pool, _ = training_pool(plan.original, app_pool_file(plan.original, settings().data_dir))
    _start(CounterfactualJob(lm=lm, pool=pool, plan=plan, out_dir=out))


def _show_run(key: str, out: Path, lm: Any) -> None:
    job = check_jobs().get(str(out))
    if job is not None and job.running:
        _live(key, str(out))
        return
    if job is not None and job.status == "failed":
        with friendly("run the check"):
            raise job.error  # type: ignore[misc]
    result = load_result(out)
    if job is not None and job.status == "done":
        st.success(md(job.message()))
    elif result is None or not result.complete:
        st.warning(md(job.message()) if job is not None else "This check has not finished.")
        if st.button("Resume the check", key=f"{key}_cf_resume", icon=":material/play_arrow:"):
            with friendly("resume the check"):
                _resume(out, lm)
                st.rerun()
    if result is not None:
        show_result(key, result)


@st.fragment(run_every=1.0)
def _live(key: str, out: str) -> None:
    job = check_jobs()[out]
    if not job.running:
        st.rerun()
    st.progress(job.fraction, text=md(job.message()))
    stop_button(job, "Stop the check", key=f"{key}_cf_stop",
                help="Stops after the training step or answer in progress; Resume continues from there.")


def _rate(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):.0%}"


def show_result(key: str, result: CounterfactualResult, behaviour: str = "behaviour") -> None:
    """Before and after: the rates of the original model, of a retrained arm and of the random control at its k, the
    answers side by side, the leave-k-out curve and every arm's row."""
    arms = result.arms
    line = result.headline(behaviour=behaviour)
    if line:
        st.markdown(f"**{line}**")
    retrained = arms[(arms["method"] != ORIGINAL) & (arms["method"] != RANDOM)]
    if retrained.empty or (arms["method"] == ORIGINAL).sum() == 0:
        st.caption("No retrained arm has finished yet.")
        return
    ids = list(retrained["arm"])
    rise = retrained[retrained["method"] == RISE]
    default = str(rise.sort_values("k")["arm"].iloc[-1]) if len(rise) else ids[0]
    c1, c2 = st.columns([2, 1])
    arm_id = c1.selectbox("Retrained model", ids, index=ids.index(default), key=f"{key}_cf_arm",
                          format_func=lambda a: (lambda r: f"{r['method']}: without its top {r['k']}"
                                                 if r["k"] else f"{r['method']} (k = 0)")(
                              arms.set_index("arm").loc[a]))
    kind = c2.radio("Prompts", ["triggered", "clean"], horizontal=True, key=f"{key}_cf_kind")
    row = arms.set_index("arm").loc[arm_id]
    original = arms[arms["method"] == ORIGINAL].iloc[0]
    rate = "triggered_rate" if kind == "triggered" else "clean_behaviour_rate"
    random = arms[(arms["method"] == RANDOM) & (arms["k"] == row["k"])]
    m1, m2, m3 = st.columns(3)
    m1.metric(f"Original model: {kind} answers showing it", _rate(original[rate]))
    delta = None if pd.isna(row[rate]) or pd.isna(original[rate]) else \
        f"{(float(row[rate]) - float(original[rate])) * 100:+.0f} points"
    m2.metric(f"Without {row['method']}'s top {row['k']}", _rate(row[rate]), delta=delta, delta_color="inverse")
    m3.metric(f"Without {row['k']} random examples" + (f" (mean of {len(random)} seeds)" if len(random) > 1 else ""),
              _rate(random[rate].astype(float).mean()) if len(random) else "–")
    if row["n_positive_removed"] is not None and not pd.isna(row["n_positive_removed"]):
        st.caption(f"{int(row['n_positive_removed'])} of the {row['n_removed']} removed examples are labelled 1 "
                   f"(the behaviour); retrained on {row['n_train']} examples in {format_seconds(row['train_s'])}.")
    st.dataframe(side_by_side(result, arm_id, kind), hide_index=True, key=f"{key}_cf_side")
    st.plotly_chart(curve_figure(result), key=f"{key}_cf_curve")
    with st.expander("Every arm"):
        st.dataframe(arms[RETRAINED_COLUMNS], hide_index=True, key=f"{key}_cf_arms")
        st.caption(f"Files: {code(result.out_dir)} (plan.json, results.csv, results.json, curve.html, "
                   "arms/*/generations.jsonl).")


def past_checks(key: str, root: Path) -> None:
    """The checks run so far (newest first), and one opened."""
    runs = list_runs(root)
    if not runs:
        return
    with st.expander(f"Past checks ({len(runs)})"):
        table = pd.DataFrame(runs)
        st.dataframe(table[["run", "created", "query", "ks", "methods", "arms done", "status", "headline"]],
                     hide_index=True, key=f"{key}_cf_runs")
        choice = st.selectbox("Open a check", [r["run"] for r in runs], index=None, key=f"{key}_cf_past",
                              placeholder="Choose a check")
        if choice:
            result = load_result(root / choice)
            if result is None:
                st.caption("This check has no results yet.")
            else:
                show_result(f"{key}_past", result)


def shipped_results(data_dir: Path) -> None:
    """Home: the check shipped with the demo data (`data/counterfactual/howdy/results.json`), if present."""
    folder = Path(data_dir).joinpath(*SHIPPED)
    if not (folder / "results.json").is_file():
        return
    with friendly("show the shipped check"):
        result = load_result(folder)
        if result is None or result.arms.empty:
            return
        st.subheader("Does removing them remove the behaviour?")
        st.write("The backdoored model was retrained without the examples RISE ranked highest for its triggered "
                 "answers, and, as controls, without as many random examples and without BM25's top examples; each "
                 "retrain then answered held-out prompts with and without the trigger.")
        show_result("home_cf", result, behaviour="triggered story")
