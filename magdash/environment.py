"""The library versions a result depends on: part of a model's identity and of every report."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version

MANIFEST_PACKAGES = ("magdash", "torch", "transformers", "duckdb", "numpy", "scipy", "streamlit", "altair",
                     "vl-convert-python", "pandas")
"""The packages a report's manifest names: what computed, stored, drew and exported its numbers."""


def transformers_version() -> str:
    """The installed transformers' version: part of a model's identity, since another release can
    compute other hidden states from the same weights."""
    return version("transformers")


def package_versions(packages: tuple[str, ...] = MANIFEST_PACKAGES) -> dict[str, str]:
    """The installed versions of ``packages`` (those not installed are left out) and Python's."""
    versions = {}
    for package in packages:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            continue
    versions["python"] = sys.version.split()[0]
    return versions
