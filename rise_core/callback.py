"""Index the model a `transformers` Trainer trains: `RiseIndexCallback` builds the RISE index of the trained model
when training ends, and optionally one per saved checkpoint. TRL's SFTTrainer is a Trainer, so it takes the callback
too.

    trainer = Trainer(model=model, args=args, train_dataset=train, processing_class=tokenizer,
                      callbacks=[RiseIndexCallback("runs/rise.duckdb", "pool.jsonl", preset="retrospective")])
    trainer.train()
    trainer.save_model()  # to args.output_dir: the model the index names, which `rise query --index` loads

The index is built from the trainer's model as it is in memory (in eval mode, without gradients; its train mode is
restored after), with the model named by where the Trainer saves it: `args.output_dir` at the end (save it there
with `trainer.save_model()`, or give `model_id`), `output_dir/checkpoint-STEP` for a checkpoint. A `peft` LoRA model
(plain LoRA on Linear layers, one adapter) is indexed as it is, unmerged, and its adapter is saved beside the index
('rise.duckdb' -> 'rise-adapter/'), which the index names as `BASE@ADAPTER_DIR`: `rise query --index` reloads the
base and merges that adapter. Only the main process builds.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

from .adapters import check_peft_model, is_peft_model, wrap_peft_model
from .config import RiseConfig
from .config import preset as preset_config
from .errors import ConfigError
from .ingest import FieldMap
from .models import wrap_model
from .store import BuildReport, build_index
from .store.build import PoolInput, open_pool

logger = logging.getLogger(__name__)


class RiseIndexCallback(TrainerCallback):
    """Builds the RISE index of the model a Trainer trains, on `pool`, when training ends (`index_path`) and, with
    `checkpoints=True`, at every saved checkpoint (`checkpoint_index_path(step)`, beside it).

    `pool`: anything `build_index` takes (a pool file, a folder or `datasets` dataset read in windows, samples); it is
    read (or its columns checked) here, so bad data fails before training, not after it. `config`: the RISE config
    (default: the `preset`'s, else the default). `preset`: the preset the index is built for, recorded in it. An
    index already at `index_path` is refused when training begins (it was built for another model) unless
    `overwrite`, which replaces it at the end. A checkpoint's index is rebuilt whenever its checkpoint is saved.
    `tokenizer`: default the Trainer's `processing_class`. `model_id`: the name the final index gives a plain model
    (default `args.output_dir`). `reports` holds each build's report by index path."""

    def __init__(self, index_path: str | Path, pool: PoolInput, config: RiseConfig | None = None, *,
                 preset: str | None = None, fields: FieldMap | dict[str, str | None] | None = None,
                 batch_size: int = 8, checkpoints: bool = False, overwrite: bool = False, tokenizer: Any = None,
                 model_id: str | None = None) -> None:
        self.index_path = Path(index_path)
        self.pool = open_pool(pool, fields)  # type: ignore[arg-type]
        self.config = config if config is not None else preset_config(preset) if preset else RiseConfig()
        if preset is not None:
            preset_config(preset)  # an unknown name is refused now
        self.preset, self.batch_size, self.checkpoints = preset, batch_size, checkpoints
        self.overwrite, self.tokenizer, self.model_id = overwrite, tokenizer, model_id
        self.reports: dict[str, BuildReport] = {}

    def adapter_dir(self, index_path: Path) -> Path:
        """Where a LoRA model's adapter is saved for the index at `index_path`: 'rise.duckdb' -> 'rise-adapter/'."""
        return index_path.with_name(f"{index_path.stem}-adapter")

    def checkpoint_index_path(self, step: int) -> Path:
        """The index of the checkpoint saved at `step`: 'rise.duckdb' -> 'rise-checkpoint-STEP.duckdb'."""
        return self.index_path.with_name(f"{self.index_path.stem}-checkpoint-{step}{self.index_path.suffix}")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        lora = is_peft_model(kwargs.get("model"))
        if lora:
            check_peft_model(kwargs["model"])  # an adapter this cannot index fails now, not after training
        if self.overwrite:
            return
        if self.index_path.exists():
            raise ConfigError(f"{self.index_path} already exists, built for another model than the one about to be "
                              "trained: give RiseIndexCallback another index_path, or overwrite=True to replace it "
                              "when training ends")
        adapter_dir = self.adapter_dir(self.index_path)
        if lora and adapter_dir.exists():
            raise ConfigError(f"{adapter_dir} already exists (the adapter of an earlier index there): give "
                              "RiseIndexCallback another index_path, or overwrite=True to replace both when training "
                              "ends")

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.checkpoints and state.is_world_process_zero:
            from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

            checkpoint = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            self._build(self.checkpoint_index_path(state.global_step), str(checkpoint.resolve()), True, kwargs)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self._build(self.index_path, self.model_id or str(Path(args.output_dir).resolve()), self.overwrite, kwargs)

    def _build(self, path: Path, model_id: str, overwrite: bool, kwargs: dict[str, Any]) -> None:
        model = kwargs.get("model")
        tokenizer = self.tokenizer or kwargs.get("processing_class") or kwargs.get("tokenizer")
        if model is None:
            raise ConfigError("RiseIndexCallback was called without the trainer's model")
        if tokenizer is None:
            raise ConfigError("RiseIndexCallback needs the tokenizer: give the Trainer processing_class=tokenizer, "
                              "or RiseIndexCallback(..., tokenizer=tokenizer)")
        was_training = model.training
        device = next(model.parameters()).device
        try:
            with torch.no_grad():
                if is_peft_model(model):  # LoRA: the adapter saved beside the index, the index names BASE@ADAPTER
                    adapter_dir = self.adapter_dir(path)
                    model.save_pretrained(str(adapter_dir))
                    lm = wrap_peft_model(model, tokenizer, adapter_dir, device=device)  # eval mode
                else:
                    lm = wrap_model(model, tokenizer, model_id, device=device)  # eval mode
                report = build_index(path, self.pool, lm, self.config, batch_size=self.batch_size,
                                     overwrite=overwrite, preset=self.preset)
        finally:
            model.train(was_training)
        self.reports[str(path)] = report
        logger.info(report.summary())
