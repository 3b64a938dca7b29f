"""Planted trials for the behaviour tests: a known psychometric function sampled into the trials frame."""

from __future__ import annotations

import numpy as np
import pandas as pd

from magdash.behaviour.psychometric import two_alternative

RATIOS = (1.05, 1.1, 1.2, 1.5, 2.0, 3.0)
REFERENCES = (10.0, 30.0, 100.0, 300.0, 1000.0)


def planted_trials(mu: float | dict[float, float], sigma: float | dict[float, float], lapse: float, *,
                   n_per_position: int = 100, references: tuple[float, ...] = (100.0,), bias: float = 0.0,
                   task: str = "B1", seed: int = 0, graded_exact: bool = False) -> pd.DataFrame:
    """Trials whose P(correct | r) is :func:`two_alternative` (per reference, when mu/sigma are dicts).

    ``bias`` shifts the chance of answering "A": P(correct | A larger) = P + bias, P(correct | B larger)
    = P - bias (clipped to [0, 1]). With ``graded_exact`` each trial's logit difference is logit(P), so the
    soft choice probability is P exactly.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for reference in references:
        m = mu[reference] if isinstance(mu, dict) else mu
        s = sigma[reference] if isinstance(sigma, dict) else sigma
        for ratio in RATIOS:
            p = float(two_alternative(np.log(ratio), m, s, lapse))
            for larger in ("A", "B"):
                p_side = float(np.clip(p + (bias if larger == "A" else -bias), 0.0, 1.0))
                correct = rng.random(n_per_position) < p_side
                for right in correct:
                    chosen = larger if right else ("B" if larger == "A" else "A")
                    difference = float(np.log(p / (1 - p))) if graded_exact else (1.0 if right else -1.0)
                    signed = difference if larger == "A" else -difference
                    small, big = f"{reference:g}", f"{reference * ratio:g}"
                    rows.append({"task": task, "reference": reference, "ratio": ratio, "larger": larger,
                                 "value_a": big if larger == "A" else small, "value_b": small if larger == "A" else big,
                                 "prompt": "Which is larger?", "logit_a": 10.0 + signed, "logit_b": 10.0,
                                 "prob_a": 0.5, "prob_b": 0.45, "chosen": chosen, "correct": bool(right)})
    return pd.DataFrame(rows)


def chance_trials(n_per_position: int = 100, seed: int = 1, task: str = "control") -> pd.DataFrame:
    """Trials of a model that answers A or B at random, whatever the numbers (an ``@random`` control)."""
    rng = np.random.default_rng(seed)
    frame = planted_trials(0.0, 1.0, 0.0, n_per_position=n_per_position, references=REFERENCES, task=task, seed=seed)
    chosen = np.where(rng.random(len(frame)) < 0.5, "A", "B")
    logit_a = rng.normal(10.0, 1.0, len(frame))
    return frame.assign(chosen=chosen, correct=chosen == frame["larger"].to_numpy(), logit_a=logit_a,
                        logit_b=logit_a + np.where(chosen == "B", 0.5, -0.5))
