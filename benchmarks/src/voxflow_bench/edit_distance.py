"""Levenshtein distance between two sequences: what the intelligibility bench counts as errors,
words for English (word error rate) and kana for Japanese (character error rate)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

__all__ = ["edit_distance"]


def edit_distance(reference: Sequence[Hashable], hypothesis: Sequence[Hashable]) -> int:
    """Substitutions + deletions + insertions that turn ``reference`` into ``hypothesis``."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref_item in enumerate(reference, start=1):
        current = [i]
        for j, hyp_item in enumerate(hypothesis, start=1):
            current.append(
                min(
                    previous[j] + 1,  # deletion
                    current[j - 1] + 1,  # insertion
                    previous[j - 1] + (ref_item != hyp_item),  # substitution or match
                )
            )
        previous = current
    return previous[-1]
