"""The Steering page's figures and sentences from a planted steering (tests/steering/test_summary.py: at
layer 1 the magnitude direction moves p by a known amount, the nulls barely): the profile's panels on
one layer axis with the right series, the dose-response from the unpatched pass, the sentence naming
the relevant layer, and the report section."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from magdash.errors import AnalysisError
from magdash.presentation import steering_figures as sf
from magdash.presentation.report.sections import steering_section
from magdash.steering.steer_params import SteerParams
from magdash.steering.steer_result import summarise_steering
from tests.steering.test_summary import KINDS, SHIFT, planted_frames


@pytest.fixture(scope="module")
def planted():
    steered, baseline = planted_frames(n_trials=60)
    return summarise_steering(steered, baseline, KINDS, SteerParams(n_boot=50), dose_units={0: 1.5, 1: 2.0},
                              model="tiny", stimuli="paper", comparisons="paper")


def test_the_profile_sets_the_causal_statistics_beside_the_representation(planted):
    frame = sf.profile_frame(planted)
    assert list(frame.columns) == sf.PROFILE_COLUMNS
    effect = frame[(frame["panel"] == sf.EFFECT_PANEL) & (frame["series"] == sf.MAGNITUDE)].set_index("layer")
    assert effect.loc[1, "value"] == pytest.approx(SHIFT, abs=1e-12)
    assert effect.loc[1, "low"] <= effect.loc[1, "value"] <= effect.loc[1, "high"]
    null = frame[frame["series"] == sf.RANDOM].set_index("layer")
    # the band runs from the random directions' mean to their 97.5th percentile
    assert (null["low"] <= null["high"]).all() and null.loc[1, "high"] < SHIFT / 5
    assert set(frame["panel"]) == set(sf.PANELS)
    assert set(frame.loc[frame["panel"] == sf.REPRESENTATION_PANEL, "series"]) == {sf.BASELINE}  # no analysis, no probe
    chart = sf.profile_figure(planted).to_dict()
    assert len(chart["vconcat"]) == len(sf.PANELS) and chart["resolve"]["scale"]["x"] == "shared"
    assert chart["resolve"]["scale"]["y"] == "independent"


def test_the_profile_takes_the_rsa_and_the_probe_where_given(planted):
    class Analysis:
        geometry = pd.DataFrame({"layer": [0, 1], "rsa_log_euclidean": [0.2, 0.9]})

    class Probe:
        @staticmethod
        def score_table(scheme: str, target: str) -> pd.DataFrame:
            assert (scheme, target) == ("magnitude", "log")
            return pd.DataFrame({"layer": [0, 1], "r2": [0.1, 0.8], "r2_low": [0.0, 0.7], "r2_high": [0.2, 0.9]})

    frame = sf.profile_frame(planted, Analysis(), Probe())  # type: ignore[arg-type]
    shown = frame[frame["panel"] == sf.REPRESENTATION_PANEL].set_index(["series", "layer"])
    assert shown.loc[(sf.RSA, 1), "value"] == 0.9 and shown.loc[(sf.PROBE_R2, 1), "high"] == 0.9
    assert shown.loc[(sf.BASELINE, 0), "value"] == pytest.approx(0.6)


def test_the_dose_response_starts_at_the_unpatched_pass(planted):
    frame = sf.dose_frame(planted, 1)
    magnitude = frame[(frame["series"] == sf.MAGNITUDE) & (frame["measure"] == sf.DOSE_MEASURES["effect"])]
    assert magnitude["dose"].tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    np.testing.assert_allclose(magnitude["value"], [0.0, *(SHIFT * np.array([0.25, 0.5, 0.75, 1.0]))], atol=1e-12)
    mass = frame[(frame["series"] == sf.MAGNITUDE) & (frame["measure"] == sf.DOSE_MEASURES["option_mass"])]
    np.testing.assert_allclose(mass["value"], 1.0, atol=1e-12)
    assert "Dose-response at layer 1" in str(sf.dose_figure(planted, 1).to_dict()["title"])
    with pytest.raises(AnalysisError, match="layer=5 was not steered"):
        sf.dose_frame(planted, 5)


def test_the_sentence_names_the_relevant_layer_and_the_report_section_draws_both_figures(planted):
    said = sf.summary_sentence(planted)
    assert "functionally relevant" in said and "layer(s) 1" in said and "at layer 1" in said
    assert sf.most_specific_layer(planted) == 1 and sf.steered_layers(planted) == [0, 1]
    section = steering_section(planted)
    assert [caption for caption, _ in section.figures] == [
        "Steering along the magnitude direction by layer, tiny", "Dose-response at layer 1, tiny"]
    assert section.text[0] == said
