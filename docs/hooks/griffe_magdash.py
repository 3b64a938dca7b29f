"""Griffe extension for the Python API reference (mkdocstrings reads magdash through griffe).

- A params dataclass field is documented once, by its command-line option
  (``field(..., metadata=option("help", ...))``, :func:`magdash.params.option`): the reference
  shows that help, the option's flag and the field's default, as ``--help`` does.
- Docstrings use Sphinx roles (``:func:`~magdash.x.y```) that Markdown does not know; they are
  shown as code spans.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`(~?)([^`]+)`")


def _code_span(match: re.Match) -> str:
    short, path = match.groups()
    return f"`{path.rsplit('.', 1)[-1] if short else path}`"


class MagdashDocstrings(griffe.Extension):
    """Field docs from the params' options; Sphinx roles as code spans."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite the Sphinx roles of every docstring as it is read."""
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_code_span, obj.docstring.value)

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        """Document the fields of a params dataclass with their options' help."""
        if not any("option(" in str(getattr(member, "value", "")) for member in cls.members.values()):
            return
        from magdash.cli.options import flag_of
        from magdash.params import OPTION_KEY

        runtime = getattr(importlib.import_module(cls.module.path), cls.name)
        for field in dataclasses.fields(runtime):
            choice = field.metadata.get(OPTION_KEY)
            member = cls.members.get(field.name)
            if choice is None or member is None:
                continue
            default = choice.default_text or repr(field.default)
            text = f"{choice.help}.\n\nCommand line: `{flag_of(field, choice)}`; default: {default}."
            if choice.choices:
                text += f" Choices: {', '.join(f'`{c}`' for c in choice.choices)}."
            member.docstring = griffe.Docstring(ROLE.sub(_code_span, text), parent=member)
            member.value = repr(field.default)
