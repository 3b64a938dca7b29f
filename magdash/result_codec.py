"""The result cache's codec, derived from a result dataclass's fields: one place that writes a result
as plain data (:func:`to_document`, :meth:`PayloadCodec.to_payload`) and reads it back
(:func:`from_document`, :meth:`PayloadCodec.from_payload`), so a result type declares its fields and
nothing else.

A field is written under its name, in the dataclass's order (or the class's ``_payload_order``, the
order stores already hold), by its value's kind: nested dataclasses field by field, DataFrames as
:func:`magdash.jsonio.frame_to_plain` writes them, numpy arrays, tuples, dicts and numbers as
:func:`magdash.jsonio.to_jsonable` does. It is read back by its annotation: ``np.ndarray`` as float64,
``tuple[...]`` and ``list[...]`` element by element, ``dict[int, ...]`` with int keys, ``X | None``,
enums by value, nested dataclasses by their own fields. The few special cases are field metadata
(:func:`stored_as`, :func:`not_stored`): another key, another DataFrame form, the value an older
payload without the key reads as. Payloads stay plain compressed JSON, never pickle.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, ClassVar, Self, TypeVar

import numpy as np
import pandas as pd

from magdash.jsonio import frame_from_plain, frame_to_plain, pack, unpack

_METADATA = "magdash.result_codec"
_Result = TypeVar("_Result")
_DEFAULT: Any = object()  # a field not stored keeps its default when read back
FRAME_FORMS = ("plain", "untyped", "records")
"""How a DataFrame field is written: ``plain`` (columns, dtypes, data: :func:`~magdash.jsonio.frame_to_plain`),
``untyped`` (columns and data, the older controls and E5 payloads' form) or ``records`` (a list of rows)."""


@dataclasses.dataclass(frozen=True)
class FieldCodec:
    """How one field is written and read back, where the field's kind does not say it all.

    Attributes:
        key: the document's name for the field ("" for its own).
        frame: a DataFrame field's form (:data:`FRAME_FORMS`).
        encode: writes the value as plain data, instead of its kind's rule.
        decode: reads the plain data back, instead of its annotation's rule.
        missing: the value of a document without the key (a payload cached before the field existed), from
            that document; None: the field's default (a KeyError for a field without one).
        inline: a field written into the document itself, beside the other fields (a dict, or a DataFrame
            in the ``untyped`` form): its keys, to read it back.
        stored: False for a field the payload does not hold (whether a result came from the cache).
        read_back: a field that is not stored takes this value in a result read back.
    """

    key: str = ""
    frame: str = "plain"
    encode: Callable[[Any], Any] | None = None
    decode: Callable[[Any], Any] | None = None
    missing: Callable[[Mapping[str, Any]], Any] | None = None
    inline: tuple[str, ...] = ()
    stored: bool = True
    read_back: Any = _DEFAULT

    def __post_init__(self) -> None:
        if self.frame not in FRAME_FORMS:
            raise ValueError(f"frame must be one of {', '.join(FRAME_FORMS)}, got {self.frame!r}")


_PLAIN = FieldCodec()


def stored_as(
    *,
    key: str = "",
    frame: str = "plain",
    encode: Callable[[Any], Any] | None = None,
    decode: Callable[[Any], Any] | None = None,
    missing: Callable[[Mapping[str, Any]], Any] | None = None,
    inline: tuple[str, ...] = (),
) -> dict[str, FieldCodec]:
    """A field's metadata for the codec: ``dataclasses.field(metadata=stored_as(...))``
    (:class:`FieldCodec` says what each choice does).

    Args:
        key: the document's name for the field.
        frame: a DataFrame field's form (:data:`FRAME_FORMS`).
        encode: writes the value as plain data.
        decode: reads the plain data back.
        missing: the value of a document without the key, from that document.
        inline: the keys of a field written into the document itself.
    """
    return {_METADATA: FieldCodec(key, frame, encode, decode, missing, inline)}


def not_stored(read_back: Any) -> dict[str, FieldCodec]:
    """A field's metadata for the codec: the payload does not hold it, and a result read back has
    ``read_back`` there (``from_cache``: True).

    Args:
        read_back: the field's value in a result read from a payload.
    """
    return {_METADATA: FieldCodec(stored=False, read_back=read_back)}


def _codec(item: dataclasses.Field) -> FieldCodec:
    return item.metadata.get(_METADATA, _PLAIN)


@functools.cache
def _layout(cls: type) -> tuple[tuple[dataclasses.Field, FieldCodec], ...]:
    """The class's fields with their codecs, in the document's order (``_payload_order`` first, when declared)."""
    fields = {item.name: item for item in dataclasses.fields(cls)}
    order = getattr(cls, "_payload_order", ())
    unknown = [name for name in order if name not in fields]
    if unknown:
        raise TypeError(f"{cls.__name__}._payload_order names {unknown}, which are not its fields")
    names = [*order, *(name for name in fields if name not in order)]
    return tuple((fields[name], _codec(fields[name])) for name in names)


@functools.cache
def _annotations(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def to_document(value: Any) -> dict[str, Any]:
    """A result dataclass as the plain document its payload holds (numpy values are left to
    :func:`magdash.jsonio.pack`, which writes them as numbers).

    Args:
        value: a dataclass instance.
    """
    document: dict[str, Any] = {}
    for item, codec in _layout(type(value)):
        if not codec.stored:
            continue
        found = getattr(value, item.name)
        encoded = codec.encode(found) if codec.encode else _encoded(found, codec)
        if codec.inline:
            document.update(encoded)
        else:
            document[codec.key or item.name] = encoded
    return document


def _encoded(value: Any, codec: FieldCodec = _PLAIN) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_document(value)
    if isinstance(value, pd.DataFrame):
        if codec.frame == "records":
            return value.to_dict(orient="records")
        return frame_to_plain(value, dtypes=codec.frame == "plain")
    if isinstance(value, dict):
        return {key: _encoded(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encoded(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    return value


def from_document(cls: type[_Result], document: Mapping[str, Any]) -> _Result:
    """The dataclass a document of :func:`to_document` holds.

    Args:
        cls: the dataclass.
        document: the plain document.
    """
    hints = _annotations(cls)
    values: dict[str, Any] = {}
    for item, codec in _layout(cls):
        if not item.init:
            continue
        if not codec.stored:
            if codec.read_back is not _DEFAULT:
                values[item.name] = codec.read_back
            continue
        key = codec.key or item.name
        if codec.inline:
            raw: Any = {name: document[name] for name in codec.inline}
        elif key in document:
            raw = document[key]
        elif codec.missing is not None:
            values[item.name] = codec.missing(document)
            continue
        elif item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
            raise KeyError(key)
        else:
            continue
        values[item.name] = codec.decode(raw) if codec.decode else _decoded(hints[item.name], raw, codec)
    return cls(**values)


def _decoded(kind: Any, raw: Any, codec: FieldCodec = _PLAIN) -> Any:
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if raw is None and type(None) in arguments:
            return None
        others = [argument for argument in arguments if argument is not type(None)]
        return _decoded(others[0], raw, codec) if len(others) == 1 else raw
    if kind is pd.DataFrame:
        return pd.DataFrame(raw) if codec.frame == "records" else frame_from_plain(raw)
    if kind is np.ndarray:
        return np.asarray(raw, dtype=np.float64)
    if kind is float:
        return math.nan if raw is None else raw
    if isinstance(kind, type) and issubclass(kind, Enum):
        return kind(raw)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return from_document(kind, raw)
    if origin is list or kind is list:
        return [_decoded(arguments[0], item) for item in raw] if arguments else list(raw)
    if origin is tuple or kind is tuple:
        if not arguments:
            return tuple(raw)
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(_decoded(arguments[0], item) for item in raw)
        return tuple(_decoded(argument, item) for argument, item in zip(arguments, raw, strict=True))
    if origin is dict and arguments:
        return {_decoded(arguments[0], key): _decoded(arguments[1], item) for key, item in raw.items()}
    if kind is int and isinstance(raw, str):
        return int(raw)  # a dict's int key, which JSON wrote as text
    return raw


class PayloadCodec:
    """A result dataclass's cache payload, derived from its fields (module docstring): mix it into the
    dataclass, declare ``_payload_order`` where stores hold the fields in another order, and the field
    metadata of :func:`stored_as` or :func:`not_stored` for the few special cases."""

    _payload_order: ClassVar[tuple[str, ...]] = ()

    def to_payload(self) -> bytes:
        """The result as plain compressed JSON for the store's cache (never pickle)."""
        return pack(to_document(self))

    @classmethod
    def from_payload(cls, payload: bytes) -> Self:
        """The result a payload of :meth:`to_payload` holds.

        Args:
            payload: bytes written by :meth:`to_payload`.
        """
        return from_document(cls, unpack(payload))
