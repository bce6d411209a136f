"""Bergson (EleutherAI's gradient-index attribution library) as a ranking method of the registry: its on-disk index
of per-example gradients and its query, for the same model, tokens and loss that RISE reads.

The recipe is Bergson's documented default for an index and a query (`bergson build --projection_dim 16`, then
`bergson query --unit_norm`, or `Attributor(unit_norm=True)` in Python): the gradient of each sample's summed loss
with respect to every linear layer of the model body, each module's (out, in) gradient projected on both sides to
16 x 16 by Rademacher matrices (JL scale), the modules concatenated and unit-normalised, and a query scored by the
cosine of its gradient with every row. No optimizer second moments (a model used prospectively has none) and no
preconditioner (`bergson query` applies one only when given a Hessian fitted by a separate pipeline, `bergson
trackstar`; `BergsonOptions.precondition` fits TrackStar's autocorrelation one on the pool, off by default).

Samples are tokenised by `samples.encode_sample` (prompt, newline, completion; truncated to the config's seq_len)
and the loss counts the config's counted positions, so Bergson sees exactly RISE's tokens. Batches are RISE's too:
sorted by length, `batch_size` samples each.

Optional: Bergson is not a dependency. The method is always registered (so its name is known); without the package
it raises `Unavailable` naming the install commands (docs/BERGSON.md says why there are two).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .baselines import Scorer
from .config import RiseConfig
from .engine import rendering_for
from .errors import ConfigError, InputDataError
from .method_types import Method, Source, Unavailable
from .model_lock import seeded_global_rng
from .models import LoadedModel
from .samples import Rendering, Sample, encode_sample

_PRIVATE_MODELS = threading.Event()  # set by a process whose threads share models (`use_private_models`)


def use_private_models() -> None:
    """From now on, in this process, the registry's Bergson (`rise evaluate --methods Bergson`, the Evaluate page)
    builds and queries on a copy of the model (`LoadedModel.private_copy`): for a server whose sessions run the same
    model in other threads, which would fire Bergson's hooks. Costs the weights' memory again while it runs; a
    one-thread process (the command line) needs none."""
    _PRIVATE_MODELS.set()


BERGSON = "Bergson"
BERGSON_VERSION = "2.5.1"
INSTALL_HINT = ("Bergson is not installed: pip install -e '.[bergson]' -c constraints/torch-cpu.txt && "
                f"pip install --no-deps bergson=={BERGSON_VERSION} (docs/BERGSON.md)")
GRADIENTS_FILE = "gradients.bin"


def installed() -> bool:
    """Whether the `bergson` package can be imported (checked without importing it)."""
    return importlib.util.find_spec("bergson") is not None


def _import_bergson() -> Any:
    """The `bergson` module, imported without the side effects it has on import: it reconfigures the root logger
    (INFO to stdout, `force=True`); the host's logging configuration is put back."""
    if not installed():
        raise Unavailable(INSTALL_HINT)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import bergson
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return bergson


@dataclass(frozen=True)
class BergsonOptions:
    """How Bergson indexes and queries (its defaults for `bergson build` + `bergson query --unit_norm`)."""

    projection_dim: int = field(default=16, metadata={
        "help": "Each module's gradient is projected to projection_dim x projection_dim (0: no projection). 16 is "
        "the dimension of Bergson's README quickstart and of its TrackStar pipeline."})
    projection_type: str = field(default="rademacher", metadata={"help": "'rademacher' or 'normal' projections."})
    projection_seed: int | None = field(default=None, metadata={"help": "Seed of the projections (None: Bergson's)."})
    unit_norm: bool = field(default=True, metadata={
        "help": "Unit-normalise index rows and queries (cosine), as `bergson query --unit_norm`; False: inner "
        "products of raw gradients."})
    precondition: bool = field(default=False, metadata={
        "help": "Fit TrackStar's autocorrelation Hessian of the projected gradients on the pool (labels sampled from "
        "the model) and precondition both sides with H^-1/2 (`bergson trackstar` without query mixing). Costs a "
        "second backward pass over the pool."})

    def __post_init__(self) -> None:
        if self.projection_dim < 0:
            raise ConfigError(f"projection_dim must be >= 0, got {self.projection_dim}")
        if self.projection_type not in ("rademacher", "normal"):
            raise ConfigError(f"projection_type must be 'rademacher' or 'normal', got {self.projection_type!r}")
        if self.precondition and self.projection_dim == 0:
            raise ConfigError("precondition needs projected gradients (projection_dim > 0): the Hessian is dense")


# --- the model in Bergson's training mode ---------------------------------------------------------------------------

@contextlib.contextmanager
def _bergson_grads(model: Any) -> Iterator[None]:
    """Gradients on, as Bergson loads a model (no parameter gradient but the input embedding's, so the backward pass
    reaches every hooked layer); the caller's requires_grad flags are put back and no .grad is left behind."""
    flags = [(p, p.requires_grad) for p in model.parameters()]
    try:
        model.requires_grad_(False)
        model.get_input_embeddings().requires_grad_(True)
        with torch.enable_grad():
            yield
    finally:
        for p, flag in flags:
            p.requires_grad_(flag)
        model.zero_grad(set_to_none=True)


Progress = Callable[[int, int], None]  # (samples done, samples in all), called after each batch


def _reporting(progress: Progress, total: int, start: int = 0) -> Callable[..., Iterator[list[int]]]:
    """A stand-in for the tqdm bar over Bergson's batches (lists of row indices) that tells `progress` the samples
    done after each batch, counted on from `start` (the samples of a build's earlier passes) out of `total` (those of
    all its passes)."""
    done = [start]

    def bar(batches: Iterable[list[int]], *args: Any, **kwargs: Any) -> Iterator[list[int]]:
        for batch in batches:
            yield batch
            done[0] += len(batch)
            progress(done[0], total)
    return bar


@contextlib.contextmanager
def _quiet(progress: Progress | None = None, total: int = 0, start: int = 0) -> Iterator[None]:
    """No progress bars or INFO lines from Bergson and `datasets` while it builds (they would flood the CLI); with
    `progress`, the batches Bergson's collector runs are reported to it instead (`_reporting`)."""
    import datasets
    from datasets.utils import logging as ds_logging
    from tqdm.auto import tqdm

    collector_mod = __import__("bergson.collector.collector", fromlist=["tqdm"])
    bars_on = ds_logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    collector_mod.tqdm = (_reporting(progress, total, start) if progress is not None
                          else lambda *a, **k: tqdm(*a, **{**k, "disable": True}))
    names = ("CollectorComputer", "HookCollectorBase", "gradients", "projection_matrix")
    levels = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            yield
    finally:
        collector_mod.tqdm = tqdm
        for n, lvl in levels.items():
            logging.getLogger(n).setLevel(lvl)
        if bars_on:
            datasets.enable_progress_bars()


# --- samples as Bergson's dataset -----------------------------------------------------------------------------------

def encode_rows(samples: Sequence[Sample], tokenizer: Any, seq_len: int, counted_positions: str,
                rendering: Rendering | None = None) -> list[dict]:
    """One row per sample as Bergson reads it: `input_ids` (RISE's tokens, rendered as `rendering` says), `labels`
    (the token where its prediction counts, -100 elsewhere; position 0 is never predicted) and `length`."""
    rows = []
    for s in samples:
        enc = encode_sample(Sample.coerce(s), tokenizer, seq_len, counted_positions, rendering)
        labels = [-100] + [t if c else -100 for t, c in zip(enc.input_ids[1:], enc.counted, strict=True)]
        rows.append({"input_ids": list(enc.input_ids), "labels": labels, "length": len(enc.input_ids)})
    return rows


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Row indices sorted by length, `batch_size` at a time (how RISE's build batches)."""
    if batch_size < 1:
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def _index_config(bergson: Any, run_path: Path, options: BergsonOptions) -> Any:
    return bergson.IndexConfig(str(run_path), projection_dim=options.projection_dim,
                               projection_type=options.projection_type, projection_seed=options.projection_seed,
                               loss_reduction="sum", loss_fn="ce")


def _processor(bergson: Any, options: BergsonOptions) -> Any:
    return bergson.GradientProcessor(projection_dim=options.projection_dim or None,
                                     projection_type=options.projection_type, projection_seed=options.projection_seed)


def row_bytes(lm: LoadedModel, options: BergsonOptions | None = None) -> int:
    """Bytes of one pool row in Bergson's index, in memory (its `Attributor` holds every row at float32, or float64
    on a float64 model) and on disk: a projection_dim x projection_dim block per linear layer of the model body (the
    whole (out, in) gradient without projection)."""
    options = options or BergsonOptions()
    p, width = options.projection_dim, 8 if lm.dtype == torch.float64 else 4
    linears = [m for m in lm.model.base_model.modules() if isinstance(m, torch.nn.Linear)]
    return width * sum(p * p if p else m.in_features * m.out_features for m in linears)


# --- the index ------------------------------------------------------------------------------------------------------

@dataclass
class BergsonIndex:
    """A Bergson gradient index on disk over a pool (rows in pool order), with what RISE needs to query it."""

    path: Path
    n: int
    n_tokens: int
    seconds: float
    seq_len: int
    counted_positions: str
    options: BergsonOptions
    hessian_path: Path | None = None
    rendering: Rendering = field(default_factory=Rendering)  # how the pool's pairs and conversations were tokenised
    _attributor: Any = field(default=None, repr=False)

    @property
    def gradient_bytes(self) -> int:
        """Bytes of the stored gradients (N rows of projected values at the model's dtype)."""
        return (self.path / GRADIENTS_FILE).stat().st_size

    @property
    def disk_bytes(self) -> int:
        """Everything Bergson wrote for this index: gradients, its dataset copy (labels, losses), configs."""
        total = sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())
        if self.hessian_path is not None:
            total += sum(p.stat().st_size for p in self.hessian_path.rglob("*") if p.is_file())
        return total

    def attributor(self, lm: LoadedModel) -> Any:
        """Bergson's `Attributor` over this index (rows loaded and normalised once, then kept)."""
        if self._attributor is None:
            bergson = _import_bergson()
            dtype = torch.float64 if lm.dtype == torch.float64 else torch.float32
            with _quiet():
                self._attributor = bergson.Attributor(
                    self.path, device=str(lm.device), dtype=dtype, unit_norm=self.options.unit_norm,
                    hessian_path=None if self.hessian_path is None else str(self.hessian_path))
        return self._attributor

    def scores(self, lm: LoadedModel, queries: Sequence[Sample], batch_size: int = 8) -> np.ndarray:
        """(Q, N) scores of every pool row for each query: Bergson's `Attributor.trace` around the query's loss
        (the same tokens and counted positions as the pool's), every row returned, put back in pool order."""
        bergson = _import_bergson()
        from bergson.collector.collector import fwd_bwd_factory
        from bergson.data import pad_and_tensor

        queries = [Sample.coerce(q) for q in queries]
        if not queries:
            raise InputDataError("the query list is empty")
        attr = self.attributor(lm)
        rows = encode_rows(queries, lm.tokenizer, self.seq_len, self.counted_positions, self.rendering)
        fwd_bwd = fwd_bwd_factory(_index_config(bergson, self.path, self.options))
        out = np.zeros((len(queries), self.n), dtype=np.float64)
        with _bergson_grads(lm.model), _quiet():
            for batch in length_batches([r["length"] for r in rows], batch_size):
                x, y, _, _ = pad_and_tensor([rows[i]["input_ids"] for i in batch],
                                            labels=[rows[i]["labels"] for i in batch], device=lm.device)
                with attr.trace(lm.model.base_model, None) as result:
                    fwd_bwd(lm.model, x, y, {})
                scores, idx = result.scores.double().cpu().numpy(), result.indices.cpu().numpy()
                for b, i in enumerate(batch):
                    out[i, idx[b]] = scores[b]
        return out


def build(lm: LoadedModel, pool: Sequence[Sample], path: str | Path, seq_len: int = 512,
          counted_positions: str = "all", options: BergsonOptions | None = None, batch_size: int = 8,
          overwrite: bool = False, rendering: Rendering | None = None, progress: Progress | None = None
          ) -> BergsonIndex:
    """Bergson's gradient index of `pool` under `lm` at `path` (a directory), built in-process with Bergson's
    collector (`bergson.collect_gradients`, as `bergson build` runs it per worker), on RISE's tokens and batches.

    `progress(done, total)` after each batch, over both passes when `options.precondition` fits the Hessian too (an
    exception it raises stops the build there). Bergson hooks every linear layer of `lm.model` and turns its
    parameters' gradients off while it runs: in a process where other threads run the same model, give it a copy of
    its own (`LoadedModel.private_copy`)."""
    bergson = _import_bergson()
    from datasets import Dataset

    options = options or BergsonOptions()
    pool = [Sample.coerce(s) for s in pool]
    if not pool:
        raise InputDataError("the pool is empty")
    path = Path(path)
    if path.exists():
        if not overwrite:
            raise ConfigError(f"{path} exists; give overwrite=True or another directory")
        shutil.rmtree(path)
    t0 = time.perf_counter()
    rendering = rendering or Rendering()
    rows = encode_rows(pool, lm.tokenizer, seq_len, counted_positions, rendering)
    data = Dataset.from_list(rows)
    cfg = _index_config(bergson, path, options)
    processor = _processor(bergson, options)
    batches = length_batches(data["length"], batch_size)
    total = len(pool) * (2 if options.precondition else 1)
    with _bergson_grads(lm.model), _quiet(progress, total):
        bergson.collect_gradients(lm.model, data, processor, cfg, batches=batches)
    shutil.move(str(cfg.partial_run_path), str(path))
    hessian_path = (_fit_hessian(bergson, lm, data, batches, path, options, progress, total)
                    if options.precondition else None)
    seconds = time.perf_counter() - t0
    return BergsonIndex(path=path, n=len(pool), n_tokens=sum(r["length"] for r in rows), seconds=seconds,
                        seq_len=seq_len, counted_positions=counted_positions, options=options,
                        hessian_path=hessian_path, rendering=rendering)


def _fit_hessian(bergson: Any, lm: LoadedModel, data: Any, batches: list[list[int]], index_path: Path,
                 options: BergsonOptions, progress: Progress | None = None, total: int = 0) -> Path:
    """TrackStar's autocorrelation Hessian of the projected gradients over the pool, with labels sampled from the
    model (Bergson's `approximate_hessians(method="autocorrelation")`, run on RISE's batches), beside the index."""
    from bergson.collector.collector import CollectorComputer, fwd_bwd_hessian_factory
    from bergson.config.config import HessianConfig
    from bergson.hessians.autocorrelation import AutocorrelationCollector

    hess_path = index_path.with_name(index_path.name + ".hessian")
    if hess_path.exists():
        shutil.rmtree(hess_path)
    cfg = _index_config(bergson, hess_path, options)
    cfg.partial_run_path.mkdir(parents=True, exist_ok=True)
    # the labels are sampled from torch's global generator: seeded for this block alone, no other thread drawing
    with _bergson_grads(lm.model), _quiet(progress, total, start=len(data)), seeded_global_rng(0), \
            contextlib.redirect_stdout(io.StringIO()):  # its eigendecomposition prints its progress
        collector = AutocorrelationCollector(model=lm.model.base_model, data=data, path=str(cfg.partial_run_path),
                                             processor=_processor(bergson, options))
        computer = CollectorComputer(model=lm.model, data=data, collector=collector, batches=batches, cfg=cfg)
        computer.forward_backward = fwd_bwd_hessian_factory(cfg, HessianConfig(method="autocorrelation"))
        computer.run_with_collector_hooks(desc="autocorrelation Hessian")
    shutil.move(str(cfg.partial_run_path), str(hess_path))
    return hess_path


# --- the scorer and the registry entry ------------------------------------------------------------------------------

class BergsonScorer(Scorer):
    """Bergson behind the `Scorer` interface: `fit` builds its index of the pool (in `directory`, or a temporary
    one removed with the scorer), `score` runs its query for each sample. One call at a time per scorer; where other
    threads run the same model, give it `lm.private_copy()` (Bergson hooks the model's layers while it runs)."""

    name = BERGSON

    def __init__(self, lm: LoadedModel, config: RiseConfig | None = None, options: BergsonOptions | None = None,
                 batch_size: int = 8, directory: str | Path | None = None) -> None:
        if not installed():
            raise Unavailable(INSTALL_HINT)
        self.lm, self.config = lm, config or RiseConfig()
        self.options, self.batch_size = options or BergsonOptions(), batch_size
        self._tmp = None if directory is not None else tempfile.TemporaryDirectory(prefix="rise-bergson-")
        self.directory = Path(directory) if directory is not None else Path(self._tmp.name)
        self.index: BergsonIndex | None = None
        self._lock = threading.Lock()  # Bergson hooks the model while it builds or queries: one call at a time

    def fit(self, pool: Sequence[Sample], progress: Progress | None = None) -> None:
        """Build Bergson's index of `pool` (`build`; `progress(done, total)` after each batch)."""
        with self._lock:
            self.index = build(self.lm, pool, self.directory / "index", self.config.seq_len,
                               self.config.counted_positions, self.options, self.batch_size, overwrite=True,
                               rendering=rendering_for(self.lm, self.config), progress=progress)
            self.index.attributor(self.lm)  # rows loaded and normalised now: building, not querying

    def score(self, queries: Sequence[Sample]) -> np.ndarray:
        if self.index is None:
            raise InputDataError("BergsonScorer.score called before fit(pool)")
        with self._lock:  # two sessions' queries of one kept scorer would fire each other's hooks
            return self.index.scores(self.lm, queries, self.batch_size).astype(np.float32)

    @property
    def index_bytes(self) -> int:
        """The stored gradients' bytes (the per-sample part of what Bergson writes; `BergsonIndex.disk_bytes` has
        the rest: its dataset copy and configs)."""
        return 0 if self.index is None else self.index.gradient_bytes


def _scores(src: Source) -> np.ndarray:
    if not installed():
        raise Unavailable(INSTALL_HINT)

    def make() -> BergsonScorer:  # not called when the source holds a scorer fitted beforehand (`IndexSource.peers`)
        if src.lm is None:
            raise Unavailable("Bergson needs the model: it builds its own gradient index over the pool")
        return BergsonScorer(src.lm.private_copy() if _PRIVATE_MODELS.is_set() else src.lm, src.config)
    return np.asarray(src.fitted(BERGSON, make).score(src.queries), dtype=np.float64)


def method() -> Method:
    """The registry entry (`methods.py` registers it)."""
    return Method(BERGSON, f"Bergson {BERGSON_VERSION}'s gradient index and query: per-example gradients of every "
                  "linear layer, projected to 16 x 16 per module, unit-normalised, cosine-scored (`bergson build "
                  "--projection_dim 16` + `bergson query --unit_norm`). A backward pass per sample; optional "
                  "(pip install bergson, see docs/BERGSON.md).", frozenset({"lm"}), _scores)
