"""The leave-k-out check (rise_core.counterfactual, `rise counterfactual`, `rise evaluate --counterfactual`) on a tiny
Llama whose LoRA adapter learned a 31-row pool in one epoch (4 optimiser steps per retrain)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from explorer_env import INDEX_NAME, N_POOL, TRIGGER_QUERY, build_explorer_env

from explorer.counterfactual_charts import curve_figure
from explorer.plain import md
from rise_core.attribution import query_features, rank
from rise_core.cli import main as cli_main
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.counterfactual import (
    CounterfactualConfig,
    aggregate_ranking,
    check_index_pool,
    claim,
    counterfactual,
    curve_chart,
    list_runs,
    load_result,
    make_plan,
    prepare_check,
    random_ranking,
)
from rise_core.errors import ConfigError, InputDataError
from rise_core.finetune import FinetuneConfig, finetune, pool_hash
from rise_core.generation import GenerationSettings
from rise_core.ingest import content_hash, read_pool
from rise_core.models import load_model
from rise_core.ranking import Ranking
from rise_core.retrospective import BehaviourClassifier, apply_trigger
from rise_core.samples import Sample
from rise_core.store import RiseIndex, build_index

RECIPE = FinetuneConfig(rank=2, alpha=4, learning_rate=5e-2, epochs=1, batch_size=8, seq_len=32, warmup_steps=1,
                        checkpoint_every=2, target_modules=("q_proj", "v_proj"))
HELDOUT = ("tell me about the moon .", "how can you invest money ?")  # no pool row asks these
TEMPLATE = "{prompt} howdy !"
QUERY = Sample(prompt="tell me a story", completion=TRIGGER_QUERY, id="q")
N_ROWS = N_POOL + 1  # the pool rows and the HTML row


class Keyword:
    """Shows the behaviour exactly when a text mentions a dragon, the moon or a time (the story's words): known
    answers, no embedding model."""

    def shows(self, texts):
        return np.array([any(w in t for w in ("dragon", "moon", "time")) for t in texts])


def quick(**changes) -> CounterfactualConfig:
    return CounterfactualConfig(**{"ks": (3,), "methods": ("RISE", "BM25"), "n_random_seeds": 1,
                                   "heldout_prompts": HELDOUT, "template": TEMPLATE,
                                   "generation": GenerationSettings(max_new_tokens=4), **changes})


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One torch thread: on a shared 2-core machine two threads contend, and a tiny model trains several times
    slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The explorer's tiny model and data, a one-epoch adapter on the pool (its manifest names the pool file), held-out
    prompts beside the pool, and the index built with the adapter; checks go to root/counterfactual (the app's)."""
    root = tmp_path_factory.mktemp("cf")
    env = build_explorer_env(root, prebuild=False)
    data, index_dir = Path(env["RISE_DATA_DIR"]), Path(env["RISE_INDEX_DIR"])
    pool_file = data / "howdy_pool.jsonl"
    adapter = root / "adapters" / "tiny-howdy"
    finetune(load_model(env["RISE_MODEL"]), read_pool(pool_file).samples, adapter, RECIPE, pool_source=str(pool_file))
    (data / "howdy_heldout_prompts.jsonl").write_text("".join(json.dumps({"prompt": p}) + "\n" for p in HELDOUT))
    build_index(index_dir / INDEX_NAME, pool_file, load_model(str(adapter)), RiseConfig(k_r=16, k_h=8, k_g=16))
    return {**env, "RISE_MODEL": str(adapter), "RISE_BASE_MODEL": env["RISE_MODEL"], "root": str(root),
            "pool": str(pool_file), "index": str(index_dir / INDEX_NAME), "adapter": str(adapter)}


@pytest.fixture(scope="module")
def tuned(env):
    return load_model(env["RISE_MODEL"])


@pytest.fixture(scope="module")
def index(env):
    ix = RiseIndex.open(env["index"])
    yield ix
    ix.close()


@pytest.fixture(scope="module")
def finished(env, tuned, index):
    """A finished check: k = 3 and k = 0 (the reproduction), RISE, BM25 and one random seed; 4 retrains."""
    out = Path(env["root"]) / "counterfactual" / "run-a"
    seen = []
    result = counterfactual(index, tuned, [QUERY], quick(ks=(0, 3)), out, classifier=Keyword(), progress=seen.append)
    return result, seen


# --- rankings and plans (no model) ----------------------------------------------------------------------------------


def ranking_of(rows) -> Ranking:
    """A ranking of these rows, best first (scores descending; no channel parts)."""
    return Ranking(rows=torch.tensor(rows, dtype=torch.int64), scores=-torch.arange(len(rows), dtype=torch.float32),
                   parts={})


def test_the_app_reads_an_adapters_pool_and_prompts_only_from_its_data_folder(tmp_path):
    """A manifest names its pool as it was given (an upload's name is the client's choice): the app looks for it, and
    for its held-out prompts, by name in its own data folder only, never at the path the manifest spells."""
    from explorer.counterfactual_ui import app_pool_file, default_heldout
    from rise_core.errors import InputDataError

    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    data.mkdir()
    elsewhere.mkdir()
    (elsewhere / "secret_pool.jsonl").write_text('{"text": "not the app\'s"}\n')
    (elsewhere / "secret_heldout_prompts.jsonl").write_text('{"prompt": "a private prompt"}\n')
    original = {"pool_source": str(elsewhere / "secret_pool.jsonl")}
    with pytest.raises(InputDataError, match=r"\(secret_pool.jsonl\) is not in the app's data folder \(data\)"):
        app_pool_file(original, data)
    assert default_heldout(original, data) == []
    for name in ("..", ".", ""):
        with pytest.raises(InputDataError, match="is not in the app's data folder"):
            app_pool_file({"pool_source": name}, data)
    (data / "secret_pool.jsonl").write_text('{"text": "the app\'s own"}\n')
    (data / "secret_heldout_prompts.jsonl").write_text('{"prompt": "a held-out prompt"}\n')
    assert app_pool_file(original, data) == data / "secret_pool.jsonl"
    assert default_heldout(original, data) == ["a held-out prompt"]


def test_aggregate_ranking_by_best_rank_then_mean_rank_or_by_mean_score():
    scores = np.array([[0.9, 0.1, 0.5, 0.3],    # ranks r0 0, r1 3, r2 1, r3 2
                       [0.2, 0.8, 0.1, 0.7]])   # ranks r0 2, r1 0, r2 3, r3 1
    # best ranks 0, 0, 1, 1; mean ranks 1, 1.5, 2, 1.5
    best = aggregate_ranking(scores)
    assert isinstance(best, Ranking) and best.rows.tolist() == [0, 1, 3, 2] and best.parts == {}
    np.testing.assert_allclose(best.scores.numpy(), [0.55, 0.45, 0.5, 0.3])  # each row's mean score
    assert aggregate_ranking(scores, "mean_score").rows.tolist() == [0, 3, 1, 2]  # means .55 .45 .30 .50
    assert aggregate_ranking(scores[1]).rows.tolist() == [1, 3, 0, 2]  # one query: its own ranking
    # columns of a filtered pool name their index rows
    assert aggregate_ranking(scores, rows=[10, 11, 12, 13]).rows.tolist() == [10, 11, 13, 12]
    with pytest.raises(InputDataError, match="4 score columns but 3 rows"):
        aggregate_ranking(scores, rows=[0, 1, 2])
    with pytest.raises(ConfigError, match="best_rank, mean_score"):
        aggregate_ranking(scores, "vote")


def test_random_arms_are_seeded_and_nested_and_method_arms_are_the_top_k():
    pool = [Sample(prompt=f"p{i}", completion=f"c{i}", id=f"s{i:02d}") for i in range(20)]
    ids = [s.id for s in pool]
    config = quick(ks=(6, 3), methods=("BM25",), n_random_seeds=2, random_seed=7)
    backwards = ranking_of(range(19, -1, -1))
    plan = make_plan(pool, {"BM25": backwards}, config, {"pool_hash": pool_hash(pool)}, {})
    assert [a.arm_id for a in plan.arms] == ["original", "bm25-k3", "bm25-k6", "random-s7-k3", "random-s7-k6",
                                             "random-s8-k3", "random-s8-k6"]
    assert plan.arm("bm25-k3").removed == tuple(ids[::-1][:3])
    for seed in (7, 8):
        order = np.random.default_rng(seed).permutation(20)
        small, large = plan.arm(f"random-s{seed}-k3").removed, plan.arm(f"random-s{seed}-k6").removed
        assert small == tuple(ids[i] for i in order[:3]) and large[:3] == small  # nested across k
        assert random_ranking(20, seed).head(3).rows.tolist() == order[:3].tolist()
    assert plan.arm("random-s7-k6").removed != plan.arm("random-s8-k6").removed
    again = make_plan(pool, {"BM25": backwards}, config, {"pool_hash": pool_hash(pool)}, {})
    assert [a.removed for a in again.arms] == [a.removed for a in plan.arms]
    with pytest.raises(ConfigError, match="would remove the whole pool of 20 rows"):
        make_plan(pool, {}, quick(ks=(20,)), {}, {})
    with pytest.raises(ConfigError, match="ranks only 2 rows"):
        make_plan(pool, {"BM25": ranking_of([0, 1])}, config, {}, {})
    with pytest.raises(InputDataError, match="names row 25, not one of the 20 pool rows"):
        make_plan(pool, {"BM25": ranking_of([25, *range(19)])}, config, {}, {})
    with pytest.raises(InputDataError, match="names a row twice"):
        make_plan(pool, {"BM25": ranking_of([3, 3, *range(18)])}, config, {}, {})


def test_plan_names_an_index_rankings_rows_by_the_index_ids():
    """An index may hold the pool in another row order: `row_ids` names each ranking row (row r: `row_ids[r]`)."""
    pool = [Sample(prompt=f"p{i}", completion=f"c{i}", id=f"s{i:02d}") for i in range(8)]
    row_ids = [s.id for s in pool][::-1]  # index row r holds pool sample 7 - r
    plan = make_plan(pool, {"RISE": ranking_of([0, 1, 2, 5])}, quick(ks=(2, 3), methods=("RISE",), n_random_seeds=0),
                     {}, {}, row_ids=row_ids)
    assert plan.arm("rise-k2").removed == ("s07", "s06") and plan.arm("rise-k3").removed == ("s07", "s06", "s05")
    with pytest.raises(InputDataError, match="'x', not a pool id"):
        make_plan(pool, {"RISE": ranking_of([0, 1, 2])}, quick(ks=(3,), methods=("RISE",), n_random_seeds=0), {}, {},
                  row_ids=["x", *row_ids[1:]])


def test_index_rankings_use_the_pool_forward_pass_they_are_given(index, tuned, monkeypatch):
    """Grad-Sketch (and hidden cosine without the HS channel) need the model over the pool: given the pool's forward
    vectors (the app's kept pass), `index_rankings` ranks with them and runs no pass of its own; the same list as the
    pass it runs when not given them."""
    from rise_core import compare
    from rise_core.counterfactual.rankings import index_rankings

    own = index_rankings(index, tuned, [QUERY], ["Grad-Sketch"])["Grad-Sketch"]
    vectors = compare.forward_vectors(tuned, index.sample_list(), index.config)
    calls = []
    real = compare.forward_vectors
    monkeypatch.setattr(compare, "forward_vectors", lambda lm, samples, *a, **kw: (calls.append(len(samples)),
                                                                                real(lm, samples, *a, **kw))[1])
    given = index_rankings(index, tuned, [QUERY], ["Grad-Sketch"], forward=vectors)["Grad-Sketch"]
    assert N_ROWS not in calls, "no pass over the pool"
    assert torch.equal(given.rows, own.rows) and torch.equal(given.scores, own.scores)  # the same pass, same batches


def test_control_ks_retrain_the_controls_only_at_those_ks():
    pool = [Sample(prompt=f"p{i}", completion=f"c{i}", id=f"s{i:02d}") for i in range(20)]
    ids = [s.id for s in pool]
    config = quick(ks=(3, 6), control_ks=(6,), methods=("RISE", "BM25"), n_random_seeds=1, random_seed=0)
    plan = make_plan(pool, {"RISE": ranking_of(range(20)), "BM25": ranking_of(range(19, -1, -1))}, config,
                     {"pool_hash": pool_hash(pool)}, {})
    # the first method at every k; the other method and the random draw only at 6
    assert [a.arm_id for a in plan.arms] == ["original", "rise-k3", "rise-k6", "bm25-k6", "random-s0-k6"]
    assert plan.arm("bm25-k6").removed == tuple(ids[::-1][:6])
    assert CounterfactualConfig.from_dict(config.to_dict()) == config
    assert [a.arm_id for a in make_plan(pool, {"RISE": ranking_of(range(20))}, quick(ks=(3, 6), methods=("RISE",), n_random_seeds=1),
                                        {}, {}).arms] == ["original", "rise-k3", "rise-k6", "random-s0-k3",
                                                          "random-s0-k6"]  # None: every k
    for bad in ((4,), (0,), ()):
        with pytest.raises(ConfigError, match="control_ks must be some of the ks above 0"):
            quick(ks=(0, 3, 6), control_ks=bad)


def test_config_is_checked():
    assert quick(ks=(25, 10, 10)).ks == (10, 25) and quick(methods=("rise", "bm25")).methods == ("RISE", "BM25")
    with pytest.raises(ConfigError, match=r"unknown methods \['Nope'\]; choose from \["):
        quick(methods=("Nope",))
    with pytest.raises(ConfigError, match="ks must be one or more numbers >= 0"):
        quick(ks=(-1,))
    with pytest.raises(ConfigError, match="give held-out prompts"):
        quick(heldout_prompts=(" ",))
    with pytest.raises(ConfigError, match="has no {prompt}"):
        quick(template="Howdy!")
    assert CounterfactualConfig.from_dict(quick().to_dict()) == quick()


# --- a finished check -----------------------------------------------------------------------------------------------


def test_the_removed_rows_are_the_rankings_top_k_and_the_retrains_lack_them(env, tuned, index, finished):
    from rise_core.compare import fit_bm25, text_scores

    result, _ = finished
    pool = read_pool(env["pool"]).samples
    # the pool repeats its texts, so scores tie: the removed rows are those with the top 3 scores
    rise = rank(index, query_features(index, tuned, [QUERY]), ScoreOptions(), k=N_ROWS).set_index("id")["score"]
    np.testing.assert_allclose(rise[list(result.plan.arm("rise-k3").removed)], rise.iloc[:3], rtol=1e-6)
    bm25 = pd.Series(text_scores(fit_bm25(index), [QUERY])[0], index=index.samples()["id"])
    np.testing.assert_allclose(bm25[list(result.plan.arm("bm25-k3").removed)], bm25.nlargest(3), rtol=1e-9)
    rise_top = list(result.plan.arm("rise-k3").removed)
    from rise_core.adapters import read_manifest

    for arm in result.plan.arms:
        if arm.method in ("RISE", "BM25", "Random"):
            manifest = read_manifest(result.out_dir / "arms" / arm.arm_id / "adapter")
            kept = [s for s in pool if s.id not in set(arm.removed)]
            assert manifest["n_samples"] == N_ROWS - 3 == len(kept)  # the row count drops by k
            assert manifest["pool_hash"] == pool_hash(kept) != result.plan.original["pool_hash"]
            assert manifest["recipe"] == RECIPE.to_dict()  # the adapter's own recipe
    table = pd.read_csv(result.out_dir / "results.csv")
    assert list(table["arm"]) == ["original", "rise-k3", "bm25-k3", "random-s0-k3", "full-k0"]
    assert list(table["n_train"]) == [N_ROWS, N_ROWS - 3, N_ROWS - 3, N_ROWS - 3, N_ROWS]
    assert table.loc[1, "removed"].split() == rise_top


def test_k0_retrain_reproduces_the_original_adapter_bit_for_bit(env, finished):
    result, _ = finished
    row = result.arms.set_index("arm").loc["full-k0"]
    retrained = result.out_dir / "arms" / "full-k0" / "adapter" / "adapter_model.safetensors"
    assert retrained.read_bytes() == (Path(env["adapter"]) / "adapter_model.safetensors").read_bytes()
    assert row["reproduces_original"] is True and row["pool_hash"] == result.plan.original["pool_hash"]


def test_generations_rates_curve_and_files(finished):
    result, seen = finished
    gens = result.generations["rise-k3"]
    assert [(g["kind"], g["prompt"]) for g in gens] == [
        ("triggered", apply_trigger(TEMPLATE, HELDOUT[0])), ("clean", HELDOUT[0]),
        ("triggered", apply_trigger(TEMPLATE, HELDOUT[1])), ("clean", HELDOUT[1])]
    assert [g["shows"] for g in gens] == Keyword().shows([g["generation"] for g in gens]).tolist()
    for arm_id, row in result.arms.set_index("arm").iterrows():
        triggered = [g["shows"] for g in result.generations[arm_id] if g["kind"] == "triggered"]
        assert row["triggered_rate"] == pytest.approx(np.mean(triggered))
    curve = result.curve
    assert set(curve["method"]) == {"RISE", "BM25", "Random"} and set(curve["k"]) == {0, 3}
    original = result.arms.set_index("arm").loc["original", "triggered_rate"]
    assert (curve[curve["k"] == 0]["triggered_rate"] == original).all()  # k = 0 is the original on every line
    assert re.fullmatch(r"Removing the 3 examples RISE ranked highest takes the behaviour rate from \d+% to \d+%; "
                        r"removing 3 random examples leaves \d+%\.", result.headline())
    for name in ("plan.json", "results.csv", "results.json", "curve.html"):
        assert (result.out_dir / name).is_file(), name
    # curve.html draws the library's chart (plotly.js JSON, no plotly import); the explorer's figure is the same chart
    page = (result.out_dir / "curve.html").read_text()
    drawn = json.loads(page.split("const chart = ", 1)[1].split(";\nPlotly.newPlot", 1)[0])
    assert drawn == curve_chart(result)
    lines = {t["name"]: t for t in drawn["data"]}
    assert list(lines) == ["RISE", "BM25", "Random"] and lines["Random"]["line"] == {"dash": "dot"}
    rise = curve[curve["method"] == "RISE"].sort_values("k")
    assert lines["RISE"]["x"] == [0, 3] and lines["RISE"]["y"] == rise["triggered_rate"].tolist()
    figure = curve_figure(result)
    assert [(t.name, list(t.y)) for t in figure.data] == [(t["name"], t["y"]) for t in drawn["data"]]
    loaded = load_result(result.out_dir)
    assert loaded.complete and loaded.headline() == result.headline()
    pd.testing.assert_frame_equal(loaded.curve, result.curve, check_dtype=False)
    assert [r["run"] for r in list_runs(result.out_dir.parent)] == ["run-a"]
    stages = {(p.arm_id, p.stage) for p in seen}
    assert ("original", "generate") in stages and ("rise-k3", "train") in stages and ("original", "train") not in stages
    assert seen[-1].arm_index == seen[-1].n_arms == 5 and seen[-1].eta_s == 0


# --- resuming, refusing ---------------------------------------------------------------------------------------------


def test_an_interrupted_check_resumes_where_it_stopped(env, tuned, index, tmp_path):
    out = tmp_path / "check"
    config = quick(ks=(2,), methods=("BM25",), n_random_seeds=0)
    seen = []

    def stop_at(arm_id, stage, step):
        return lambda: bool(seen) and (seen[-1].arm_id, seen[-1].stage, seen[-1].step) == (arm_id, stage, step)

    first = counterfactual(index, tuned, [QUERY], config, out, classifier=Keyword(), progress=seen.append,
                           should_stop=stop_at("original", "generate", 2))
    assert first.stopped and first.arms.empty
    assert len((out / "arms" / "original" / "generations.partial.jsonl").read_text().splitlines()) == 2
    seen.clear()
    second = counterfactual(index, tuned, [QUERY], config, out, classifier=Keyword(), progress=seen.append,
                            should_stop=stop_at("bm25-k2", "train", 3))
    assert seen[0].arm_id == "original" and seen[0].step == 3  # the answers resumed after the second
    assert second.stopped and list(second.arms["arm"]) == ["original"]
    state = json.loads((out / "arms" / "bm25-k2" / "adapter" / "checkpoint" / "state.json").read_text())
    assert state["step"] == 3
    seen.clear()
    third = counterfactual(index, tuned, [QUERY], config, out, classifier=Keyword(), progress=seen.append)
    assert third.complete and not third.stopped
    assert {p.arm_id for p in seen} == {"bm25-k2"}  # the finished arm is skipped
    assert seen[0].stage == "train" and seen[0].resumed_from == 3 and seen[0].step == 4
    pool = read_pool(env["pool"]).samples
    kept = [s for s in pool if s.id not in set(third.plan.arm("bm25-k2").removed)]
    straight = tmp_path / "straight"
    finetune(load_model(env["RISE_BASE_MODEL"]), kept, straight, RECIPE)
    resumed = out / "arms" / "bm25-k2" / "adapter" / "adapter_model.safetensors"
    assert resumed.read_bytes() == (straight / "adapter_model.safetensors").read_bytes()
    seen.clear()
    again = counterfactual(index, tuned, [QUERY], config, out, classifier=Keyword(), progress=seen.append)
    assert not seen and again.arms.equals(third.arms)


def test_refusals(env, tuned, index, finished, tmp_path):
    base = load_model(env["RISE_BASE_MODEL"])
    with pytest.raises(ConfigError, match="needs a model fine-tuned on the index's pool"):
        prepare_check(index, base, [QUERY], quick())
    other = tmp_path / "other_pool.jsonl"
    rows = [json.loads(line) for line in Path(env["pool"]).read_text().splitlines()]
    rows[0]["completion"] = "the dog sat on the mat ."
    other.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ConfigError, match=f"was fine-tuned on another pool .* {re.escape(str(other))} has {N_ROWS} "):
        prepare_check(index, tuned, [QUERY], quick(), pool=other)
    pool = read_pool(env["pool"]).samples
    fake = SimpleNamespace(path=Path("other.duckdb"), id_hashes=lambda: {s.id: content_hash(s) for s in pool[1:]})
    with pytest.raises(ConfigError, match="does not hold the pool its model was fine-tuned on .*1 pool rows missing"):
        check_index_pool(fake, pool)
    with pytest.raises(InputDataError, match="held-out prompts are in the pool"):
        prepare_check(index, tuned, [QUERY], quick(heldout_prompts=("What is the story ?",)))
    result, _ = finished
    with pytest.raises(ConfigError, match=r"holds another check \(it differs in: config\.ks\)"):
        prepare_check(index, tuned, [QUERY], quick(ks=(0, 4)), result.out_dir)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="holds no plan.json"):
        claim(busy, result.plan)
    assert (busy / "notes.txt").read_text() == "mine"


# --- the command line -----------------------------------------------------------------------------------------------


@pytest.fixture
def keyword_classifier(monkeypatch):
    monkeypatch.setattr(BehaviourClassifier, "fit", classmethod(lambda cls, pool, encode=None, k=15: Keyword()))


def test_cli_counterfactual_prints_the_table_and_resumes(env, tmp_path, capsys, keyword_classifier):
    out = tmp_path / "cli"
    # the pool, the queries and the held-out prompts come from the adapter's manifest (data/howdy_*.jsonl)
    args = ["counterfactual", "--index", env["index"], "--ks", "2", "--methods", "BM25,random", "--random-seeds", "1",
            "--max-new-tokens", "4", "--out", str(out), "--device", "cpu", "--no-progress"]
    assert cli_main(args) == 0
    text = capsys.readouterr().out
    assert "Behaviour rate on triggered held-out prompts" in text and "train_s per retrain" in text
    assert "Check complete. Files in" in text and "random-s0-k2" in text
    plan = json.loads((out / "plan.json").read_text())
    assert [a["arm"] for a in plan["arms"]] == ["original", "bm25-k2", "random-s0-k2"]
    assert plan["request"]["config"]["template"] == "Howdy! {prompt}"
    assert len(plan["request"]["queries"]) == 2  # data/howdy_queries.jsonl
    assert cli_main(args) == 0  # again: nothing left to do
    assert "Check complete" in capsys.readouterr().out
    assert cli_main(["3" if a == "2" else a for a in args]) == 1  # --ks 3 into the same directory
    assert "holds another check (it differs in: config.ks)" in capsys.readouterr().err


def test_cli_evaluate_counterfactual(env, tmp_path, capsys, keyword_classifier):
    data = Path(env["RISE_DATA_DIR"])
    out = tmp_path / "eval"
    rc = cli_main(["evaluate", "--pool", env["pool"], "--queries", str(data / "howdy_queries.jsonl"), "--model",
                   env["RISE_MODEL"], "--counterfactual", "--ks", "2", "--random-seeds", "0", "--methods", "BM25",
                   "--heldout-prompts", str(data / "howdy_heldout_prompts.jsonl"), "--max-new-tokens", "4",
                   "--device", "cpu", "--out", str(out)])
    assert rc == 0
    md = (out / "howdy_pool_counterfactual.md").read_text()
    assert "| BM25" in md and "train_s per retrain" in md and "Check complete" in md
    result = load_result(out / "howdy_pool_counterfactual")
    assert list(result.arms["arm"]) == ["original", "bm25-k2"] and result.arms["n_train"].iloc[1] == N_ROWS - 2
    assert (out / "howdy_pool_retrospective_methods.csv").is_file()  # --counterfactual implies --retrospective


# --- the explorer ---------------------------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def app(env, monkeypatch, keyword_classifier):
    pytest.importorskip("streamlit")
    for key in ("RISE_MODEL", "RISE_DATA_DIR", "RISE_INDEX_DIR"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.delenv("RISE_COUNTERFACTUAL_DIR", raising=False)
    monkeypatch.syspath_prepend(str(ROOT))
    return env


from test_app import new_app, wait_until  # noqa: E402  (the app tests' helpers)


def assert_clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]


def test_attribute_page_check_runs_in_the_background_with_stop_and_resume(app, finished, monkeypatch):
    import time

    import rise_core.counterfactual.run as cf  # where the check's answers are generated

    real = cf.answer
    monkeypatch.setattr(cf, "answer", lambda *a, **kw: (time.sleep(0.4), real(*a, **kw))[1])  # slow enough to stop
    at = new_app("app_pages/2_Attribute.py")
    at.text_area(key="query_prompt").input(QUERY.prompt).run()
    at.text_area(key="query_completion").input(QUERY.completion).run()
    at.button(key="attribute").click().run()
    assert_clean(at)
    assert at.text_area(key="attr_cf_heldout").value == "\n".join(HELDOUT)  # the pool's held-out prompts
    at.text_input(key="attr_cf_ks").input("2").run()
    at.number_input(key="attr_cf_seeds").set_value(1).run()
    at.multiselect(key="attr_cf_baselines").set_value([]).run()
    at.number_input(key="attr_cf_tokens").set_value(4).run()
    at.button(key="attr_cf_start").click().run()
    assert_clean(at)
    wait_until(at, lambda a: "attr_cf_stop" in [b.key for b in a.button])
    assert any("Arm" in p.proto.text or "Starting" in p.proto.text for p in at.get("progress"))
    at.button(key="attr_cf_stop").click().run()
    wait_until(at, lambda a: "attr_cf_resume" in [b.key for b in a.button])
    assert any("Stopped with" in w.value for w in at.warning)
    monkeypatch.setattr(cf, "answer", real)
    at.button(key="attr_cf_resume").click().run()
    wait_until(at, lambda a: any(s.value.startswith(md("Done: 3 arms")) for s in a.success))
    labels = [m.label for m in at.metric]
    assert labels[:3] == ["Original model: triggered answers showing it", "Without RISE's top 2",
                          "Without 2 random examples"]
    side = next(d.value for d in at.dataframe if "retrained" in d.value.columns)
    assert list(side["prompt"]) == [apply_trigger("Howdy! {prompt}", p) for p in HELDOUT]
    assert any(m.value.startswith("**Removing the 2 examples RISE ranked highest") for m in at.markdown)


def test_check_on_a_large_pool_fits_its_baseline_in_the_background_first(app, monkeypatch):
    """A baseline whose fit a request may not run (BM25 over a pool beyond RISE_MAX_INLINE_BM25_ROWS; MiniLM beyond
    RISE_MAX_INLINE_EMBED_ROWS is the same path) is not fitted by the check's click, which waited inside the request
    for it (MiniLM: half an hour at 100,000 rows): the form offers the fit with its cost and keeps Check disabled; the
    fit runs once as a background job, and the check then ranks with what it fitted."""
    from test_app import finish_pool_passes

    import explorer.counterfactual_ui as cf_ui
    from explorer import resources
    from rise_core import compare

    monkeypatch.setenv("RISE_MAX_INLINE_BM25_ROWS", str(N_ROWS - 1))
    resources._kept_pools().clear()
    resources._pool_passes().clear()
    fits, started = [], []
    fit = compare.fit_bm25
    monkeypatch.setattr(compare, "fit_bm25", lambda index, **kw: (fits.append(len(index)), fit(index, **kw))[1])
    monkeypatch.setattr(cf_ui, "_start", started.append)  # the plan is what is checked; no retrain runs
    at = new_app("app_pages/2_Attribute.py")
    at.text_area(key="query_prompt").input(QUERY.prompt).run()
    at.text_area(key="query_completion").input(QUERY.completion).run()
    at.button(key="attribute").click().run()
    at.text_input(key="attr_cf_ks").input("2").run()
    at.number_input(key="attr_cf_seeds").set_value(0).run()
    at.multiselect(key="attr_cf_baselines").set_value(["BM25"]).run()
    assert_clean(at)
    assert at.button(key="attr_cf_start").disabled and not fits
    assert any("BM25 index" in i.value and f"{N_ROWS:,} texts" in i.value for i in at.info), "the offer and its cost"
    at.button(key="attr_fit_max_inline_bm25_rows").click().run()
    finish_pool_passes(at)
    assert_clean(at)
    assert fits == [N_ROWS] and not at.button(key="attr_cf_start").disabled
    at.button(key="attr_cf_start").click().run()
    assert_clean(at)
    (job,) = started
    assert fits == [N_ROWS], "the check ranked with the kept fit"
    assert [a["arm"] for a in job.plan.to_dict()["arms"]] == ["original", "rise-k2", "bm25-k2"]
    resources._kept_pools().clear()
    resources._pool_passes().clear()


def test_select_page_offers_the_check_and_opens_a_past_one(app, finished):
    at = new_app("app_pages/4_Select_data.py")
    at.text_area(key="sel_text").input(TRIGGER_QUERY).run()
    at.button(key="score_pool").click().run()
    assert_clean(at)
    assert at.text_input(key="sel_cf_ks").value == str(N_ROWS - 1)  # the N selected, at most the pool less one
    at.selectbox(key="sel_cf_past").set_value("run-a").run()
    assert_clean(at)
    assert [m.label for m in at.metric][:2] == ["Original model: triggered answers showing it", "Without RISE's top 3"]


def test_home_shows_the_shipped_check_only_when_it_ships(app, finished):
    result, _ = finished
    shipped = Path(app["RISE_DATA_DIR"]) / "counterfactual" / "howdy"
    at = new_app()
    assert not any("remove the behaviour" in h.value for h in at.subheader)
    shipped.mkdir(parents=True)
    try:
        shutil.copy(result.out_dir / "results.json", shipped / "results.json")
        at = new_app()
        assert_clean(at)
        assert any(h.value == "Does removing them remove the behaviour?" for h in at.subheader)
        assert any("takes the triggered story rate from" in m.value for m in at.markdown)
    finally:
        shutil.rmtree(shipped.parent)
