"""The vocabulary pass and RISE extraction against the bare forward pass, measured in one run.

Part 1, the vocabulary pass alone, on the final hidden states of `rise bench`'s rows (8 x 256 tokens of the bundled
pools' text): the model's own head matmul over every position at once (what the bare forward pass spends on the
head), the dense reference in chunks of 512 positions (`dense_vocab_pass`: the extraction before the blocked pass),
and `vocab_pass` at several block and group sizes (the defaults were chosen here). Times are medians of interleaved
runs, so load from other processes hits every variant alike.

Part 2, `rise bench` (RISE extraction / bare forward pass, time and peak memory) per composition, the default
TensorSketch (64/24/64 + HS) and the paper's outer product (64/12/64), each with the blocked pass and again with the
dense reference swapped in (the extraction as it was before).

    python -m benchmarks.vocab_pass                    # both parts, SmolLM2-135M, the machine's threads
    python -m benchmarks.vocab_pass --repeats 7 --json
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from benchmarks import harness
from rise_core import engine
from rise_core.bench import bench_token_rows, run_bench
from rise_core.config import PRESETS, RiseConfig
from rise_core.engine import LOGITS_CHUNK
from rise_core.models import load_model
from rise_core.samples import EncodedSample, collate
from rise_core.vocab_pass import GROUP, VOCAB_BLOCK, dense_vocab_pass, vocab_pass


@torch.no_grad()
def vocab_pass_times(lm: Any, batch_size: int, seq_len: int, repeats: int) -> dict[str, Any]:
    """Seconds of the head matmul, the dense reference and each blocked variant over the same hidden states."""
    rows = bench_token_rows(lm, batch_size, seq_len)
    encoded = [EncodedSample(input_ids=r, counted=[True] * (seq_len - 1), n_prompt_tokens=0, truncated=False)
               for r in rows]
    batch = collate(encoded, lm.pad_id)
    hidden = lm.final_hidden(batch.input_ids, batch.attention_mask)[batch.counted].contiguous()
    targets = batch.targets[batch.counted]
    weight, bias, c = lm.readout_weight, lm.readout_bias, RiseConfig().k_max

    def chunked(fn: Callable[..., Any], **kw: Any) -> Callable[[], None]:
        def run() -> None:
            for s in range(0, hidden.shape[0], LOGITS_CHUNK):
                fn(hidden[s:s + LOGITS_CHUNK], weight, bias, targets[s:s + LOGITS_CHUNK], c, **kw)
        return run

    variants: dict[str, Callable[[], Any]] = {"head matmul (bare forward)": lambda: lm.logits(hidden),
                                              "dense reference": chunked(dense_vocab_pass)}
    for block in (1024, 2048, 4096):
        for group in (4, 8, 16, 32):
            if block == VOCAB_BLOCK or group == GROUP:
                variants[f"blocked {block}/{group}"] = chunked(vocab_pass, block=block, group=group)
    times = harness.timed(variants, repeats, hidden.device)
    return {"positions": int(hidden.shape[0]), "vocab": int(weight.shape[0]), "c": c,
            "seconds": {k: round(v, 4) for k, v in times.items()},
            "over_head_matmul": harness.ratios(times, "head matmul (bare forward)")}


def main(argv: list[str] | None = None) -> int:
    p = harness.parser(__doc__, repeats=5, json_flag=True)
    p.add_argument("--model", default="smollm2-135m-instruct")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=256)
    args = p.parse_args(argv)
    lm = load_model(args.model)
    part1 = vocab_pass_times(lm, args.batch_size, args.seq_len, args.repeats)
    compositions = {"tensor 64/24/64 + HS (default)": PRESETS["default"], "outer 64/12/64 (paper)": PRESETS["paper"]}
    part2 = {}
    for name, config in compositions.items():
        for label, fn in (("blocked", vocab_pass), ("dense reference", dense_vocab_pass)):
            engine.vocab_pass = fn  # the extraction's only call of the pass
            try:
                part2[f"{name}, {label}"] = run_bench(lm, config.replace(seq_len=args.seq_len), args.batch_size,
                                                      args.repeats)
            finally:
                engine.vocab_pass = vocab_pass
    if args.json:
        harness.print_json({"vocab_pass": part1, "bench": part2, "threads": torch.get_num_threads()})
        return 0
    print(f"Vocabulary pass over {part1['positions']} positions, V = {part1['vocab']}, top {part1['c']}, "
          f"{torch.get_num_threads()} threads:\n")
    part1_rows = [{"variant": name, "seconds": sec, "x the head matmul": part1["over_head_matmul"][name]}
                  for name, sec in part1["seconds"].items()]
    print(harness.markdown_table(part1_rows, floatfmt=".4g"))
    print("\nRISE extraction / bare forward pass (rise bench):\n")
    part2_rows = [{"composition, pass": name, "time ratio": r["time_ratio"], "RISE s": r["rise_s"],
                   "forward s": r["forward_s"], "memory ratio": r["memory_ratio"], "RISE peak MB": r["rise_peak_mb"],
                   "forward peak MB": r["forward_peak_mb"]} for name, r in part2.items()]
    print(harness.markdown_table(part2_rows, floatfmt=".4g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
