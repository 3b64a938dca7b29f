"""The codec derived from a dataclass's fields (:mod:`magdash.result_codec`): each kind of field is written
as plain data and read back as it was; the special cases of the field metadata do what they say."""

from __future__ import annotations

import enum
import json
import math
import zlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

from magdash.result_codec import PayloadCodec, from_document, not_stored, stored_as, to_document


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner:
    window: tuple[float, float]
    layers: list[int]
    late: float = field(default=0.0, metadata=stored_as(missing=lambda document: document["window"][1] * 2))


@dataclass
class Sample(PayloadCodec):
    name: str
    values: dict[str, np.ndarray]
    table: pd.DataFrame
    inner: dict[str, Inner]
    counts: dict[int, list[int]]
    colour: Colour
    grid: tuple[int, ...]
    optional: Inner | None = None
    rows: pd.DataFrame = field(default_factory=pd.DataFrame, metadata=stored_as(key="row_records", frame="records"))
    untyped: pd.DataFrame = field(default_factory=pd.DataFrame, metadata=stored_as(frame="untyped"))
    identity: dict = field(default_factory=dict, metadata=stored_as(inline=("model", "seed")))
    from_cache: bool = field(default=False, compare=False, metadata=not_stored(True))

    _payload_order = ("identity", "colour")


def sample() -> Sample:
    return Sample(
        name="a",
        values={"eucl": np.array([[1.0, math.nan], [0.5, 2.0]])},
        table=pd.DataFrame({"layer": [0, 1], "alpha": [0.1, math.nan], "label": ["x", "y"]}),
        inner={"eucl": Inner((0.8, 1.2), [1, 2], 3.0)},
        counts={3: [1, 2], 10: []},
        colour=Colour.BLUE,
        grid=(3, 5),
        rows=pd.DataFrame({"power": [0.5, 0.9]}),
        untyped=pd.DataFrame({"p": [0.2, None]}, dtype=object),
        identity={"model": "m", "seed": 4},
    )


def test_a_payload_holds_plain_json_in_the_declared_order():
    document = json.loads(zlib.decompress(sample().to_payload()))
    assert list(document)[:4] == ["model", "seed", "colour", "name"]
    assert "from_cache" not in document and "identity" not in document and "rows" not in document
    assert document["colour"] == "blue" and document["grid"] == [3, 5]
    assert document["table"]["dtypes"][:2] == ["int64", "float64"]
    assert document["row_records"] == [{"power": 0.5}, {"power": 0.9}]
    assert "dtypes" not in document["untyped"]
    assert document["counts"] == {"3": [1, 2], "10": []}


def test_every_kind_of_field_reads_back_as_it_was():
    original = sample()
    again = Sample.from_payload(original.to_payload())
    assert again.from_cache and not original.from_cache
    assert again.name == "a" and again.colour is Colour.BLUE and again.grid == (3, 5)
    assert again.values["eucl"].dtype == np.float64
    np.testing.assert_array_equal(again.values["eucl"], original.values["eucl"])
    pd.testing.assert_frame_equal(again.table, original.table)
    pd.testing.assert_frame_equal(again.rows, original.rows)
    assert again.inner == original.inner and isinstance(again.inner["eucl"].window, tuple)
    assert again.counts == {3: [1, 2], 10: []}
    assert again.optional is None and again.identity == {"model": "m", "seed": 4}
    assert math.isnan(again.untyped["p"].iloc[1])


def test_a_document_without_a_field_reads_its_legacy_value_or_its_default():
    document = to_document(sample())
    del document["inner"]["eucl"]["late"], document["optional"], document["row_records"]
    again = from_document(Sample, document)
    assert again.inner["eucl"].late == pytest.approx(2.4)  # from the document, as the metadata says
    assert again.optional is None and again.rows.empty
    del document["name"]
    with pytest.raises(KeyError, match="name"):
        from_document(Sample, document)


def test_a_nested_optional_dataclass_reads_back():
    original = sample()
    original.optional = Inner((1.0, 2.0), [0])
    assert Sample.from_payload(original.to_payload()).optional == Inner((1.0, 2.0), [0], 0.0)


def test_an_order_naming_no_field_is_refused():
    @dataclass
    class Wrong(PayloadCodec):
        value: int
        _payload_order = ("valeu",)

    with pytest.raises(TypeError, match="valeu"):
        Wrong(1).to_payload()


def test_an_unknown_frame_form_is_refused():
    with pytest.raises(ValueError, match="frame must be one of"):
        stored_as(frame="wide")
