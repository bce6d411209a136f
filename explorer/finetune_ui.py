"""The Build page's fine-tune section: LoRA-train the model on the chosen pool, with a live loss curve and ETA, so
the index built next is retrospective (the model learned from the pool it explains)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from rise_core.finetune import FinetuneConfig

from .build_plan import slug
from .jobs import FinetuneJob
from .paths import adapter_dir, adapter_root
from .plain import code, md
from .request_limits import FinetuneLimits
from .resources import finetune_jobs, submit
from .ui import friendly
from .widgets import stop_button, use_build_preset


def default_adapter_name(model_id: str, pool_name: str) -> str:
    return f"{slug(Path(pool_name).stem)}-{slug(Path(model_id).name)}"


def finetune_section(model_id: str, load_samples: Callable[[], list], pool_name: str, index_dir: Path) -> None:
    """Recipe inputs, a Start/Stop button and the live progress of the fine-tune of `model_id` on the pool
    (`load_samples` reads it, only when the fine-tune starts)."""
    defaults = FinetuneConfig()
    with st.expander("Fine-tune the model on this pool first (LoRA): for retrospective attribution"):
        st.caption("Trains a LoRA adapter on the pool in the format the index reads it (prompt, newline, "
                   "completion; loss on the completion). Then build the index with the adapter as the model (and "
                   "the 'retrospective' preset, which the button below sets): "
                   "the model's own generations can be attributed to what it learned. On a CPU this takes minutes "
                   "per thousand samples.")
        c1, c2, c3, c4 = st.columns(4)
        help_ = FinetuneConfig.field_help()
        rank = c1.number_input("LoRA rank", 1, 256, defaults.rank, key="ft_rank",
                               help=help_["rank"] + " The LoRA alpha is twice the rank.")
        epochs = c2.number_input("Epochs", 1, 50, defaults.epochs, key="ft_epochs", help=help_["epochs"])
        lr = c3.number_input("Learning rate", 1e-6, 1.0, defaults.learning_rate, format="%.0e", key="ft_lr",
                             help=help_["learning_rate"])
        seed = c4.number_input("Seed", 0, 2**31 - 1, defaults.seed, key="ft_seed", help=help_["seed"])
        typed = st.text_input("Adapter name", key="ft_out", value=default_adapter_name(model_id, pool_name),
                              help=f"Saved under {adapter_root(index_dir)} (set RISE_ADAPTER_DIR to move it).")
        out = adapter_dir(typed, index_dir)  # confined to the adapter folder: a path elsewhere is refused
        st.caption(f"Saved to {code(out)}.")
        recipe = FinetuneConfig(rank=int(rank), alpha=2.0 * int(rank), epochs=int(epochs), learning_rate=float(lr),
                                seed=int(seed))
        job = finetune_jobs().get(str(out.resolve()))
        if st.button("Start the fine-tune", key="ft_start", disabled=bool(job and job.running)):
            with friendly("start the fine-tune"):
                samples = list(load_samples())
                FinetuneLimits.from_env().check(len(samples), recipe.epochs)  # a shared server's bound
                job = FinetuneJob(model_id, samples, out, recipe, label=pool_name)
                submit(job, "fine-tune", out.name, str(out.resolve()))
                finetune_jobs()[str(out.resolve())] = job
        if job is not None:
            _show(str(out.resolve()))


def loss_chart(job: FinetuneJob) -> go.Figure:
    fig = go.Figure(go.Scatter(x=[p.step for p in job.steps], y=[p.loss for p in job.steps], mode="lines",
                               name="loss"))
    fig.update_layout(height=240, margin=dict(l=10, r=10, t=30, b=10), title="training loss per step",
                      xaxis_title="step", yaxis_title="loss (nats/token)")
    return fig


def _show(key: str) -> None:
    job = finetune_jobs()[key]
    if job.running:
        _live(key)
    elif job.status == "failed":
        with friendly("fine-tune the model"):
            raise job.error  # type: ignore[misc]
    else:
        (st.success if job.status == "done" else st.warning)(md(job.message()))
        if job.steps:
            st.plotly_chart(loss_chart(job), key="ft_loss_done")
        if job.status == "done":
            st.button("Use this adapter as the model above", key="ft_use", on_click=_use_adapter, args=(job.out_dir,),
                      help="Sets the model to the adapter and the hyperparameters to the 'retrospective' preset, "
                           "chosen for attributing a fine-tuned model's own generations (docs/EVALUATION.md).")


def _use_adapter(out_dir: Path) -> None:
    st.session_state["build_model"] = str(out_dir)
    use_build_preset("retrospective")


@st.fragment(run_every=1.0)
def _live(key: str) -> None:
    job = finetune_jobs()[key]
    if not job.running:
        st.rerun()
    st.progress(job.fraction, text=md(job.message()))
    if job.steps:
        st.plotly_chart(loss_chart(job), key="ft_loss_live")
    stop_button(job, "Stop the fine-tune", key="ft_stop",
                help="Stops after the step in progress and keeps a checkpoint; starting it again resumes.")
