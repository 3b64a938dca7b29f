"""MkDocs hook: a list right after a paragraph is a list, as on GitHub.

The repository's Markdown (README, CHANGELOG, docs/science.md, ...) is written for GitHub, where
a list may start on the line after a paragraph (``**Changed.**`` then ``- item``); Python-Markdown
needs a blank line first and would run the items into the paragraph. This adds a preprocessor,
after the snippets are included (the changelog page includes CHANGELOG.md), that puts a blank
line before the first item of such a list, outside code blocks.
"""

from __future__ import annotations

import re

from markdown import Extension
from markdown.preprocessors import Preprocessor

LIST_ITEM = re.compile(r"^ {0,3}(?:[-*+]|\d+\.) +\S")
FENCE = re.compile(r"^\s*(```|~~~)")
PRIORITY = 31
"""After pymdownx.snippets (32), which brings the included files' lines in."""


class BlankLineBeforeLists(Preprocessor):
    """Insert a blank line between a paragraph and a list that follows it directly."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        in_list = in_fence = False
        for line in lines:
            if FENCE.match(line):
                in_fence = not in_fence
            elif not in_fence:
                if not line.strip():
                    in_list = False
                elif LIST_ITEM.match(line):
                    if not in_list and out and out[-1].strip():
                        out.append("")
                    in_list = True
            out.append(line)
        return out


class GitHubLists(Extension):
    """Registers :class:`BlankLineBeforeLists`."""

    def extendMarkdown(self, md) -> None:  # noqa: N802 - Python-Markdown's name
        md.preprocessors.register(BlankLineBeforeLists(md), "github_lists", PRIORITY)


def on_config(config, **kwargs):
    """Add the extension to every page's Markdown."""
    config.markdown_extensions.append(GitHubLists())
    return config
