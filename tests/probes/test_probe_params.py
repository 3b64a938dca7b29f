"""ProbeParams: defaults, the options the CLI is built from, and every refusal with its message."""

from __future__ import annotations

import dataclasses

import pytest

from magdash.errors import AnalysisError
from magdash.params import OPTION_KEY
from magdash.probes.probe_params import DEFAULT_ALPHAS, ProbeParams


def test_defaults_are_valid_and_every_field_has_help_text():
    params = ProbeParams()
    assert params.targets == ("log", "linear") and params.alphas == DEFAULT_ALPHAS
    options = {f.name: f.metadata[OPTION_KEY] for f in dataclasses.fields(ProbeParams) if OPTION_KEY in f.metadata}
    assert set(options) == {f.name for f in dataclasses.fields(ProbeParams)}
    assert all(len(choice.help) > 15 for choice in options.values())


def test_values_are_normalised():
    params = ProbeParams(targets=["log", "log"], alphas=[10, 1, 10], n_boot=5)
    assert params.targets == ("log",) and params.alphas == (1.0, 10.0)


def test_from_dict_inverts_asdict_after_a_json_round_trip():
    params = ProbeParams(targets=("linear",), alphas=(0.5, 2.0), magnitude_folds=3, carrier_folds=2, n_boot=7)
    document = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(params).items()}
    assert ProbeParams.from_dict(document) == params


@pytest.mark.parametrize(("change", "message"), [
    ({"targets": ("log", "cubic")}, "unknown probe target.*cubic"),
    ({"targets": ()}, "none given"),
    ({"alphas": (1.0, 0.0)}, "positive numbers"),
    ({"alphas": ("a",)}, "must be numbers"),
    ({"alphas": ()}, "positive numbers"),
    ({"magnitude_folds": 1}, "magnitude_folds=1 must be a whole number >= 2"),
    ({"carrier_folds": 1}, "0 .*or at least 2"),
    ({"carrier_folds": -1}, "carrier_folds=-1 must be a whole number >= 0"),
    ({"ci": 1.5}, "between 0 and 1"),
    ({"n_boot": -1}, "n_boot=.* must be"),
    ({"n_boot": 2.5}, "n_boot=.* must be"),
    ({"seed": True}, "seed=True must be"),
    ({"n_components": 0}, "n_components=0 must be"),
    ({"alpha_rows": 3}, "alpha_rows=3 must be"),
])
def test_bad_values_are_refused_with_what_to_fix(change, message):
    with pytest.raises(AnalysisError, match=message):
        ProbeParams(**change)
