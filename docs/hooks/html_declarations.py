"""MkDocs hook: a page whose code holds ``<![`` (a regex lookbehind such as ``(?<![.\\d])`` in
docs/science.md) builds on Python before 3.13.

MkDocs scans each page's raw HTML for anchor ids with the standard library's HTML parser, which
before Python 3.13 raises on ``<![`` that does not open a CDATA section (CPython gh-77057).
Python-Markdown works around the same bug in its own parser; this gives MkDocs's scanner the
same treatment: such a ``<![`` is read as text.
"""

from __future__ import annotations


def on_startup(**kwargs) -> None:
    """Teach MkDocs's raw-HTML scanner to read a stray ``<![`` as text."""
    from mkdocs.structure import pages

    handler = pages._HTMLHandler
    if getattr(handler, "_reads_stray_marked_sections", False):
        return
    original = handler.parse_html_declaration

    def parse_html_declaration(self, i: int) -> int:
        if self.rawdata[i:i + 3] == "<![" and self.rawdata[i:i + 9] != "<![CDATA[":
            self.handle_data("<![")
            return i + 3
        return original(self, i)

    handler.parse_html_declaration = parse_html_declaration
    handler._reads_stray_marked_sections = True
