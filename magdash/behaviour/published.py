"""The paper's published trial files read into the trials frame (:mod:`magdash.behaviour.trial_frames`).

Cacioli 2026 (arXiv 2603.20642) published each model's Paradigm B trials as a JSON list of records
(``results/paradigm_b/<model>/numerical/paradigm_b_raw.json`` in synthiumjp/weber; magdash ships
Llama-3-8B-Instruct's as ``magdash/data/paradigm_b/llama_instruct_numerical_trials.json``). Each record's
fields map onto the frame's columns: ``task_type`` -> task, ``baseline`` -> reference, ``ratio``,
``correct_answer`` -> larger, ``value_a``, ``value_b``, ``prompt``, ``a_logit`` / ``b_logit`` -> logit_a /
logit_b, ``a_prob`` / ``b_prob`` -> prob_a / prob_b, ``predicted`` -> chosen (when it is A or B),
``correct``; ``task_type:pair_id`` is kept as ``trial_id`` (the paper asks each pair in every task).

A task none of whose records has the answer A or B is not a forced choice between two options (the
paper's ``symbolic_control`` asks for the larger number itself) and is left out, named in the frame's
``attrs["skipped_tasks"]``; within a forced-choice task every record must be one.
"""

from __future__ import annotations

import json
import logging
import math
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from magdash.behaviour.trial_frames import OPTIONS, TRIAL_COLUMNS
from magdash.errors import AnalysisError

PUBLISHED_FIELDS = {"task_type": "task", "baseline": "reference", "ratio": "ratio", "correct_answer": "larger",
                    "value_a": "value_a", "value_b": "value_b", "prompt": "prompt", "a_logit": "logit_a",
                    "b_logit": "logit_b", "a_prob": "prob_a", "b_prob": "prob_b", "predicted": "chosen",
                    "correct": "correct"}
"""The published record's fields and the trials frame's column each becomes."""
logger = logging.getLogger(__name__)
_NUMBERS = ("baseline", "ratio", "a_logit", "b_logit", "a_prob", "b_prob")
_TEXTS = ("task_type", "value_a", "value_b", "prompt")
SHIPPED_TRIALS = "llama_instruct_numerical_trials.json"
SHIPPED_FITS = "llama_instruct_numerical_psychometric.json"


def shipped_file(name: str) -> Path:
    """The path of a file of the paper's that magdash ships (``magdash/data/paradigm_b/``).

    Args:
        name: :data:`SHIPPED_TRIALS` or :data:`SHIPPED_FITS`.
    """
    return Path(str(resources.files("magdash") / "data" / "paradigm_b" / name))


def _problem(index: int, record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"record {index} is a {type(record).__name__}, not an object"
    missing = [name for name in PUBLISHED_FIELDS if name not in record]
    if missing:
        return f"record {index} lacks {', '.join(missing)}"
    for name in _NUMBERS:
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            return f"record {index}'s {name} is {value!r}, not a finite number"
    for name in _TEXTS:
        if not isinstance(record[name], str):
            return f"record {index}'s {name} is {record[name]!r}, not a text"
    if not isinstance(record["correct"], bool):
        return f"record {index}'s correct is {record['correct']!r}, not true or false"
    if float(record["ratio"]) < 1:
        return f"record {index}'s ratio is {record['ratio']!r}, below 1"
    return None


def published_trials(records: list[Any], source: str = "the records") -> pd.DataFrame:
    """The trials frame of the paper's published records (module docstring; the tasks that are not A/B
    choices left out and named in ``attrs["skipped_tasks"]``), or an :class:`~magdash.errors.AnalysisError`
    naming the first malformed record.

    Args:
        records: the JSON list as loaded.
        source: what the records came from, for the message.
    """
    if not isinstance(records, list) or not records:
        raise AnalysisError(f"{source} must hold a non-empty JSON list of trial records (the paper's "
                            f"paradigm_b_raw.json), got {type(records).__name__}", parameters=("path",))
    for index, record in enumerate(records):
        if problem := _problem(index, record):
            raise AnalysisError(f"{source} is not a published trial file: {problem}", parameters=("path",))
    choice_tasks = {record["task_type"] for record in records if record["correct_answer"] in OPTIONS}
    skipped = sorted({record["task_type"] for record in records} - choice_tasks)
    for index, record in enumerate(records):
        if record["task_type"] in choice_tasks and record["correct_answer"] not in OPTIONS:
            raise AnalysisError(f"{source} is not a published trial file: record {index}'s correct_answer is "
                                f"{record['correct_answer']!r}, not A or B", parameters=("path",))
    if not choice_tasks:
        raise AnalysisError(f"{source} holds no forced-choice trial (correct_answer A or B)", parameters=("path",))
    if skipped:
        logger.info("%s: task(s) %s are not A/B choices (their answer is a number) and are not imported",
                    source, ", ".join(skipped))
    kept = [record for record in records if record["task_type"] in choice_tasks]
    frame = pd.DataFrame.from_records(
        [{column: record[name] for name, column in PUBLISHED_FIELDS.items()} for record in kept])
    frame["chosen"] = frame["chosen"].where(frame["chosen"].isin(OPTIONS), "")
    for column in ("reference", "ratio", "logit_a", "logit_b", "prob_a", "prob_b"):
        frame[column] = frame[column].astype(float)
    frame["correct"] = frame["correct"].astype(bool)
    # The paper numbers a pair once and asks it in every task: a trial is the task's pair.
    frame["trial_id"] = [f"{record['task_type']}:{record.get('pair_id', index)}" for index, record in enumerate(kept)]
    frame.attrs["skipped_tasks"] = skipped
    return frame.loc[:, [*TRIAL_COLUMNS, "trial_id"]]


def read_published_trials(path: str | Path) -> pd.DataFrame:
    """The trials frame of a published trial file (:func:`published_trials`); a file that cannot be
    read or is not one raises :class:`~magdash.errors.AnalysisError`.

    Args:
        path: the JSON file (e.g. :func:`shipped_file` of :data:`SHIPPED_TRIALS`).
    """
    path = Path(path)
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnalysisError(f"no published trial file at path={str(path)!r}", parameters=("path",)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise AnalysisError(f"cannot read path={str(path)!r}: {error}", parameters=("path",)) from None
    except json.JSONDecodeError as error:
        raise AnalysisError(f"path={str(path)!r} is not JSON ({error.msg} at line {error.lineno})",
                            parameters=("path",)) from None
    except RecursionError:
        raise AnalysisError(f"path={str(path)!r} nests its JSON too deeply: a trial file is a list of flat records",
                            parameters=("path",)) from None
    return published_trials(records, source=f"path={str(path)!r}")
