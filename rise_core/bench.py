"""RISE feature-extraction cost against the bare forward pass on the same batch.

Prints time and peak memory of (a) the model's own forward pass (`model(input_ids)`, logits at every position, as
anyone computing a loss would run it) and (b) RISE extraction (forward through the body, logits at counted positions
in chunks, support selection, sketches, aggregation), and their ratios, measured in one run.
Peak memory: CUDA peak allocation on GPU; on CPU the process's peak resident set (VmHWM, reset before each phase),
reported as the increase over the resident model.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from .config import RiseConfig
from .engine import RiseExtractor, readout_forward
from .errors import InputDataError
from .models import LoadedModel
from .samples import EncodedSample, collate
from .vocab_pass import release_workspace


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


def run_bench(lm: LoadedModel, config: RiseConfig, batch_size: int = 8, repeats: int = 3) -> dict[str, Any]:
    """Time and peak memory of the bare forward pass and of RISE extraction on the same `batch_size` rows of
    `config.seq_len` tokens of real text (every position counted), and their ratios."""
    seq_len = config.seq_len
    extractor = RiseExtractor(lm, config.replace(counted_positions="all"))
    ids = bench_token_rows(lm, batch_size, seq_len)
    encoded = [EncodedSample(input_ids=row, counted=[True] * (seq_len - 1), n_prompt_tokens=0, truncated=False)
               for row in ids]
    if extractor.config.needs_hidden_mean:  # the pool's mean is fixed before timing, as an index build does
        extractor.hidden_mean = readout_forward(lm, encoded, extractor.config).hs_source(extractor.config).mean(dim=0)
    batch = collate(encoded, lm.pad_id)
    input_ids, attn = batch.input_ids.to(lm.device), batch.attention_mask.to(lm.device)

    @torch.no_grad()
    def bare_forward() -> None:
        lm.model(input_ids=input_ids, attention_mask=attn, use_cache=False).logits.sum().item()

    def rise_features() -> None:
        extractor.features_from_encoded(encoded)

    m_fwd = peak_memory(bare_forward, lm.device)
    release_workspace()  # the peak counts the vocabulary pass's buffer, which later calls reuse
    m_rise = peak_memory(rise_features, lm.device)
    t_fwd, t_rise = interleaved_times([bare_forward, rise_features], lm.device, repeats)
    tokens = batch_size * seq_len
    return {
        "model": lm.model_id, "device": str(lm.device), "dtype": str(lm.dtype).replace("torch.", ""),
        "batch_size": batch_size, "seq_len": seq_len,
        "dims": [config.k_r, config.k_h, config.k_g], "threads": torch.get_num_threads(),
        "forward_s": round(t_fwd, 4), "rise_s": round(t_rise, 4), "time_ratio": round(t_rise / t_fwd, 3),
        "forward_tokens_per_s": round(tokens / t_fwd, 1), "rise_tokens_per_s": round(tokens / t_rise, 1),
        "forward_peak_mb": round(m_fwd / 2**20, 1), "rise_peak_mb": round(m_rise / 2**20, 1),
        "memory_ratio": round(m_rise / max(m_fwd, 1), 3),
    }
