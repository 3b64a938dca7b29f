"""Planted layers for the probe tests: log n written along a known unit direction, with carrier
noise of known size and kind."""

from __future__ import annotations

import numpy as np

MAGNITUDES = np.unique(np.round(np.geomspace(5, 1000, 30)))


def planted_layer(*, noise: str = "weber", size: float = 0.1, magnitudes: np.ndarray = MAGNITUDES,
                  n_carriers: int = 12, dim: int = 24, scale: float = 3.0, offsets: float = 0.0,
                  isotropic: float = 1e-4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(vectors (n, C, d) float32, the unit direction u) with x[n, c] = scale * code[n, c] * u +
    carrier offset (orthogonal to u, of per-dimension SD ``offsets``) + isotropic noise, where

    - ``noise="weber"``: code = log n + e, e ~ N(0, size^2): the decoded n-hat = n e^e has
      SD / n = sqrt((e^(s^2) - 1) e^(s^2)) ~ size at every n (a constant Weber fraction);
    - ``noise="absolute"``: code = log(n + e), e ~ N(0, size^2): n-hat = n + e has SD = size at
      every n (a constant absolute noise);
    - ``noise="none"``: code = log n.
    """
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(dim)
    direction /= np.linalg.norm(direction)
    draws = rng.normal(0.0, size, (magnitudes.size, n_carriers))
    if noise == "weber":
        code = np.log(magnitudes)[:, None] + draws
    elif noise == "absolute":
        code = np.log(magnitudes[:, None] + draws)
    else:
        code = np.repeat(np.log(magnitudes)[:, None], n_carriers, axis=1)
    carrier_offsets = rng.standard_normal((n_carriers, dim)) * offsets
    carrier_offsets -= np.outer(carrier_offsets @ direction, direction)
    vectors = scale * code[:, :, None] * direction + carrier_offsets[None]
    vectors += rng.normal(0.0, isotropic, vectors.shape)
    return vectors.astype(np.float32), direction


def planted_weber_fraction(size: float) -> float:
    """SD(n e^e) / n for e ~ N(0, size^2)."""
    return float(np.sqrt((np.exp(size ** 2) - 1.0) * np.exp(size ** 2)))
