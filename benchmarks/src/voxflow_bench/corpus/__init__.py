"""The benchmark corpus: replies in the style of voice agents, one per line of ``replies.tsv``.

Each line is ``name<TAB>category<TAB>text``; blank lines and lines starting with ``#`` are
skipped. Names are unique and short, so reports can name the worst texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["Reply", "load_corpus"]


@dataclass(frozen=True)
class Reply:
    """One agent reply of the corpus."""

    name: str
    category: str
    text: str


def load_corpus(path: Path | None = None, bundled: str = "replies.tsv") -> tuple[Reply, ...]:
    """Every reply of the bundled corpus (or of the file at ``path``, in the same format, for a
    held-out set), in file order. Raises ``ValueError`` for a malformed line."""
    if path is None:
        raw = resources.files(__package__).joinpath(bundled).read_text(encoding="utf-8")
    else:
        raw = path.read_text(encoding="utf-8")
    replies: list[Reply] = []
    seen: set[str] = set()
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not all(part.strip() for part in parts):
            raise ValueError(f"corpus line {number}: expected name<TAB>category<TAB>text")
        name, category, text = (part.strip() for part in parts)
        if name in seen:
            raise ValueError(f"corpus line {number}: duplicate name {name!r}")
        seen.add(name)
        replies.append(Reply(name, category, text))
    if not replies:
        raise ValueError("the corpus has no replies")
    return tuple(replies)
