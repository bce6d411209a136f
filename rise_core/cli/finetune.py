"""`rise finetune`: LoRA-fine-tune a model on a pool, so its index and queries are retrospective."""

from __future__ import annotations

import argparse
import dataclasses
import json

from ..config import RiseConfig, field_choices, field_help
from ..finetune import FinetuneConfig, FinetuneProgress, finetune, pool_loss
from ..ingest import read_pool
from ..saved_config import parse_list
from .options import add_model_options, load_model_from_args

LOSS_PROBE_SAMPLES = 64  # the "before" loss is measured on this many samples: a forward pass, not a second epoch


def register(sub: argparse._SubParsersAction) -> None:
    defaults = FinetuneConfig()
    p = sub.add_parser(
        "finetune", help="LoRA-fine-tune a model on a pool (writes a peft adapter + manifest)",
        description="Trains a LoRA adapter (peft) on the pool's samples in the format an index reads them (the "
        "model's chat template, or prompt, newline, completion: --chat-template; loss on completion tokens, a "
        "conversation's assistant turns). Seeded; checkpoints every --checkpoint-every steps, and a "
        "killed run started again with the same arguments resumes. Use the result anywhere a model is named: "
        "--model DIR, --adapter DIR, RISE_MODEL=DIR.")
    p.add_argument("pool", help="JSONL/CSV/Parquet pool (text, prompt + completion, or messages)")
    p.add_argument("--out", required=True, help="adapter directory to write")
    helps, choices = FinetuneConfig.field_help(), FinetuneConfig.field_choices()
    for name, kind in (("rank", int), ("alpha", float), ("dropout", float)):
        p.add_argument(f"--{name}", type=kind, default=getattr(defaults, name), help=helps[name])
    p.add_argument("--target-modules", default=None, type=lambda text: parse_list(text, what="--target-modules"),
                   help="comma-separated module names to adapt (default: peft's attention projections for the model)")
    p.add_argument("--lr", type=float, default=defaults.learning_rate, dest="learning_rate",
                   help=helps["learning_rate"])
    for name in ("epochs", "batch_size", "seq_len"):
        p.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name), help=helps[name])
    p.add_argument("--loss-on", choices=choices["loss_on"], default=defaults.loss_on, help=helps["loss_on"])
    for name in ("warmup_steps", "seed", "checkpoint_every"):
        p.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(defaults, name), help=helps[name])
    p.add_argument("--save-dtype", choices=choices["save_dtype"], default=defaults.save_dtype,
                   help=helps["save_dtype"])
    help_of = field_help(RiseConfig)
    for name in ("chat_template", "chat_turns"):
        p.add_argument("--" + name.replace("_", "-"), choices=field_choices(RiseConfig)[name],
                       default=getattr(defaults, name), help=f"{help_of[name]} (default {getattr(defaults, name)!r}; "
                       "an index of the adapter's generations renders alike with 'auto')")
    p.add_argument("--overwrite", action="store_true", help="replace a finished adapter or a foreign checkpoint")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_model_options(p)
    p.set_defaults(func=_cmd_finetune)


def _cmd_finetune(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    fields = {f.name for f in dataclasses.fields(FinetuneConfig)}
    recipe = {k: v for k, v in vars(args).items() if k in fields and k != "target_modules"}
    config = FinetuneConfig(**recipe, target_modules=args.target_modules or None)
    pool = read_pool(args.pool).require_samples()
    lm = load_model_from_args(args)
    probe = pool.samples[:LOSS_PROBE_SAMPLES]
    before = pool_loss(lm, probe, seq_len=config.seq_len, loss_on=config.loss_on,
                       chat_template=config.chat_template, chat_turns=config.chat_turns)
    print(f"fine-tuning {lm.model_id} on {len(pool.samples)} samples of {args.pool} "
          f"(LoRA r={config.rank}, {config.epochs} epochs, lr {config.learning_rate}); pool loss before "
          f"{before:.4f} (first {len(probe)} samples)", flush=True)
    bar = None

    def report(p: FinetuneProgress) -> None:
        nonlocal bar
        if args.no_progress:
            return
        if bar is None:
            bar = tqdm(total=p.total_steps, initial=p.resumed_from, unit="step", desc="finetune")
            if p.resumed_from:
                bar.write(f"resumed from the checkpoint at step {p.resumed_from}")
        bar.update(p.step - bar.n)
        bar.set_postfix(epoch=p.epoch, loss=f"{p.loss:.3f}", tok_s=f"{p.tokens_per_s:.0f}")

    try:
        result = finetune(lm, pool.samples, args.out, config, progress=report, overwrite=args.overwrite,
                          pool_source=str(args.pool))
    finally:
        if bar is not None:
            bar.close()
    m = result.manifest
    print(json.dumps({k: m[k] for k in ("base_model", "base_fingerprint", "pool_hash", "epoch_losses", "final_loss",
                                        "tokens_trained", "tokens_per_s", "adapter_digest")}, indent=2))
    print(f"adapter written to {result.out_dir}; use it with --model {result.out_dir} (or --adapter)")
    return 0
