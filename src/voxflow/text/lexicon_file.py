"""A lexicon file (``--lexicon``, ``voxflow normalize --lexicon``): the tab-separated format of
``voxflow.text.lexicon``, or a W3C PLS document (``voxflow.text.pls``), the format a
pronunciation dictionary is uploaded and downloaded in. A file whose first non-blank character
is ``<`` is read as PLS, any other as tab-separated lines (whose words never start with ``<``
in practice: a word is what the normalizer meets in text)."""

from __future__ import annotations

from pathlib import Path

from voxflow.text.lexicon import Lexicon
from voxflow.text.pls import lexicon_of, parse_pls

__all__ = ["read_lexicon_file"]


def read_lexicon_file(path: Path) -> Lexicon:
    """The lexicon in the file at ``path``; ``ValueError`` naming the file if it is malformed."""
    text = path.read_text(encoding="utf-8")
    if not text.lstrip().startswith("<"):
        return Lexicon.from_text(text, source=str(path))
    try:
        return lexicon_of(parse_pls(text))
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
