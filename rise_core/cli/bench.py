"""`rise bench`: RISE feature-extraction time and peak memory against the bare forward pass, measured in one run."""

from __future__ import annotations

import argparse
import json

from ..bench import __doc__ as BENCH_DOC
from .options import add_config_options, add_model_options, config_from_args

BENCH_SEQ_LEN = 256  # tokens per timed row unless --seq-len says otherwise


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="time RISE extraction against the bare forward pass",
                       description=BENCH_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_model_options(p)
    add_config_options(p, f"RISE config of the timed extraction (--seq-len: tokens per timed row, default "
                          f"{BENCH_SEQ_LEN} here)")
    p.set_defaults(func=_cmd_bench, _parser_error=p.error)


def _cmd_bench(args: argparse.Namespace) -> int:
    from ..bench import run_bench
    from .options import load_model_from_args

    config = config_from_args(args)
    if args.seq_len is None:
        config = config.replace(seq_len=BENCH_SEQ_LEN)
    res = run_bench(load_model_from_args(args), config, args.batch_size, args.repeats)
    if args.json:
        print(json.dumps(res))
    else:
        width = max(map(len, res))
        for key, value in res.items():
            print(f"{key:<{width}}  {value}")
        print(f"\nRISE / forward time: {res['time_ratio']:.3f}x   peak memory: {res['memory_ratio']:.3f}x")
    return 0
