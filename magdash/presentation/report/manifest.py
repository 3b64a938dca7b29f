"""The run manifest of a report: model identities, stimuli, analysis parameters and package
versions, from facts the caller gathered (:func:`magdash.reports.report_manifest` reads
them from a store)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from magdash.environment import package_versions
from magdash.jsonio import to_jsonable
from magdash.presentation.report.html import REPORT_FORMAT_VERSION
from magdash.sources.gguf import weights_note


def build_manifest(
    records: Mapping[str, Any],
    data_fingerprints: Mapping[str, str],
    stimulus_sets: Mapping[str, Any],
    results: Mapping[str, Any],
    *,
    store: str = "",
    extra: Mapping[str, Any] | None = None,
    kind: str = "analysis",
) -> dict[str, Any]:
    """Model identities, stimuli, analysis parameters and package versions of a run.

    Args:
        records: model name -> its :class:`~magdash.store.ModelRecord`.
        data_fingerprints: model name -> the data fingerprint of its vectors on its result's stimuli.
        stimulus_sets: stimulus set name -> its :class:`~magdash.stimuli.StimulusSet`.
        results: model name -> its :class:`~magdash.variability.analysis.AnalysisResult`, or another
            result with ``stimuli``, ``params`` and ``from_cache`` (a probe's, say).
        store: the store's path.
        extra: more entries (the dashboard's view).
        kind: what ``results`` are: names the manifest's ``<kind>_parameters`` and each model's
            ``<kind>_from_cache`` (an analysis also gives each model's core layers).
    """
    models = []
    described: dict[str, Any] = {}
    parameters: dict[str, Any] = {}
    for name, result in results.items():
        record = records[name]
        entry = {
            **dataclasses.asdict(record),
            "weights": weights_note(record.fingerprint, record.dtype),
            "stimuli": result.stimuli,
            "data_fingerprint": data_fingerprints[name],
        }
        if hasattr(result, "core_layers"):
            entry["core_layers"] = list(result.core_layers)
        entry[f"{kind}_from_cache"] = bool(result.from_cache)
        models.append(entry)
        parameters[name] = dataclasses.asdict(result.params)
        if result.stimuli not in described:
            stimulus = stimulus_sets[result.stimuli]
            described[result.stimuli] = {
                "carriers": list(stimulus.carriers),
                "magnitudes": list(stimulus.magnitudes),
                "content_hash": stimulus.content_hash,
            }
    distinct = {json.dumps(to_jsonable(p), sort_keys=True) for p in parameters.values()}
    manifest: dict[str, Any] = {
        "report_format": REPORT_FORMAT_VERSION,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "store": store,
        "models": models,
        "stimuli": described,
        f"{kind}_parameters": (
            next(iter(parameters.values())) if len(distinct) == 1 else parameters
        ),
        "packages": package_versions(),
    }
    if extra:
        manifest.update(extra)
    return to_jsonable(manifest)
