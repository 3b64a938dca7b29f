"""Prompt texts for all-token diagnostics: a document cut to a model's context, and its hash."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence

from magdash.errors import AnalysisError

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
TokenCounter = Callable[[Sequence[str]], Sequence[int]]


def chunk_text(
    text: str,
    max_tokens: int,
    *,
    count_tokens: TokenCounter | None = None,
    chars_per_token: float = 3.0,
    fill: float = 0.9,
) -> list[str]:
    """Cut a document into pieces that fit a model's context, at sentence boundaries.

    The text is split into sentences (after ., ! or ? followed by white space; line breaks are
    white space), sentences longer than the budget into words, and words longer than it into
    character slices; consecutive pieces are then packed greedily up to ``fill x max_tokens``
    tokens. Tokens are counted with ``count_tokens`` (a batch callback, e.g. the model's
    tokenizer without special tokens) or, tokenizer-free, estimated as characters /
    ``chars_per_token`` (3 is conservative for English BPE/WordPiece, about 4 chars a token).
    Counting pieces separately and summing is approximate at the joins, hence the 10% margin;
    a chunk that still overflows is truncated by the extraction, losing only its tail.
    """
    if max_tokens < 1:
        raise AnalysisError(f"a context of {max_tokens} tokens cannot hold any text")
    budget = max(1, int(max_tokens * fill))

    def measure(pieces: Sequence[str]) -> list[int]:
        if count_tokens is not None:
            return [int(n) for n in count_tokens(list(pieces))] if pieces else []
        # +1: the space that joins the piece to the previous one.
        return [math.ceil((len(p) + 1) / chars_per_token) for p in pieces]

    slice_chars = budget if count_tokens is not None else max(1, int(budget * chars_per_token))
    pieces: list[str] = []
    sentences = [s for s in _SENTENCE_END.split(" ".join(text.split())) if s]
    for sentence, size in zip(sentences, measure(sentences), strict=True):
        if size <= budget:
            pieces.append(sentence)
            continue
        words = sentence.split(" ")
        for word, word_size in zip(words, measure(words), strict=True):
            if word_size <= budget:
                pieces.append(word)
            else:
                pieces.extend(word[i:i + slice_chars] for i in range(0, len(word), slice_chars))
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for piece, size in zip(pieces, measure(pieces), strict=True):
        if current and used + size > budget:
            chunks.append(" ".join(current))
            current, used = [], 0
        current.append(piece)
        used += size
    if current:
        chunks.append(" ".join(current))
    return chunks


def texts_hash(texts: Sequence[str]) -> str:
    """Identity of a list of texts (part of the cache key of their all-token samples)."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()
