"""Diagnostics against exact math on tiny float64 models, the on-disk cache, and `rise diagnose`."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import torch
from conftest import CORPUS, FLOAT64_TOL

from rise_core.cli import main
from rise_core.config import RiseConfig, ScoreOptions
from rise_core.diagnostics import (
    DiagnosticsOptions,
    discriminativeness,
    layer_energy,
    load_results,
    model_components,
    pairwise_cosine_stats,
    parse_which,
    rh_gh_examples,
    rh_gh_ranking,
    run_diagnostics,
    sketch_fidelity,
    sparsity,
)
from rise_core.diagnostics import runner as runner_mod
from rise_core.diagnostics._common import DiagnosticResult, exact_factors, exact_grams, rh_inner
from rise_core.engine import RiseExtractor, readout_forward, sparse_residual, support_mask
from rise_core.errors import ConfigError, InputDataError
from rise_core.ingest import read_samples
from rise_core.samples import Sample
from rise_core.sketch import SketchSet

SMALL = RiseConfig(k_r=16, k_h=8, k_g=16, k_max=24, counted_positions="completion", token_norm=True,
                   center_hidden=False)
ONE_POSITION = Sample(prompt="the cat sat on the", completion="mat")


def dense_readout_gradient(lm, sample: Sample, config: RiseConfig) -> torch.Tensor:
    """sum_t r_t h_t^T over counted positions, from forward quantities only (tau = 1): (V, d)."""
    enc = RiseExtractor(lm, config).encode([sample])[0]
    ids = torch.tensor([enc.input_ids])
    with torch.no_grad():
        hidden = lm.final_hidden(ids, torch.ones_like(ids))[0, :-1][torch.tensor(enc.counted)]
        targets = ids[0, 1:][torch.tensor(enc.counted)]
        r = torch.softmax(lm.logits(hidden), dim=1) - torch.nn.functional.one_hot(targets, lm.vocab_size)
    return r.T @ hidden


def autograd_grads(lm, sample: Sample, config: RiseConfig) -> dict[str, torch.Tensor]:
    """Plain backward of the summed counted-position loss through the model's own forward (head tied or not)."""
    enc = RiseExtractor(lm, config).encode([sample])[0]
    ids = torch.tensor([enc.input_ids])
    mask = torch.tensor(enc.counted)
    with torch.enable_grad():
        logits = lm.model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0, :-1]
        loss = torch.nn.functional.cross_entropy(logits[mask], ids[0, 1:][mask], reduction="sum")
        names, params = zip(*lm.model.named_parameters(), strict=True)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
    return {n: (torch.zeros_like(p) if g is None else g) for n, p, g in zip(names, params, grads, strict=True)}


# --- layer energy ---------------------------------------------------------------------------------------------------


def test_energy_shares_sum_to_one(tiny_lm):
    res = layer_energy(tiny_lm, CORPUS, SMALL)
    comps = res["components"]
    assert comps["share_mean"].sum() == pytest.approx(1.0, abs=1e-12)
    assert comps["share_of_mean_energy"].sum() == pytest.approx(1.0, abs=1e-12)
    per_sample = res["per_sample"].groupby("sample")["share"].sum()
    assert len(per_sample) == len(CORPUS)
    assert per_sample.to_numpy() == pytest.approx(1.0, abs=1e-12)
    kinds = comps["kind"].tolist()
    assert kinds[0] == "embedding" and kinds[-1] == "head"
    assert kinds.count("block") == res.summary["n_blocks"] == 2
    assert "final_norm" in kinds
    assert res.summary["tied"] == tiny_lm.is_tied
    # every parameter is in exactly one component
    groups, _ = model_components(tiny_lm.model)
    ids = [id(p) for c in groups for p in c.params]
    assert len(ids) == len(set(ids)) == len(list(tiny_lm.model.parameters()))


def readout_autograd(lm, sample: Sample, config: RiseConfig) -> torch.Tensor:
    """Gradient of the summed counted-position loss with respect to the readout matrix alone (its use as the head,
    not as the tied input embedding), by autograd through logits = h W^T (+ b): (V, d)."""
    enc = RiseExtractor(lm, config).encode([sample])[0]
    ids = torch.tensor([enc.input_ids])
    mask = torch.tensor(enc.counted)
    with torch.no_grad():
        hidden = lm.final_hidden(ids, torch.ones_like(ids))[0, :-1][mask]
    weight = lm.readout_weight.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        logits = hidden @ weight.T + (0 if lm.readout_bias is None else lm.readout_bias.detach())
        loss = torch.nn.functional.cross_entropy(logits, ids[0, 1:][mask], reduction="sum")
        (grad,) = torch.autograd.grad(loss, weight)
    return grad


def test_head_to_block_energy_ratio_against_autograd(tiny_lm):
    """head_to_avg_ratio = mean ||dL/dW_head||^2 / mean over blocks of mean ||dL/d block||^2, from plain backwards."""
    samples = [Sample(text=t) for t in CORPUS[:4]]
    res = layer_energy(tiny_lm, samples, SMALL)
    prefix = tiny_lm.model.base_model_prefix
    head, blocks = [], []
    for sample in samples:
        grads = autograd_grads(tiny_lm, sample, SMALL)
        blocks.append([sum(g.pow(2).sum().item() for n, g in grads.items() if n.startswith(f"{prefix}.layers.{i}."))
                       for i in range(2)])
        head.append(readout_autograd(tiny_lm, sample, SMALL).pow(2).sum().item())
    block_means = torch.tensor(blocks, dtype=torch.float64).mean(dim=0)  # (n_blocks,) mean over samples
    expected = (sum(head) / len(head)) / block_means.mean().item()
    assert res.summary["head_to_avg_ratio"] == pytest.approx(expected, rel=1e-9)
    assert res.summary["head_to_avg_ratio"] != pytest.approx(1.0, rel=1e-3)  # a real ratio, not a degenerate one


def test_head_energy_equals_readout_outer_product_sum(tiny_lm):
    sample = Sample(prompt="how can you invest money ?", completion="the bank will invest money for you .")
    res = layer_energy(tiny_lm, [sample], SMALL)
    head = res["per_sample"].query("kind == 'head'")["energy"].item()
    expected = dense_readout_gradient(tiny_lm, sample, SMALL).pow(2).sum().item()
    assert head == pytest.approx(expected, rel=1e-9)


def test_head_energy_single_position_is_r_norm_times_h_norm(tiny_lm):
    enc = RiseExtractor(tiny_lm, SMALL).encode([ONE_POSITION])[0]
    assert enc.n_counted == 1
    res = layer_energy(tiny_lm, [ONE_POSITION], SMALL)
    head = res["per_sample"].query("kind == 'head'")["energy"].item()
    ids = torch.tensor([enc.input_ids])
    t = enc.counted.index(True)
    with torch.no_grad():
        h = tiny_lm.final_hidden(ids, torch.ones_like(ids))[0, t]
        r = torch.softmax(tiny_lm.logits(h), dim=0)
        r[enc.input_ids[t + 1]] -= 1.0
    assert head == pytest.approx((r.pow(2).sum() * h.pow(2).sum()).item(), rel=1e-9)


def test_component_energies_match_plain_backward(tiny_lm):
    """Blocks, norm and embedding against a plain backward; for a tied head, readout + input use = shared grad."""
    sample = Sample(text=CORPUS[2])
    res = layer_energy(tiny_lm, [sample], SMALL)
    energy = dict(zip(res["per_sample"]["component"], res["per_sample"]["energy"], strict=True))
    grads = autograd_grads(tiny_lm, sample, SMALL)
    prefix = tiny_lm.model.base_model_prefix
    for i in range(2):
        expected = sum(g.pow(2).sum().item() for n, g in grads.items() if n.startswith(f"{prefix}.layers.{i}."))
        assert energy[f"block {i}"] == pytest.approx(expected, rel=1e-9)
    shared = grads[next(n for n in grads if "embed" in n)]
    if tiny_lm.is_tied:
        readout = dense_readout_gradient(tiny_lm, sample, SMALL)
        assert energy["lm_head (readout)"] == pytest.approx(readout.pow(2).sum().item(), rel=1e-9)
        assert energy["embedding (input)"] == pytest.approx((shared - readout).pow(2).sum().item(), rel=1e-9)
        assert res.summary["tied_shared_energy_mean"] == pytest.approx(shared.pow(2).sum().item(), rel=1e-9)
    else:
        assert energy["embedding"] == pytest.approx(shared.pow(2).sum().item(), rel=1e-9)
        head = grads["lm_head.weight"]
        assert energy["lm_head"] == pytest.approx(head.pow(2).sum().item(), rel=1e-9)
    total = sum(g.pow(2).sum().item() for g in grads.values())
    if not tiny_lm.is_tied:
        assert sum(energy.values()) == pytest.approx(total, rel=1e-9)


def test_energy_does_not_touch_parameter_grads(tiny_llama):
    layer_energy(tiny_llama, CORPUS[:2], SMALL)
    assert all(p.grad is None for p in tiny_llama.model.parameters())


# --- discriminativeness -----------------------------------------------------------------------------------------------


def test_pairwise_cosine_stats_brute_force():
    torch.manual_seed(0)
    x = torch.randn(12, 5, dtype=torch.float64)
    cos = [torch.nn.functional.cosine_similarity(x[i], x[j], dim=0).item() for i in range(12) for j in range(i + 1, 12)]
    var, mean = pairwise_cosine_stats(x)
    t = torch.tensor(cos, dtype=torch.float64)
    assert var == pytest.approx(t.var(unbiased=False).item(), rel=1e-12)
    assert mean == pytest.approx(t.mean().item(), rel=1e-12)


def test_discriminativeness_layers_and_final_state(tiny_lm):
    res = discriminativeness(tiny_lm, CORPUS, SMALL, n_tokens=10_000)
    layers = res["layers"]
    assert layers["layer"].tolist() == [0, 1, 2] and layers["depth"].iloc[-1] == 1.0
    assert (layers["cos_var"] >= 0).all()
    # the final layer is the final hidden state RISE uses, at every counted position
    ro = readout_forward(tiny_lm, RiseExtractor(tiny_lm, SMALL).encode(CORPUS), SMALL)
    var, mean = pairwise_cosine_stats(ro.hidden)
    assert layers["n_tokens"].iloc[-1] == ro.hidden.shape[0]
    assert layers["cos_var"].iloc[-1] == pytest.approx(var, rel=1e-9)
    assert layers["cos_mean"].iloc[-1] == pytest.approx(mean, rel=1e-9)


def test_discriminativeness_subsamples_tokens_reproducibly(tiny_llama):
    a = discriminativeness(tiny_llama, CORPUS, SMALL, n_tokens=20, seed=1)["layers"]
    b = discriminativeness(tiny_llama, CORPUS, SMALL, n_tokens=20, seed=1)["layers"]
    assert (a["n_tokens"] == 20).all()
    assert a["cos_var"].tolist() == b["cos_var"].tolist()


# --- sparse active tokens -----------------------------------------------------------------------------------------


def test_full_support_keeps_everything(tiny_lm):
    v = tiny_lm.vocab_size
    res = sparsity(tiny_lm, CORPUS, SMALL, k_values=(v,), tau_values=(0.5, 1.0, 2.0), tau_sweep_k=v)
    for table in ("k_sweep", "tau_sweep"):
        df = res[table]
        for col in ("mass", "e_full", "e_tail", "renorm_energy", "gh_cos"):
            assert df[col].to_numpy() == pytest.approx(1.0, abs=1e-12), (table, col)
        assert df["gh_rel_error"].max() < 1e-12
        assert (df["support_size"] == v).all()
        # against the tau = 1 dense reference only tau = 1 is exact
        at_one = df["tau"] == 1.0
        assert df.loc[at_one, "gh_cos_tau1"].to_numpy() == pytest.approx(1.0, abs=1e-12)
        assert (df.loc[~at_one, "gh_cos_tau1"] < 1.0 - 1e-6).all()


def test_retained_energy_non_decreasing_in_k(tiny_lm):
    res = sparsity(tiny_lm, CORPUS, SMALL, k_values=(1, 2, 4, 8, 16, 32, 64))
    df = res["k_sweep"]
    assert df["k"].tolist() == sorted(df["k"].tolist())
    for col in ("mass", "e_full", "e_tail", "support_size"):
        assert (df[col].diff().dropna() >= -1e-12).all(), col
    # the target coordinate is in every support: e_gt is the same at every K, and e_full >= e_gt
    assert df["e_gt"].max() - df["e_gt"].min() < 1e-12
    assert (df["e_full"] >= df["e_gt"] - 1e-12).all()


def test_adaptive_metrics_match_definitions(tiny_lm):
    """Per-position mass / energies from the FULL softmax on the engine's support, and GH cosine of RISE's g."""
    res = sparsity(tiny_lm, CORPUS, SMALL, k_values=(8,), tau_values=(1.0,), tau_sweep_k=8)
    pos = res["positions"]
    ro = readout_forward(tiny_lm, RiseExtractor(tiny_lm, SMALL).encode(CORPUS), SMALL)
    keep = support_mask(ro.cand_logit, ro.target_slot, SMALL.rho_cum, SMALL.min_top_l)
    p = torch.softmax(tiny_lm.logits(ro.hidden), dim=1)
    onehot = torch.nn.functional.one_hot(ro.targets, tiny_lm.vocab_size).double()
    r = p - onehot
    in_s = torch.zeros_like(p, dtype=torch.bool)
    rows = torch.arange(len(ro.targets))[:, None].expand_as(ro.cand_idx)
    in_s[rows[keep], ro.cand_idx[keep]] = True
    not_y = onehot == 0
    torch.testing.assert_close(torch.tensor(pos["mass"].to_numpy()), (p * in_s).sum(1), **FLOAT64_TOL)
    torch.testing.assert_close(torch.tensor(pos["e_full"].to_numpy()),
                               (r.pow(2) * in_s).sum(1) / r.pow(2).sum(1), **FLOAT64_TOL)
    torch.testing.assert_close(torch.tensor(pos["e_tail"].to_numpy()),
                               (p.pow(2) * in_s * not_y).sum(1) / (p.pow(2) * not_y).sum(1), **FLOAT64_TOL)
    # ||r||^2 = sum p^2 - 2 p_y + 1 with the engine's full-vocabulary sum of p^2
    torch.testing.assert_close(r.pow(2).sum(1), ro.p_sq_sum - 2 * ro.target_prob + 1, **FLOAT64_TOL)
    torch.testing.assert_close(torch.tensor(pos["p_target"].to_numpy()), ro.target_prob, **FLOAT64_TOL)
    r_sparse = sparse_residual(ro, keep) * keep
    g_sparse = torch.zeros_like(ro.hidden)
    w = tiny_lm.readout_weight
    for i in range(len(ro.targets)):
        g_sparse[i] = r_sparse[i][keep[i]] @ w[ro.cand_idx[i][keep[i]]]
    g_dense = r @ w
    cos = torch.nn.functional.cosine_similarity(g_sparse, g_dense, dim=1)
    torch.testing.assert_close(torch.tensor(pos["gh_cos"].to_numpy()), cos, **FLOAT64_TOL)
    assert pos["support_size"].tolist() == keep.sum(1).tolist()
    hist = res["support_sizes"]
    assert hist["count"].sum() == len(pos) and hist["fraction"].sum() == pytest.approx(1.0)
    assert res["adaptive"]["support_size"].item() == pytest.approx(pos["support_size"].mean())


def test_sparsity_on_float32_model(tiny_llama_fp32):
    res = sparsity(tiny_llama_fp32, CORPUS, RiseConfig(), k_values=(4, 16), tau_values=(1.0,), tau_sweep_k=16)
    assert res["k_sweep"]["gh_cos"].between(0.0, 1.0 + 1e-6).all()
    assert res["adaptive"]["e_full"].item() <= 1.0 + 1e-9


# --- exact channel inner products ---------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", [SMALL, SMALL.replace(token_norm=False, rho_cum=0.5, min_top_l=1)])
def test_exact_rh_inner_matches_dense_phi(tiny_llama, cfg):
    enc = RiseExtractor(tiny_llama, cfg).encode(CORPUS[:4])
    ro = readout_forward(tiny_llama, enc, cfg)
    factors = exact_factors(ro, tiny_llama.readout_weight, cfg)
    v = tiny_llama.vocab_size

    def dense_phi(f):
        r = torch.zeros((f.n_positions, v), dtype=torch.float64)
        r.scatter_add_(1, f.ids, f.r)
        return r.T @ f.h

    phis = [dense_phi(f) for f in factors]
    g_rh, g_gh = exact_grams(factors)
    for i in range(4):
        for j in range(4):
            assert g_rh[i, j].item() == pytest.approx((phis[i] * phis[j]).sum().item(), rel=1e-9, abs=1e-12)
            gh_i, gh_j = factors[i].g.T @ factors[i].h, factors[j].g.T @ factors[j].h
            assert g_gh[i, j].item() == pytest.approx((gh_i * gh_j).sum().item(), rel=1e-9, abs=1e-12)
    assert rh_inner(factors[0], factors[1]) == pytest.approx(g_rh[1, 0].item(), rel=1e-12)


# --- RH vs GH rankings ----------------------------------------------------------------------------------------------


def test_rh_gh_ranking_mechanics(tiny_llama):
    query = CORPUS[1]
    candidates = [CORPUS[0], CORPUS[3], query, CORPUS[4], CORPUS[3], CORPUS[5]]
    df = rh_gh_ranking(tiny_llama, query, candidates, SMALL, ScoreOptions(lambda_rh=0.7, lambda_gh=1.0))["ranking"]
    assert len(df) == len(candidates)
    for ch in ("rh", "gh", "rh_gh", "rh_sketch", "gh_sketch", "rh_gh_sketch"):
        ranks = df[f"rank_{ch}"] if not ch.endswith("_sketch") else df[f"rank_{ch.replace('_sketch', '')}_sketch"]
        assert ranks.between(1, len(candidates)).all()
        assert df.loc[df["candidate"] == query, ranks.name].item() == 1, ch  # the query is its own best match
        dup = df[df["candidate"] == CORPUS[3]]
        assert dup[ch].nunique() == 1 and dup[ranks.name].nunique() == 1  # identical candidates tie
        # ties aside, ranks are 1..n: a tie of two shares the lower rank and skips the next
        assert sorted(ranks) == sorted(df[ch].rank(ascending=False, method="min").astype(int))
    torch.testing.assert_close(torch.tensor(df["rh_gh"].to_numpy()),
                               torch.tensor((0.7 * df["rh"] + 1.0 * df["gh"]).to_numpy()), **FLOAT64_TOL)
    self_row = df[df["candidate"] == query].iloc[0]
    assert self_row["rh"] == pytest.approx(1.0) and self_row["gh"] == pytest.approx(1.0)
    assert (df["delta_gh"] == df["rank_gh"] - df["rank_rh"]).all()


def test_rh_gh_distinct_candidates_give_permutations(tiny_lm):
    res = rh_gh_examples(tiny_lm, SMALL)
    df = res["ranking"]
    n = len(df)
    for col in ("rank_rh", "rank_gh", "rank_rh_gh", "rank_rh_sketch", "rank_gh_sketch", "rank_rh_gh_sketch"):
        assert sorted(df[col]) == list(range(1, n + 1)), col
    assert {"semantic", "lexical", "group"} <= set(df.columns)
    assert df["rank_rh"].is_monotonic_increasing


def test_exact_ranking_equals_identity_sketch(tiny_llama):
    """With identity sketches of full size the sketched scores are the exact ones."""
    v, d = tiny_llama.vocab_size, tiny_llama.hidden_size
    cfg = RiseConfig(k_r=v, k_h=d, k_g=d, k_max=v, rho_cum=0.9, composition="outer")
    df = rh_gh_ranking(tiny_llama, CORPUS[0], CORPUS[1:], cfg, sketches=SketchSet.identity(v, d))["ranking"]
    for ch in ("rh", "gh", "rh_gh"):
        torch.testing.assert_close(torch.tensor(df[f"{ch}_sketch"].to_numpy()), torch.tensor(df[ch].to_numpy()),
                                   **FLOAT64_TOL)


# --- sketch fidelity -----------------------------------------------------------------------------------------------


def test_fidelity_tables(tiny_llama):
    res = sketch_fidelity(tiny_llama, CORPUS, SMALL, n_seeds=3, top_k=(1, 3, 100))
    n = len(CORPUS)
    corr, pairs, stab = res["correlation"], res["pairs"], res["topk_stability"]
    assert len(corr) == 3 * 3 and corr["pearson"].between(-1, 1).all() and (corr["n_pairs"] == n * (n - 1) // 2).all()
    assert len(pairs) == n * (n - 1) // 2 and (pairs["i"] < pairs["j"]).all()
    assert sorted(stab["k"].unique()) == [1, 3, n - 1]
    assert stab[["overlap_across_seeds", "overlap_with_exact"]].stack().between(0, 1).all()
    # k = n - 1 takes every other sample: the sets agree trivially
    assert (stab.loc[stab["k"] == n - 1, "overlap_with_exact"] == 1.0).all()


def test_fidelity_is_perfect_with_identity_sketch(tiny_llama):
    v, d = tiny_llama.vocab_size, tiny_llama.hidden_size
    cfg = RiseConfig(k_r=v, k_h=d, k_g=d, k_max=v, center_hidden=True, composition="outer", hs_depth=1.0)
    res = sketch_fidelity(tiny_llama, CORPUS, cfg, n_seeds=1, top_k=(2,), sketches=SketchSet.identity(v, d))
    assert res["correlation"]["pearson"].to_numpy() == pytest.approx(1.0, abs=1e-9)
    assert res["topk_stability"]["overlap_with_exact"].to_numpy() == pytest.approx(1.0)
    pairs = res["pairs"]
    for ch in ("rh", "gh", "rh_gh"):
        torch.testing.assert_close(torch.tensor(pairs[f"{ch}_sketch"].to_numpy()),
                                   torch.tensor(pairs[f"{ch}_exact"].to_numpy()), **FLOAT64_TOL)


# --- caching and the command line ----------------------------------------------------------------------------------

FAST = DiagnosticsOptions(n_tokens=40, k_values=(2, 8), tau_values=(1.0, 2.0), tau_sweep_k=8, n_seeds=2, top_k=(1,))


def test_run_diagnostics_caches_and_reloads(tiny_llama, tmp_path, monkeypatch):
    out = tmp_path / "diag"
    first = run_diagnostics(tiny_llama, CORPUS, SMALL, options=FAST, out_dir=out)
    assert list(first) == ["energy", "discriminativeness", "sparsity", "rhgh", "fidelity"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["diagnostics"]) == set(first)
    assert (out / "sparsity" / "k_sweep.csv").exists() and (out / "energy" / "result.json").exists()

    def boom(*args, **kwargs):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(runner_mod, "layer_energy", boom)
    events = []
    second = run_diagnostics(tiny_llama, CORPUS, SMALL, options=FAST, out_dir=out, which="energy,sparsity",
                             progress=lambda name, status: events.append((name, status)))
    assert events == [("energy", "cached"), ("sparsity", "cached")]
    a, b = first["energy"]["components"], second["energy"]["components"]
    assert a["share_mean"].to_numpy() == pytest.approx(b["share_mean"].to_numpy(), rel=1e-12)
    assert second["energy"].summary["head_share"] == pytest.approx(first["energy"].summary["head_share"])
    with pytest.raises(AssertionError, match="recomputed"):
        run_diagnostics(tiny_llama, CORPUS, SMALL, options=FAST, out_dir=out, which="energy", force=True)
    with pytest.raises(AssertionError, match="recomputed"):  # another config is another key
        run_diagnostics(tiny_llama, CORPUS, SMALL.replace(seq_len=64), options=FAST, out_dir=out, which="energy")
    monkeypatch.undo()
    loaded = load_results(out)
    assert set(loaded) == set(first)
    assert set(loaded["rhgh"].tables) == {"examples"}


def test_cached_tables_read_back_exactly(tmp_path):
    # pool texts that CSV readers take for missing values or numbers (the rhgh examples' "candidate" column holds
    # pool texts): the cache gives them back as they were, with the numbers' dtypes, and keeps a CSV copy beside them
    texts = ["NA", "null", "N/A", "3.0", "", "=1+1", "a, \"quoted\" text"]
    table = pd.DataFrame({"candidate": texts, "score": [0.5, float("nan"), -1.0, 2.0, 0.0, 1e-300, 3.25],
                          "rank": range(1, len(texts) + 1)})
    result = DiagnosticResult("rhgh", {"examples": table}, {"n": 7}, {"k": 2})
    runner_mod.save_result(result, tmp_path, key="k1")
    back = runner_mod.load_result(tmp_path, "rhgh", key="k1")
    pd.testing.assert_frame_equal(back["examples"], table)
    assert back.summary == {"n": 7}
    copy = (tmp_path / "rhgh" / "examples.csv").read_text(encoding="utf-8")  # for a spreadsheet: no live formula
    assert "\"'=1+1\"" in copy and "\"=1+1\"" not in copy
    assert runner_mod.load_result(tmp_path, "rhgh", key="another") is None
    record = json.loads((tmp_path / "rhgh" / "result.json").read_text())
    pd.DataFrame({"secret": ["s"]}).to_parquet(tmp_path / "outside.parquet")
    for names in (["../outside"], ["/etc/passwd"], "examples", [7]):  # an edited result.json names no other file
        (tmp_path / "rhgh" / "result.json").write_text(json.dumps({**record, "tables": names}))
        assert runner_mod.load_result(tmp_path, "rhgh", key="k1") is None
    (tmp_path / "rhgh" / "result.json").write_text(json.dumps(record))
    (tmp_path / "rhgh" / "examples.parquet").write_bytes(b"not parquet")  # a damaged cache is recomputed, not read
    assert runner_mod.load_result(tmp_path, "rhgh", key="k1") is None


def test_parse_which_and_options_validate():
    assert parse_which("sparsity, energy") == ["energy", "sparsity"]
    assert parse_which("all") == parse_which(None)
    with pytest.raises(ConfigError, match="unknown diagnostics"):
        parse_which("energy,bogus")
    with pytest.raises(ConfigError):
        DiagnosticsOptions(n_samples=0)
    with pytest.raises(ConfigError):
        DiagnosticsOptions(tau_values=(0.0,))


def test_read_samples(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_text('{"prompt": "", "completion": "the cat sat"}\n\n{"prompt": "what ?", "completion": "a dog", "id": "x"}\n')
    samples = read_samples(f)
    assert [s.full_text for s in samples] == ["the cat sat", "what ?\na dog"]
    lines = tmp_path / "s.txt"
    lines.write_text("the cat sat\n\nplain\n")
    assert [s.full_text for s in read_samples(lines)] == ["the cat sat", "plain"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"text": \n')
    with pytest.raises(InputDataError, match="bad.jsonl: line 2"):
        read_samples(bad)
    no_text = tmp_path / "e.jsonl"
    no_text.write_text('{"title": "no text"}\n')
    with pytest.raises(InputDataError, match="e.jsonl"):
        read_samples(no_text)
    empty_row = tmp_path / "r.jsonl"
    empty_row.write_text('{"text": "ok"}\n{"text": "  "}\n')
    with pytest.raises(InputDataError, match="r.jsonl: row 2: empty text"):
        read_samples(empty_row)


@pytest.fixture(scope="module")
def saved_tiny_model(tmp_path_factory):
    from conftest import build_tiny_model, build_tokenizer

    path = tmp_path_factory.mktemp("tiny-llama")
    tok = build_tokenizer()
    build_tiny_model("llama", len(tok), dtype=torch.float32).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_cli_diagnose_writes_and_reuses_tables(saved_tiny_model, tmp_path, capsys):
    samples = tmp_path / "pool.jsonl"
    samples.write_text("\n".join(json.dumps({"text": t}) for t in CORPUS) + "\n")
    cands = tmp_path / "cands.txt"
    cands.write_text("the cat sat on the mat .\nthe stock market crashed .\n")
    out = tmp_path / "out"
    args = ["diagnose", "--model", str(saved_tiny_model), "--samples", str(samples), "--out", str(out),
            "--k-values", "2,8", "--tau-values", "1,2", "--tau-sweep-k", "8", "--seeds", "2", "--top-k", "1,2",
            "--n-tokens", "30", "--k-max", "16", "--k-r", "16", "--k-h", "4", "--k-g", "16",
            "--query", "the kitten is sleeping on the blanket .", "--candidates", str(cands)]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "energy: head share" in captured.out and "running" in captured.err
    for name in ("energy", "discriminativeness", "sparsity", "rhgh", "fidelity"):
        assert (out / name / "result.json").exists()
    assert (out / "rhgh" / "custom.csv").exists()
    assert main(args + ["--json", "--which", "energy,rhgh"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary) == {"out_dir", "energy", "rhgh"}
    assert main(args + ["--which", "energy"]) == 0
    assert "energy: cached" in capsys.readouterr().err


def test_cli_diagnose_with_index(saved_tiny_model, tmp_path, capsys):
    import rise_core.store as index_store
    from rise_core.diagnostics import default_output_dir
    from rise_core.models import load_model

    lm = load_model(str(saved_tiny_model))
    index_path = tmp_path / "pool.duckdb"
    config = RiseConfig(k_r=16, k_h=4, k_g=16, k_max=16, center_hidden=True, hs_depth=1.0)
    index_store.build_index(index_path, [Sample(text=t, id=f"s{i}") for i, t in enumerate(CORPUS)], lm, config)
    args = ["diagnose", "--model", str(saved_tiny_model), "--index", str(index_path), "--which", "sparsity,fidelity",
            "--k-values", "2,8", "--tau-values", "1", "--tau-sweep-k", "8", "--seeds", "2", "--top-k", "1"]
    assert main(args) == 0
    out = default_output_dir(index_path)
    assert out.name == "pool.duckdb.diagnostics"
    record = json.loads((out / "fidelity" / "result.json").read_text())
    assert record["context"]["index"]["config"] == config.fingerprint()
    assert record["context"]["hidden_mean"] is not None and record["params"]["dims"] == [[16, 4, 16]]
    assert record["summary"]["n_samples"] == len(CORPUS)
    capsys.readouterr()
    assert main(args) == 0
    assert "fidelity: cached" in capsys.readouterr().err
    assert main(args + ["--tau", "2"]) == 1  # the index fixes the config


def test_cli_diagnose_user_errors(saved_tiny_model, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["diagnose", "--model", str(saved_tiny_model), "--samples", str(bad), "--out", str(tmp_path)]) == 1
    assert "bad.jsonl: line 1" in capsys.readouterr().err
    assert main(["diagnose", "--model", str(saved_tiny_model), "--which", "nope", "--out", str(tmp_path)]) == 1
    with pytest.raises(SystemExit):  # an unknown config field is a usage error
        main(["diagnose", "--model", str(saved_tiny_model), "--bogus", "1", "--out", str(tmp_path)])
    assert main(["diagnose", "--model", str(saved_tiny_model), "--query", "q", "--out", str(tmp_path)]) == 1


def test_no_streamlit_import():
    code = "import sys, rise_core.diagnostics, rise_core.cli.diagnose; assert 'streamlit' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the real default model ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_diagnostics_on_default_model():
    from rise_core.diagnostics import DEFAULT_TEXTS
    from rise_core.models import load_model

    lm = load_model()
    texts = DEFAULT_TEXTS[:4]
    sp = sparsity(lm, texts, RiseConfig(), k_values=(8, 128), tau_values=(1.0,))
    k128 = sp["k_sweep"].set_index("k").loc[128]
    assert k128["e_full"] > 0.99 and k128["gh_cos"] > 0.95 and k128["support_frac"] < 0.01
    energy = layer_energy(lm, texts[:2], RiseConfig())
    assert energy.summary["tied"] and energy.summary["n_blocks"] == 30
    assert energy.summary["head_to_avg_ratio"] > 1.0
