"""The HTML report, one package for the CLI and the app: :mod:`~magdash.presentation.report.html`
(the self-contained document), :mod:`~magdash.presentation.report.manifest` (the run manifest)
and :mod:`~magdash.presentation.report.sections` (one section builder per page)."""

from magdash.presentation.report.html import (
    IMAGE_FORMATS,
    REPORT_FORMAT_VERSION,
    ReportSection,
    StepCallback,
    build_report_html,
    extract_manifest,
    manifest_summary,
)
from magdash.presentation.report.manifest import build_manifest

__all__ = [
    "IMAGE_FORMATS", "REPORT_FORMAT_VERSION", "ReportSection", "StepCallback", "build_manifest", "build_report_html",
    "extract_manifest", "manifest_summary",
]
