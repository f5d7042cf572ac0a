"""Whose request this is: the owner of the resources it may see (pronunciation dictionaries).

With API keys configured, ``server.security`` puts the key's owner name in every request's and
WebSocket's scope under ``OWNER_SCOPE_KEY``: a digest of the key (never the key itself), the same
for every request with that key and on every replica. Without keys there is one owner, ``""``.
A client cannot set it: it is scope, not a header.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OWNER_SCOPE_KEY", "scope_owner"]

OWNER_SCOPE_KEY = "voxflow.owner"


def scope_owner(scope: Any) -> str:
    """The request's owner name; ``""`` where no API key is configured."""
    owner = scope.get(OWNER_SCOPE_KEY)
    return owner if isinstance(owner, str) else ""
