"""The dashboard's access rules on their own: allowed folders from the environment, paths
checked after resolving ``..`` and symbolic links, read-only mode."""

from __future__ import annotations

import os

import pytest

from magdash.dashboard.access import check_store_path, read_only_reason, served_text, store_access
from magdash.errors import StoreError


def test_the_allowed_folders_are_the_stores_folder_and_those_the_environment_adds(tmp_path):
    lab, extra = tmp_path / "lab", tmp_path / "extra"
    access = store_access({"MAGDASH_STORE": str(lab / "runs.duckdb"),
                           "MAGDASH_STORE_FOLDERS": f"{extra}{os.pathsep}{os.pathsep}{lab}"})
    assert access.folders == (lab, extra)  # resolved, blank entries and repeats dropped
    assert not access.read_only
    default = store_access({})
    assert default.folders == (os.path.realpath("cache"),) or str(default.folders[0]).endswith("/cache")


@pytest.mark.parametrize(("value", "read_only"), [("1", True), ("true", True), (" Yes ", True), ("on", True),
                                                   ("0", False), ("", False), ("no", False)])
def test_read_only_mode_is_switched_on_by_the_environment(value, read_only):
    assert store_access({"MAGDASH_READ_ONLY": value}).read_only is read_only


def test_paths_are_checked_after_resolving_dots_and_links(tmp_path):
    lab, outside = tmp_path / "lab", tmp_path / "outside"
    lab.mkdir()
    outside.mkdir()
    access = store_access({"MAGDASH_STORE": str(lab / "runs.duckdb")})
    assert check_store_path(str(lab / "runs.duckdb"), access) == lab / "runs.duckdb"
    assert check_store_path(str(lab / "sub" / ".." / "new.duckdb"), access) == lab / "new.duckdb"
    for escaping in (f"{lab}/../outside/x.duckdb", str(outside / "x.duckdb"), "/etc/passwd", "/dev/zero"):
        with pytest.raises(StoreError, match="opens stores only inside .*MAGDASH_STORE_FOLDERS"):
            check_store_path(escaping, access)
    (lab / "link.duckdb").symlink_to(outside / "x.duckdb")
    (lab / "linked-folder").symlink_to(outside, target_is_directory=True)
    for linked in (lab / "link.duckdb", lab / "linked-folder" / "y.duckdb"):
        with pytest.raises(StoreError, match="resolves to .*outside"):
            check_store_path(str(linked), access)
    with pytest.raises(StoreError, match="cannot use"):
        check_store_path("bad\0name.duckdb", access)


def test_the_read_only_reason_names_what_is_not_done_and_how_to_write():
    reason = read_only_reason("extract models")
    assert "does not extract models" in reason and "MAGDASH_READ_ONLY" in reason and "CLI" in reason


def test_a_read_only_dashboard_refuses_a_path_without_telling_its_folders_or_link_targets(tmp_path):
    lab, outside = tmp_path / "lab", tmp_path / "outside"
    lab.mkdir()
    outside.mkdir()
    (lab / "link.duckdb").symlink_to(outside / "x.duckdb")
    access = store_access({"MAGDASH_STORE": str(lab / "runs.duckdb"), "MAGDASH_READ_ONLY": "1"})
    for escaping in (str(lab / "link.duckdb"), "../../etc/passwd"):
        with pytest.raises(StoreError, match="opens stores only inside its store's folder") as refused:
            check_store_path(escaping, access)
        message = served_text(str(refused.value), access)
        assert str(outside) not in message and str(lab) not in message and os.getcwd() not in message, message
        assert "MAGDASH_STORE_FOLDERS" not in message  # no way round it is offered to a viewer
    with pytest.raises(StoreError) as refused:
        check_store_path(str(lab / "link.duckdb"), access)
    assert "'link.duckdb' is outside" in served_text(str(refused.value), access)


def test_served_messages_name_paths_relative_to_the_allowed_folder_and_no_process_ids(tmp_path):
    lab = tmp_path / "lab"
    served = store_access({"MAGDASH_STORE": str(lab / "runs.duckdb"), "MAGDASH_READ_ONLY": "1"})
    cwd = str(tmp_path / "server")
    message = (f"{str(lab / 'sub' / 'x.duckdb')!r} is not a DuckDB file; {lab} is the folder; the lock is held "
               f"by process 4242 (PID 4242); see {cwd}/magdash.log; {lab}-old/y stays as it is")
    shown = served_text(message, served, cwd=cwd)
    assert shown == ("'sub/x.duckdb' is not a DuckDB file; . is the folder; the lock is held by process (id withheld) "
                     f"(PID (id withheld)); see magdash.log; {lab}-old/y stays as it is")
    assert "4242" not in shown
    local = store_access({"MAGDASH_STORE": str(lab / "runs.duckdb")})
    assert served_text(message, local, cwd=cwd) == message  # the local user owns the server: all is said
