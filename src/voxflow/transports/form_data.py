"""``multipart/form-data`` request bodies (file uploads), read with the standard library.

Starlette's own form parser needs the python-multipart package; the one upload voxflow takes
(ElevenLabs' PLS file) is small and already bounded by the server's body limit
(``--max-body-bytes``), so the e-mail parser, which reads MIME multipart as it is, is enough.
"""

from __future__ import annotations

from dataclasses import dataclass
from email import message_from_bytes
from email.message import Message
from email.policy import HTTP

from voxflow.session.errors import SessionError

__all__ = ["FormField", "parse_form_data"]


@dataclass(frozen=True)
class FormField:
    name: str
    value: bytes
    filename: str | None  # set for a file


def parse_form_data(content_type: str | None, body: bytes) -> dict[str, FormField]:
    """The fields of a ``multipart/form-data`` body by name (the first of a repeated name);
    ``SessionError("invalid_request")`` for a body that is not one."""
    if content_type is None or not content_type.lower().startswith("multipart/form-data"):
        raise SessionError("invalid_request", "the request body must be multipart/form-data")
    if "\r" in content_type or "\n" in content_type:
        raise SessionError("invalid_request", "malformed Content-Type")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1")
    message = message_from_bytes(head + body, policy=HTTP)
    if not message.is_multipart() or message.defects:
        raise SessionError("invalid_request", "the multipart/form-data body is malformed")
    fields: dict[str, FormField] = {}
    for part in message.iter_parts():
        if not isinstance(part, Message):
            continue
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str) or name in fields:
            continue
        payload = part.get_payload(decode=True)
        filename = part.get_filename()
        fields[name] = FormField(name, payload if isinstance(payload, bytes) else b"", filename)
    return fields
