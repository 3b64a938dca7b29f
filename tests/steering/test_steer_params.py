"""SteerParams: the paper's defaults, refusals naming the parameter, the JSON round trip."""

from __future__ import annotations

import dataclasses
import json

import pytest

from magdash.errors import AnalysisError
from magdash.steering.steer_params import PAPER_DOSES, SteerParams


def test_defaults_are_the_papers():
    params = SteerParams()
    assert params.doses == (0.25, 0.5, 0.75, 1.0) == PAPER_DOSES
    assert (params.n_random, params.seed, params.null_percentile, params.relevance_share) == (10, 42, 97.5, 0.75)
    assert (params.direction, params.operand, params.full_dose, params.n_orthogonal) == ("probe", "a", 1.0, 10)
    assert SteerParams(orthogonal_null=False).n_orthogonal == 0


def test_doses_and_layers_are_sorted_and_deduplicated():
    params = SteerParams(doses=(1, 0.5, 0.5), layers=(4, 2, 2))
    assert params.doses == (0.5, 1.0) and params.full_dose == 1.0
    assert params.layers == (2, 4)


@pytest.mark.parametrize(("values", "parameter"), [
    ({"doses": (0.5, -1.0)}, "doses"), ({"doses": ()}, "doses"), ({"direction": "pca"}, "direction"),
    ({"operand": "c"}, "operand"), ({"n_random": 1}, "n_random"), ({"null_percentile": 101}, "null_percentile"),
    ({"relevance_share": 1.5}, "relevance_share"), ({"ci": 1.0}, "ci"), ({"n_boot": -1}, "n_boot"),
    ({"layers": ()}, "layers"), ({"seed": -1}, "seed"), ({"orthogonal_null": "yes"}, "orthogonal_null"),
])
def test_bad_values_are_refused_naming_the_parameter(values, parameter):
    with pytest.raises(AnalysisError) as error:
        SteerParams(**values)
    assert parameter in str(error.value)


def test_from_dict_inverts_asdict_after_json():
    params = SteerParams(layers=(1, 3), doses=(0.5, 2.0), direction="pc1", operand="b", n_boot=7)
    assert SteerParams.from_dict(json.loads(json.dumps(dataclasses.asdict(params)))) == params
