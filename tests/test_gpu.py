"""The CUDA path gives the CPU's features: the same tiny float32 models, the same samples, on both devices.

Tolerance: the features are float32 (machine epsilon eps = 2^-23). On CPU, the float32 model's features differ from
the same weights run in float64 by at most 2.7 eps of the feature matrix's largest entry (rh, gh, hs and the loss, on
both tiny models), with the same sparse supports. A CUDA run rounds differently (other matmul, attention and
reduction kernels), but as closely to the exact values, so the two devices should differ by about 6 eps;
F32_TOL = 128 eps of that scale leaves a 20x margin, and stays far below what a real error gives (a token dropped,
a sketch drawn on the other device: differences of the order of the features themselves). TF32 matmuls, which
round to 10 mantissa bits, are kept off for the test.
"""

from __future__ import annotations

import pytest
import torch
from conftest import CORPUS, build_tiny_model, build_tokenizer

from rise_core.config import RiseConfig
from rise_core.engine import RiseExtractor, SampleFeatures
from rise_core.models import LoadedModel, wrap_model

pytestmark = pytest.mark.gpu

F32_TOL = 128 * torch.finfo(torch.float32).eps


def features(arch: str, device: str) -> tuple[SampleFeatures, LoadedModel]:
    tok = build_tokenizer()
    lm = wrap_model(build_tiny_model(arch, len(tok), dtype=torch.float32), tok, f"tiny-{arch}", device=device)
    ex = RiseExtractor(lm, RiseConfig(k_r=16, k_h=8, k_g=16))
    ex.fit_hidden_mean(CORPUS)
    return ex.extract(CORPUS, batch_size=4), lm


@pytest.mark.parametrize("arch", ["llama", "gpt-neox"])
def test_cuda_features_equal_cpu_features(arch, monkeypatch):
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    cpu, _ = features(arch, "cpu")
    gpu, lm = features(arch, "cuda")
    assert lm.device.type == "cuda"
    torch.testing.assert_close(gpu.n_counted.cpu(), cpu.n_counted, rtol=0, atol=0)
    torch.testing.assert_close(gpu.mean_support.cpu(), cpu.mean_support, rtol=0, atol=0)  # the same supports
    for name in ("rh", "gh", "hs", "loss"):
        ref = getattr(cpu, name)
        scale = float(ref.abs().max())
        torch.testing.assert_close(getattr(gpu, name).cpu(), ref, rtol=F32_TOL, atol=F32_TOL * scale, msg=name)
