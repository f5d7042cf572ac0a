"""What the server under test says about its voices, over HTTP (``GET /v1/voices``).

The benches cut a reply the way the server will (its first segment, its first sentence) to
tell when the server could have started: with the rules of the text's language, which is the
voice's (``voxflow.text_rules_of`` of the locale the listing gives).
"""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import urlsplit, urlunsplit

from voxflow import TextLanguage, text_rules_of

__all__ = ["http_base", "voice_language"]


def http_base(url: str) -> str:
    """``http://host:port`` of a server's ws or http URL."""
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, "", "", ""))


def voice_language(url: str, voice: str | None) -> TextLanguage:
    """The text language of ``voice`` (None: the server's default voice) as the server at
    ``url`` lists it; ``ValueError`` when it has no such voice. A voice of a language voxflow
    has no text rules for is read as English, as the server reads it, and so is a name the
    listing lacks."""
    with urllib.request.urlopen(f"{http_base(url)}/v1/voices", timeout=30) as response:
        listing = json.loads(response.read())
    voices = {entry["name"]: entry for entry in listing["voices"]}
    if voice is None:
        chosen = [entry for entry in voices.values() if entry.get("default")]
    else:
        # A blend is not listed: it speaks its first pack's language.
        first_pack = voice.split("+")[0].split("*")[0]
        chosen = [voices[name] for name in (voice, first_pack) if name in voices][:1]
    if not chosen:
        # An alias (``--voice-alias``) is not listed either; the server says what it is.
        return TextLanguage.ENGLISH
    return text_rules_of(str(chosen[0]["language"]))
