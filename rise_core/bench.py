"""`rise bench`: RISE feature-extraction cost against the bare forward pass on the same batch.

Prints time and peak memory of (a) the model's own forward pass (`model(input_ids)`, logits at every position, as
anyone computing a loss would run it) and (b) RISE extraction (forward through the body, logits at counted positions
in chunks, support selection, sketches, aggregation), and their ratios, measured in one run.
Peak memory: CUDA peak allocation on GPU; on CPU the process's peak resident set (VmHWM, reset before each phase),
reported as the increase over the resident model.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from .config import RiseConfig
from .engine import RiseExtractor, readout_forward
from .errors import InputDataError
from .samples import EncodedSample, collate


def _rss_bytes(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def peak_memory(fn: Callable[[], Any], device: torch.device) -> int:
    """Peak memory of one run of `fn` above the level before it (CUDA allocator, or process RSS high-water mark)."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return max(0, torch.cuda.max_memory_allocated() - base)
    _reset_peak()
    base = _rss_bytes("VmRSS")
    fn()
    return max(0, _rss_bytes("VmHWM") - base)


def interleaved_times(fns: list[Callable[[], Any]], device: torch.device, repeats: int) -> list[float]:
    """Median wall time of each function, run alternately (a, b, a, b, ...) after one warm-up each, so that load
    from other processes hits every function alike."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            if device.type == "cuda":
                torch.cuda.synchronize()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def bench_token_rows(lm: Any, batch_size: int, seq_len: int) -> list[list[int]]:
    """`batch_size` rows of `seq_len` tokens of real text: the bundled pools' texts, tokenised and packed end to end.

    Real text gives realistic support sizes (random tokens would make every position maximally uncertain and measure
    something else), so without enough bundled text this refuses rather than fall back."""
    from .bundled import DATA_ENV, data_dir, pool_paths

    stream: list[int] = []
    pools = pool_paths()
    for path in pools.values():
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                text = " ".join(str(row.get(k) or "") for k in ("prompt", "completion", "text")).strip()
                stream += lm.tokenizer(text + "\n", add_special_tokens=False)["input_ids"]
                if len(stream) >= batch_size * seq_len:
                    return [stream[i * seq_len:(i + 1) * seq_len] for i in range(batch_size)]
    found = f"{len(pools)} pool file(s) with {len(stream)} tokens" if pools else "no *_pool.jsonl file"
    raise InputDataError(f"rise bench times real text and needs {batch_size * seq_len} tokens of the bundled pools, "
                         f"but {data_dir()} has {found}; set {DATA_ENV} to the folder of the demo pools, or lower "
                         "--batch-size / --seq-len")


def run_bench(model: str | None, batch_size: int, seq_len: int, repeats: int, device: str, dtype: str,
              config: RiseConfig) -> dict[str, Any]:
    from .models import load_model

    lm = load_model(model, device=device, dtype=dtype)
    extractor = RiseExtractor(lm, config.replace(seq_len=seq_len, counted_positions="all"))
    ids = bench_token_rows(lm, batch_size, seq_len)
    encoded = [EncodedSample(input_ids=row, counted=[True] * (seq_len - 1), n_prompt_tokens=0, truncated=False)
               for row in ids]
    if extractor.config.center_hidden:  # the centring mean is fixed before timing, as an index build does
        extractor.hidden_mean = readout_forward(lm, encoded, extractor.config).hidden.mean(dim=0)
    batch = collate(encoded, lm.pad_id)
    input_ids, attn = batch.input_ids.to(lm.device), batch.attention_mask.to(lm.device)

    @torch.no_grad()
    def bare_forward() -> None:
        lm.model(input_ids=input_ids, attention_mask=attn, use_cache=False).logits.sum().item()

    def rise_features() -> None:
        extractor.features_from_encoded(encoded)

    m_fwd = peak_memory(bare_forward, lm.device)
    m_rise = peak_memory(rise_features, lm.device)
    t_fwd, t_rise = interleaved_times([bare_forward, rise_features], lm.device, repeats)
    tokens = batch_size * seq_len
    return {
        "model": lm.model_id, "device": str(lm.device), "dtype": dtype, "batch_size": batch_size, "seq_len": seq_len,
        "dims": [config.k_r, config.k_h, config.k_g], "threads": torch.get_num_threads(),
        "forward_s": round(t_fwd, 4), "rise_s": round(t_rise, 4), "time_ratio": round(t_rise / t_fwd, 3),
        "forward_tokens_per_s": round(tokens / t_fwd, 1), "rise_tokens_per_s": round(tokens / t_rise, 1),
        "forward_peak_mb": round(m_fwd / 2**20, 1), "rise_peak_mb": round(m_rise / 2**20, 1),
        "memory_ratio": round(m_rise / max(m_fwd, 1), 3),
    }


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="time RISE extraction against the bare forward pass",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="hub id or local path (default: embedded SmolLM2-135M-Instruct)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--dims", default=None, help="K_r,K_h,K_g (default: the default config's)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    config = RiseConfig()
    if args.dims:
        k_r, k_h, k_g = (int(x) for x in args.dims.split(","))
        config = config.replace(k_r=k_r, k_h=k_h, k_g=k_g)
    res = run_bench(args.model, args.batch_size, args.seq_len, args.repeats, args.device, args.dtype, config)
    if args.json:
        print(json.dumps(res))
    else:
        width = max(map(len, res))
        for key, value in res.items():
            print(f"{key:<{width}}  {value}")
        print(f"\nRISE / forward time: {res['time_ratio']:.3f}x   peak memory: {res['memory_ratio']:.3f}x", file=sys.stdout)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from .cli import main

    sys.exit(main(["bench", *sys.argv[1:]]))
