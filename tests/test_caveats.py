"""Caveats (magdash/caveats.py) and the page's warnings panel (magdash/dashboard/warnings_panel.py):
ranked by severity, kept only when about what is shown, the most severe in view and the rest folded."""

from __future__ import annotations

from magdash.caveats import Caveat, Severity, about, lines, ranked
from magdash.dashboard.warnings_panel import panel

NOTE_ALL = Caveat(Severity.NOTE, "a note of every measure", (), "a")
CAUTION_EUCL = Caveat(Severity.CAUTION, "V_eucl leans on a carrier", ("eucl",), "a", carrier=3)
SERIOUS_PROJ = Caveat(Severity.SERIOUS, "V_proj is a sink's", ("proj",), "b")
CAUTION_B = Caveat(Severity.CAUTION, "b's layers 3-4 hold Inf/NaN", (), "b")
NOTE_PROJ_EUCL = Caveat(Severity.NOTE, "V_eucl and V_proj differ", ("eucl", "proj"), "a")
ALL = [NOTE_ALL, CAUTION_EUCL, SERIOUS_PROJ, CAUTION_B, NOTE_PROJ_EUCL]


def test_severities_are_ordered_and_ranking_keeps_the_order_within_one():
    assert Severity.NOTE < Severity.CAUTION < Severity.SERIOUS
    assert ranked(ALL) == [SERIOUS_PROJ, CAUTION_EUCL, CAUTION_B, NOTE_ALL, NOTE_PROJ_EUCL]
    assert lines([NOTE_ALL, SERIOUS_PROJ]) == ["b: V_proj is a sink's", "a: a note of every measure"]
    assert Caveat(Severity.NOTE, "no model's").line() == "no model's"


def test_only_the_caveats_about_the_measure_and_models_shown_are_kept():
    assert about(ALL, "eucl") == [CAUTION_EUCL, CAUTION_B, NOTE_ALL, NOTE_PROJ_EUCL]  # not V_proj's serious one
    assert about(ALL, "residual") == [CAUTION_B, NOTE_ALL]  # only those of every measure
    assert about(ALL, "proj", ["a"]) == [NOTE_ALL, NOTE_PROJ_EUCL]  # model b is not shown
    assert about(ALL) == ranked(ALL)
    assert about([CAUTION_EUCL, CAUTION_EUCL], "eucl") == [CAUTION_EUCL]  # a caveat twice is said once
    assert Caveat(Severity.NOTE, "of no model").concerns("eucl", ["a"])


def test_the_panel_shows_the_most_severe_and_folds_the_rest_with_a_count():
    found = panel(ALL, "proj")
    assert found.shown == (SERIOUS_PROJ,)  # one serious: alone in view, the cautions folded under it
    assert found.folded == (CAUTION_B, NOTE_ALL, NOTE_PROJ_EUCL) and found.fold_label == "3 more notes"
    found = panel(ALL, "eucl")
    assert found.shown == (CAUTION_EUCL, CAUTION_B) and found.fold_label == "2 more notes"
    many = [Caveat(Severity.CAUTION, f"caution {i}", (), "a") for i in range(5)]
    assert len(panel(many, max_shown=2).shown) == 2 and panel(many, max_shown=2).fold_label == "3 more notes"
    notes_only = panel([NOTE_ALL], "residual")
    assert notes_only.shown == () and notes_only.fold_label == "1 note"  # a note is context: never in view
    assert not panel(ALL, "residual", ["c"]) and not panel([])
    assert panel(ALL, "eucl").blames_a_carrier and not panel(ALL, "proj").blames_a_carrier  # carrier 3's is V_eucl's
