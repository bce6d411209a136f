"""CountSketch: a data-independent random projection CS(x)_j = sum_{i: eta(i) = j} s(i) x_i.

The hashes come from a seeded generator, so index time and query time agree without fitting anything, and an index
can grow without refitting. They are also stored with an index (`state_dict`) so they survive library upgrades.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch

from .errors import ConfigError


@dataclass(frozen=True)
class CountSketch:
    """One CountSketch operator R^input_dim -> R^sketch_dim."""

    buckets: torch.Tensor  # (input_dim,) int64 in [0, sketch_dim)
    signs: torch.Tensor  # (input_dim,) float32 in {-1, +1}
    sketch_dim: int

    @classmethod
    def from_seed(cls, input_dim: int, sketch_dim: int, seed: int) -> CountSketch:
        """Hashes drawn from a CPU generator seeded with `seed` (identical on every machine)."""
        if input_dim < 1 or sketch_dim < 1:
            raise ConfigError(f"CountSketch dims must be positive, got input_dim={input_dim}, sketch_dim={sketch_dim}")
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        buckets = torch.randint(0, sketch_dim, (input_dim,), generator=gen, dtype=torch.int64)
        signs = torch.randint(0, 2, (input_dim,), generator=gen, dtype=torch.int64).float().mul_(2).sub_(1)
        return cls(buckets=buckets, signs=signs, sketch_dim=sketch_dim)

    @classmethod
    def identity(cls, dim: int) -> CountSketch:
        """The identity map (bucket i, sign +1): for exactness tests."""
        return cls(buckets=torch.arange(dim), signs=torch.ones(dim), sketch_dim=dim)

    @property
    def input_dim(self) -> int:
        return int(self.buckets.numel())

    def to(self, device: torch.device | str) -> CountSketch:
        return CountSketch(self.buckets.to(device), self.signs.to(device), self.sketch_dim)

    def matrix(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The dense (input_dim, sketch_dim) matrix M with M[i, eta(i)] = s(i), so CS(x) = x @ M."""
        m = torch.zeros(self.input_dim, self.sketch_dim, dtype=dtype, device=self.buckets.device)
        m[torch.arange(self.input_dim, device=self.buckets.device), self.buckets] = self.signs.to(dtype)
        return m

    def apply_dense(self, x: torch.Tensor) -> torch.Tensor:
        """Sketch dense rows x (..., input_dim) -> (..., sketch_dim) by scatter-add."""
        out = torch.zeros(*x.shape[:-1], self.sketch_dim, dtype=x.dtype, device=x.device)
        signed = x * self.signs.to(x.dtype)
        return out.scatter_add_(-1, self.buckets.expand_as(signed), signed)

    def apply_sparse(self, indices: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Sketch sparse rows given as (..., nnz) coordinate indices and values (zero-padded rows are fine)."""
        out = torch.zeros(*values.shape[:-1], self.sketch_dim, dtype=values.dtype, device=values.device)
        signed = values * self.signs[indices].to(values.dtype)
        return out.scatter_add_(-1, self.buckets[indices], signed)

    def digest(self) -> str:
        """Content hash of the hashes, to check that a stored sketch is the one in use."""
        h = hashlib.sha256()
        h.update(self.buckets.cpu().to(torch.int64).numpy().tobytes())
        h.update(self.signs.cpu().to(torch.int8).numpy().tobytes())
        h.update(str(self.sketch_dim).encode())
        return h.hexdigest()[:16]


@dataclass(frozen=True)
class SketchSet:
    """The operators RISE uses.

    Outer composition: CS_r (V -> K_r), CS_h (d -> K_h), CS_g (d -> K_g); a token's RH feature is CS_r(r) (outer)
    CS_h(h). Tensor composition: CS_r (V -> D_rh), CS_h (d -> D_rh), CS_g (d -> D_gh) and a second hidden sketch
    h_g (d -> D_gh), with D_rh = K_r*K_h and D_gh = K_g*K_h; a token's RH feature is the circular convolution
    CS_r(r) * CS_h(h), a CountSketch of vec(r h^T) (`tensor_product`)."""

    r: CountSketch
    h: CountSketch
    g: CountSketch
    h_g: CountSketch | None = None  # tensor composition only

    @property
    def composition(self) -> str:
        return "outer" if self.h_g is None else "tensor"

    @classmethod
    def from_seed(cls, vocab_size: int, hidden_dim: int, k_r: int, k_h: int, k_g: int, seed: int,
                  composition: str = "outer") -> SketchSet:
        """Independent sketches from derived seeds (seed, seed + 1, seed + 2, and seed + 3 for tensor's h_g)."""
        if composition == "tensor":
            d_rh, d_gh = k_r * k_h, k_g * k_h
            return cls(r=CountSketch.from_seed(vocab_size, d_rh, seed), h=CountSketch.from_seed(hidden_dim, d_rh, seed + 1),
                       g=CountSketch.from_seed(hidden_dim, d_gh, seed + 2),
                       h_g=CountSketch.from_seed(hidden_dim, d_gh, seed + 3))
        if composition != "outer":
            raise ConfigError(f"unknown composition {composition!r}; choose outer or tensor")
        return cls(
            r=CountSketch.from_seed(vocab_size, k_r, seed),
            h=CountSketch.from_seed(hidden_dim, k_h, seed + 1),
            g=CountSketch.from_seed(hidden_dim, k_g, seed + 2),
        )

    @classmethod
    def for_config(cls, vocab_size: int, hidden_dim: int, config) -> SketchSet:
        """The sketches of a `RiseConfig` (its dims, seed and composition)."""
        return cls.from_seed(vocab_size, hidden_dim, config.k_r, config.k_h, config.k_g, config.seed,
                             config.composition)

    @classmethod
    def identity(cls, vocab_size: int, hidden_dim: int) -> SketchSet:
        return cls(CountSketch.identity(vocab_size), CountSketch.identity(hidden_dim), CountSketch.identity(hidden_dim))

    def to(self, device: torch.device | str) -> SketchSet:
        return SketchSet(self.r.to(device), self.h.to(device), self.g.to(device),
                         None if self.h_g is None else self.h_g.to(device))

    def _named(self) -> tuple[str, ...]:
        return ("r", "h", "g") if self.h_g is None else ("r", "h", "g", "h_g")

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Tensors to persist (buckets as int32, signs as int8) for `from_state_dict`."""
        out: dict[str, torch.Tensor] = {}
        for name in self._named():
            cs: CountSketch = getattr(self, name)
            out[f"{name}.buckets"] = cs.buckets.cpu().to(torch.int32)
            out[f"{name}.signs"] = cs.signs.cpu().to(torch.int8)
            out[f"{name}.sketch_dim"] = torch.tensor([cs.sketch_dim], dtype=torch.int64)
        return out

    @classmethod
    def from_state_dict(cls, state: dict[str, torch.Tensor]) -> SketchSet:
        parts = {}
        for name in ("r", "h", "g", "h_g"):
            if f"{name}.buckets" not in state:
                continue
            parts[name] = CountSketch(
                buckets=state[f"{name}.buckets"].to(torch.int64),
                signs=state[f"{name}.signs"].to(torch.float32),
                sketch_dim=int(state[f"{name}.sketch_dim"].item()),
            )
        return cls(**parts)

    def digest(self) -> str:
        return hashlib.sha256("".join(getattr(self, n).digest() for n in self._named()).encode()).hexdigest()[:16]


def tensor_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise circular convolution of two sketched factors (..., D) x (..., D) -> (..., D), by FFT.

    With a = CS_1(x) and b = CS_2(y), this is the CountSketch of vec(x y^T) under bucket (eta_1(i) + eta_2(j)) mod D
    and sign s_1(i) s_2(j) (Pham & Pagh's TensorSketch)."""
    d = a.shape[-1]
    return torch.fft.irfft(torch.fft.rfft(a, n=d) * torch.fft.rfft(b, n=d), n=d)
