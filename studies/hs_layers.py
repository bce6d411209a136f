"""Which layer's hidden states the HS channel should average: every layer's per-sample sums, once per task.

    python -m studies.hs_layers --out results/hs_layers [--tasks dev-brainrot,dev-finmed,...]
    python -m studies.hs_layers --out results/hs_layers --table      # HS alone at each depth of DEPTHS

One forward pass per sample (`output_hidden_states`), no logits. For every task's pool and queries it writes
<out>/<task>.npz: `pool_sum` and `query_sum` (N, L + 1, d) float32, each layer's hidden states summed over the
positions `counted_positions='all'` counts (the default config's), and `pool_count` / `query_count`, how many there
are. Layer 0 is the embeddings and layer L the final hidden state after the final norm (what the RH and GH channels
read); `RiseConfig.hs_depth` names layer round(hs_depth * L). From them, `hs_scores` rebuilds the HS channel of any
layer exactly as an index computes it: each sample's mean minus the pool's mean over the positions of its seeded
subset (`config.mean_fit_rows`), cosine. `studies.behaviour_rule --hs-layers` scores every rule with it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from rise_core.config import RiseConfig, mean_fit_rows
from rise_core.engine import rendering_for
from rise_core.metrics import EvalResult
from rise_core.models import LoadedModel, hs_layer_index, load_model
from rise_core.readout_cache import ReadoutCache
from rise_core.samples import Sample, collate, encode_sample
from studies import tasks
from studies.cache_readouts import ALL


@torch.no_grad()
def layer_sums(lm: LoadedModel, samples: list[Sample], config: RiseConfig, memo: dict | None = None,
               batch_size: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """(N, L + 1, d) per-layer sums of hidden states over each sample's counted positions, and (N,) counts; batches
    of similar length, right-padded (the model is causal: a sample's positions do not see the padding after them).
    `memo` keeps each sample's sums across tasks (the backdoor tasks share their clean rows)."""
    memo = {} if memo is None else memo
    rendering = rendering_for(lm, config)
    todo = [s for s in dict.fromkeys(samples) if ReadoutCache.key(s) not in memo]
    encoded = [encode_sample(s, lm.tokenizer, config.seq_len, config.counted_positions, rendering) for s in todo]
    order = sorted(range(len(todo)), key=lambda i: len(encoded[i].input_ids))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        batch = collate([encoded[i] for i in idx], lm.pad_id)
        states = lm.model.base_model(input_ids=batch.input_ids.to(lm.device),
                                     attention_mask=batch.attention_mask.to(lm.device), output_hidden_states=True,
                                     use_cache=False).hidden_states
        counted = batch.counted.to(lm.device)
        for b, i in enumerate(idx):
            sums = torch.stack([h[b][counted[b]].double().sum(0) for h in states]).float().cpu().numpy()
            memo[ReadoutCache.key(todo[i])] = (sums, int(counted[b].sum()))
    got = [memo[ReadoutCache.key(s)] for s in samples]
    return np.stack([g[0] for g in got]), np.asarray([g[1] for g in got])


def hs_scores(data: dict[str, np.ndarray], depth: float, seed: int = RiseConfig.seed) -> tuple[np.ndarray, np.ndarray,
                                                                                             np.ndarray]:
    """(Q, N) HS scores at `depth` (cosine of centred means), with the (N, d) unit pool rows and (Q, d) unit queries:
    the index's HS channel (the pool's mean over the positions of `mean_fit_rows`) at weight 1 under 'channel'."""
    layer = hs_layer_index(depth, data["pool_sum"].shape[1] - 1)
    pool_sum, query_sum = data["pool_sum"][:, layer].astype(np.float64), data["query_sum"][:, layer].astype(np.float64)
    pc, qc = data["pool_count"].astype(np.float64), data["query_count"].astype(np.float64)
    fit = mean_fit_rows(len(pc), seed)
    mean = pool_sum[fit].sum(0) / pc[fit].sum()

    def unit(s: np.ndarray, c: np.ndarray) -> np.ndarray:
        x = np.where(c[:, None] > 0, s / np.maximum(c, 1)[:, None] - mean, 0.0)
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-300)

    p, q = unit(pool_sum, pc), unit(query_sum, qc)
    return q @ p.T, p, q


DEPTHS = (0.5, 0.6, 2 / 3, 0.7, 0.75, 0.8, 0.9, 1.0)
"""the depths the study compares (1.0: the final hidden state, the HS channel before hs_depth)."""


def table(out: Path, names: list[str]) -> pd.DataFrame:
    """auPRC@10 of the HS channel alone at each depth of DEPTHS, per task and split (tasks.splits)."""
    rows = []
    for name in names:
        path = out / f"{name}.npz"
        if not path.exists():
            continue
        task, data = tasks.task(name), dict(np.load(path))
        labels = np.asarray(task.labels)
        for depth in DEPTHS:
            scores, _, _ = hs_scores(data, depth)
            res = EvalResult.from_scores(scores, labels, (10,))
            values = res.per_query.loc[res.per_query["K"] == 10, "auPRC"].to_numpy()
            rows.extend({"task": name, "split": split, "depth": round(depth, 3), "auPRC": float(values[qs].mean())}
                        for split, qs in tasks.splits(name, len(task.queries)).items())
    frame = pd.DataFrame(rows)
    return frame.pivot_table(index=["task", "split"], columns="depth", values="auPRC")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(ALL))
    ap.add_argument("--out", default="results/hs_layers")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--table", action="store_true", help="print HS alone at each depth from the saved sums")
    args = ap.parse_args()
    out = Path(args.out)
    if args.table:
        print(table(out, args.tasks.split(",")).round(3).to_string())
        return 0
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(None)
    config = RiseConfig(seq_len=args.seq_len)
    memo: dict = {}
    for name in args.tasks.split(","):
        path = out / f"{name}.npz"
        if path.exists():
            continue
        task = tasks.task(name)
        t0 = time.perf_counter()
        pool_sum, pool_count = layer_sums(lm, list(task.pool), config, memo)
        query_sum, query_count = layer_sums(lm, list(task.queries), config, memo)
        np.savez(path, pool_sum=pool_sum, pool_count=pool_count, query_sum=query_sum, query_count=query_count)
        print(f"{name}: {len(task.pool)} + {len(task.queries)} samples in {time.perf_counter() - t0:.0f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
