"""The CLI's options are generated from the params dataclasses: a default, a choice list and a
help text have one home, the field."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from magdash.cli import build_parser, main
from magdash.cli.options import add_params_options, flag_of, params_from_args
from magdash.controls.controls_params import ControlsParams, DesignParams
from magdash.errors import MagdashError
from magdash.extract_params import ExtractParams
from magdash.params import OPTION_KEY
from magdash.phase.phase_params import PhaseParams
from magdash.probes.probe_params import ProbeParams
from magdash.sweep.sweep_params import SweepParams
from magdash.variability.analysis_params import AnalysisParams

PARAMS = (AnalysisParams, ControlsParams, DesignParams, PhaseParams, ExtractParams, SweepParams, ProbeParams)
COMMANDS = {  # command line -> (params class, prefix, fields set by the command itself)
    ("analyze", "--model", "m"): (AnalysisParams, "", {}),
    ("controls", "--model", "m"): (ControlsParams, "controls_", {"analysis": AnalysisParams()}),
    ("design", "--model", "m"): (DesignParams, "design_", {}),
    ("depth", "--model", "m"): (PhaseParams, "", {}),
    ("probe", "--model", "m"): (ProbeParams, "probe_", {}),
    ("extract", "--model", "m"): (ExtractParams, "", {}),
    ("sweep", "plan.toml"): (SweepParams, "", {}),
}


@pytest.mark.parametrize("command", list(COMMANDS), ids=lambda c: c[0])
def test_no_option_given_means_every_default(command):
    cls, prefix, fixed = COMMANDS[command]
    args = build_parser().parse_args(list(command))
    assert params_from_args(cls, args, prefix=prefix, **fixed) == cls(**fixed)


@pytest.mark.parametrize("cls", PARAMS, ids=lambda c: c.__name__)
def test_every_field_with_an_option_is_on_the_command_line_with_its_default(cls):
    parser = argparse.ArgumentParser()
    add_params_options(parser, cls)
    text = parser.format_help().replace("\n", " ")
    with_options = [f for f in dataclasses.fields(cls) if OPTION_KEY in f.metadata]
    assert with_options, cls
    for field in with_options:
        flag = flag_of(field, field.metadata[OPTION_KEY])
        assert flag in text, flag
        if not isinstance(field.default, bool):
            assert "(default:" in text


def test_a_given_option_sets_its_field_and_only_it():
    parser = build_parser()
    args = parser.parse_args(["controls", "--model", "m", "--core", "3-5", "--exclude-carrier", "1",
                              "--exclude-carrier", "3", "--window", "0.7,1.3", "--no-random", "--variant", "m:first",
                              "--perm-seed", "7", "--seed", "11", "--measures", "eucl,proj"])
    analysis = params_from_args(AnalysisParams, args)
    controls = params_from_args(ControlsParams, args, prefix="controls_", analysis=analysis)
    assert analysis == AnalysisParams(core_layers=(3, 4, 5), exclude_carriers=(1, 3), window=(0.7, 1.3), seed=11,
                                      measures=("eucl", "proj"))
    assert controls == ControlsParams(analysis=analysis, random_control=False, variants=("m:first",), seed=7)
    design = params_from_args(DesignParams, parser.parse_args(["design", "--model", "m", "--carriers", "8",
                                                               "--design-seed", "3", "--layers", "4"]),
                              prefix="design_")
    assert (design.n_carriers, design.seed, design.n_layers) == (8, 3, 4)
    extract = params_from_args(ExtractParams, parser.parse_args(["extract", "--model", "m", "--dtype", "float16",
                                                                 "--trust-remote-code"]))
    assert extract == ExtractParams(dtype="float16", trust_remote_code=True)


def test_flags_are_unique_within_a_command():
    for cls_pair in ((AnalysisParams, ControlsParams), (AnalysisParams, DesignParams)):
        flags = [flag_of(f, f.metadata[OPTION_KEY]) for cls in cls_pair for f in dataclasses.fields(cls)
                 if OPTION_KEY in f.metadata]
        assert len(flags) == len(set(flags)), flags


@pytest.mark.parametrize(("arguments", "message"), [
    (["--exclude-carrier", "two"], "cannot read --exclude-carrier 'two'"),
    (["--window", "0.8"], "cannot read --window '0.8': give two numbers LO,HI"),
    (["--core", "5-3"], "run backwards"),
    (["--measures", "eucl,volume"], "unknown measure(s) 'volume'"),
    (["--seed", "-1"], "--seed -1 must be a whole number from 0 to 2**63 - 1"),
])
def test_a_bad_value_is_one_line_naming_the_option(tmp_path, capsys, arguments, message):
    store = tmp_path / "store.duckdb"
    assert main(["analyze", "--model", "m", "--store", str(store), *arguments]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1 and "Traceback" not in error
    assert not store.exists()  # refused before the store was looked at


def test_params_refuse_what_the_command_line_cannot_give():
    with pytest.raises(MagdashError, match="batch_size="):
        ExtractParams(batch_size=0)
    with pytest.raises(MagdashError, match="padding side"):
        ExtractParams(padding_side="middle")
