"""The token facts of the store: how each model's tokenizer cut the numbers of each item, and
whether it splits digits (:mod:`magdash.tokenization`).

``number_tokens`` holds one row per (model, item): how many tokens overlap the number's span
and the characters each covers, the tokens whose vectors are stored (``kept_ids``), the kept token
standing for the item and the written number's length; ``digit_splitting`` one row per model. Both are keyed by ``model_id``, which
names the token position, so the kept token is that of the model's position rule. They are
written by an extraction from the model's tokenizer (:func:`magdash.extraction.extract`), also
for vectors stored before the facts were recorded (schema 8), and read by the analysis
(:func:`magdash.runs.analysis_runs.analyze`). Functions on an open connection; the
:class:`~magdash.store.database.Store` calls them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import duckdb
import pyarrow as pa

from magdash.tokenization import DigitSplitting, NumberTokens, digit_count


def items_without_tokens(connection: duckdb.DuckDBPyConnection, model_id: str, set_name: str) -> set[str]:
    """The keys of the set's items whose token facts ``model_id`` has not recorded."""
    rows = connection.execute(
        "SELECT item_key FROM stimulus_items WHERE set_name = ? "
        "EXCEPT SELECT item_key FROM number_tokens WHERE model_id = ?",
        [set_name, model_id],
    ).fetchall()
    return {row[0] for row in rows}


def has_digit_splitting(connection: duckdb.DuckDBPyConnection, model_id: str) -> bool:
    return bool(connection.execute("SELECT count(*) FROM digit_splitting WHERE model_id = ?", [model_id]).fetchall()[0][0])


def insert_tokens(
    connection: duckdb.DuckDBPyConnection,
    model_id: str,
    item_keys: Sequence[str],
    facts: Sequence[NumberTokens],
    splitting: DigitSplitting | None,
) -> int:
    """Record ``facts[i]`` as item ``item_keys[i]``'s and ``splitting`` as the model's, on an open
    transaction; items and a model already recorded keep their rows. Returns the rows added."""
    if len(item_keys) != len(facts):
        raise ValueError(f"{len(item_keys)} item keys for {len(facts)} token facts")
    if splitting is not None and not has_digit_splitting(connection, model_id):
        connection.execute(
            "INSERT INTO digit_splitting VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [model_id, splitting.splits_digits, splitting.rule, splitting.chunk, splitting.share_whole,
             json.dumps({str(digits): list(span) for digits, span in splitting.tokens_by_digits.items()}),
             splitting.example, splitting.description],
        )
    if not facts:
        return 0
    connection.register("new_tokens", pa.table({
        "model_id": pa.array([model_id] * len(facts), pa.string()),
        "item_key": pa.array(list(item_keys), pa.string()),
        "n_tokens": pa.array([fact.n_tokens for fact in facts], pa.int32()),
        "kept_id": pa.array([fact.kept_id for fact in facts], pa.int64()),
        "kept_text": pa.array([fact.kept_text for fact in facts], pa.string()),
        "kept_ids": pa.array([list(fact.kept_ids) for fact in facts], pa.list_(pa.int64())),
        "span_texts": pa.array([list(fact.span_texts) for fact in facts], pa.list_(pa.string())),
        "n_chars": pa.array([fact.n_chars for fact in facts], pa.int32()),
    }))
    try:
        added = connection.execute(
            "INSERT INTO number_tokens SELECT DISTINCT ON (n.item_key) n.* FROM new_tokens n "
            "WHERE NOT EXISTS (SELECT 1 FROM number_tokens t WHERE t.model_id = n.model_id AND t.item_key = n.item_key)"
        ).fetchall()[0][0]
    finally:
        connection.unregister("new_tokens")
    return int(added)


def read_tokens(
    connection: duckdb.DuckDBPyConnection, model_id: str, position: str, set_name: str
) -> list[NumberTokens] | None:
    """The token facts of every item of ``set_name`` for ``model_id``, in the set's item order
    (magnitude, then carrier); None unless every item has them."""
    total = connection.execute("SELECT count(*) FROM stimulus_items WHERE set_name = ?", [set_name]).fetchall()[0][0]
    rows = connection.execute(
        "SELECT i.magnitude, i.carrier_index, t.n_tokens, t.kept_id, t.kept_text, t.kept_ids, t.span_texts, t.n_chars "
        "FROM stimulus_items i JOIN number_tokens t ON t.item_key = i.item_key AND t.model_id = ? "
        "WHERE i.set_name = ? ORDER BY i.magnitude, i.carrier_index",
        [model_id, set_name],
    ).fetchall()
    if not total or len(rows) != total:
        return None
    return [
        NumberTokens(
            magnitude=int(magnitude), carrier_index=int(carrier), position=position, n_tokens=int(n_tokens),
            kept_ids=tuple(int(i) for i in kept_ids),
            kept_id=int(kept_id), kept_text=kept_text, span_texts=tuple(span_texts), n_chars=int(n_chars),
            n_digits=digit_count(magnitude),
        )
        for magnitude, carrier, n_tokens, kept_id, kept_text, kept_ids, span_texts, n_chars in rows
    ]


def read_digit_splitting(connection: duckdb.DuckDBPyConnection, model_id: str) -> DigitSplitting | None:
    rows = connection.execute(
        "SELECT splits_digits, rule, chunk, share_whole, tokens_by_digits, example, description "
        "FROM digit_splitting WHERE model_id = ? LIMIT 1", [model_id]
    ).fetchall()
    if not rows:
        return None
    row = rows[0]
    splits, rule, chunk, share_whole, by_digits, example, description = row
    return DigitSplitting(
        splits_digits=splits, rule=rule, chunk=int(chunk), share_whole=float(share_whole),
        tokens_by_digits={int(digits): tuple(span) for digits, span in json.loads(by_digits).items()},
        example=example, description=description,
    )
