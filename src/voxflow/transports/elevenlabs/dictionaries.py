"""ElevenLabs' pronunciation dictionary endpoints, and its ``pronunciation_dictionary_locators``.

* ``POST /v1/pronunciation-dictionaries/add-from-file``: multipart ``name``, ``file`` (a PLS
  lexicon, ``voxflow.text.pls``), ``description``, ``workspace_access`` (accepted, ignored).
* ``POST /v1/pronunciation-dictionaries/add-from-rules``: JSON ``name``, ``rules``
  (``{"type": "alias", "string_to_replace", "alias"}`` or ``{"type": "phoneme",
  "string_to_replace", "phoneme", "alphabet": "ipa"|"cmu-arpabet"}``), ``description``.
* ``GET /v1/pronunciation-dictionaries`` (``cursor``, ``page_size``), ``GET .../{id}`` (with the
  latest version's rules), ``GET .../{id}/{version_id}/download`` (the version as PLS).
* ``POST .../{id}/add-rules`` (a rule for a word already there, case ignored, replaces it) and
  ``.../remove-rules`` (``rule_strings``): each makes a new version.

A rule's ``case_sensitive`` and ``word_boundaries`` are accepted and ignored: voxflow's lexicon
matches whole words without regard to case. The store is the ``Gateway``'s; the owner is the
request's API key (``transports.owner``). Disk work runs off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from fastapi.responses import JSONResponse, Response

from voxflow.connection.gateway import Gateway
from voxflow.session.dictionaries import DictionaryInfo, DictionaryStore, require_store
from voxflow.session.errors import SessionError
from voxflow.text.pls import (
    PronunciationRule,
    TooManyRules,
    alphabet_name,
    parse_pls,
    to_pls,
)
from voxflow.transports.elevenlabs.errors import http_error
from voxflow.transports.form_data import parse_form_data
from voxflow.transports.json_body import decode_object

__all__ = [
    "add_from_file",
    "add_from_rules",
    "add_rules",
    "dictionary_json",
    "download",
    "get_dictionary",
    "list_dictionaries",
    "parse_rules",
    "remove_rules",
]

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 30


def _error(error: SessionError) -> JSONResponse:
    answer = http_error(error.code, error.message)
    return JSONResponse(answer.body, status_code=answer.status)


def _store(gateway: Gateway) -> DictionaryStore:
    return require_store(gateway.dictionaries)


# -- JSON in --------------------------------------------------------------------------------------


def _string(raw: dict[str, Any], name: str, where: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str):
        raise SessionError("invalid_dictionary", f"{where}: {name} must be a string")
    return value


def parse_rules(raw: object, max_rules: int) -> tuple[PronunciationRule, ...]:
    """ElevenLabs' rules as ``PronunciationRule``s, in order; ``invalid_dictionary`` for a rule
    that cannot be read or spoken, ``dictionary_limit`` past ``max_rules``."""
    if not isinstance(raw, list):
        raise SessionError("invalid_dictionary", "rules must be a list")
    if len(raw) > max_rules:
        raise SessionError(
            "dictionary_limit", f"a pronunciation dictionary holds at most {max_rules} rules"
        )
    rules = []
    for number, item in enumerate(raw):
        where = f"rules[{number}]"
        if not isinstance(item, dict):
            raise SessionError("invalid_dictionary", f"{where} must be an object")
        kind = item.get("type")
        grapheme = _string(item, "string_to_replace", where)
        try:
            if kind == "alias":
                rule = PronunciationRule(grapheme, alias=_string(item, "alias", where))
            elif kind == "phoneme":
                alphabet = alphabet_name(_string(item, "alphabet", where))
                rule = PronunciationRule(
                    grapheme, phoneme=_string(item, "phoneme", where), alphabet=alphabet
                )
            else:
                raise ValueError("type must be 'alias' or 'phoneme'")
        except ValueError as error:
            raise SessionError("invalid_dictionary", f"{where}: {error}") from None
        rules.append(rule)
    return tuple(rules)


# -- JSON out -------------------------------------------------------------------------------------


def _rule_json(rule: PronunciationRule) -> dict[str, Any]:
    common = {"string_to_replace": rule.grapheme, "case_sensitive": False, "word_boundaries": True}
    if rule.phoneme is None:
        return {"type": "alias", **common, "alias": rule.alias}
    return {"type": "phoneme", **common, "phoneme": rule.phoneme, "alphabet": rule.alphabet}


def dictionary_json(
    info: DictionaryInfo, rules: Sequence[PronunciationRule] | None = None
) -> dict[str, Any]:
    """A dictionary's metadata in ElevenLabs' shape, with its latest rules when given."""
    body: dict[str, Any] = {
        "id": info.dictionary_id,
        "latest_version_id": info.latest.version_id,
        "latest_version_rules_num": info.latest.rules,
        "name": info.name,
        "permission_on_resource": "admin",
        "created_by": info.owner or "voxflow",
        "creation_time_unix": int(info.created_unix),
        "archived_time_unix": None,
        "description": info.description,
    }
    if rules is not None:
        body["rules"] = [_rule_json(rule) for rule in rules]
    return body


def _added_json(info: DictionaryInfo) -> dict[str, Any]:
    return {
        "id": info.dictionary_id,
        "name": info.name,
        "created_by": info.owner or "voxflow",
        "creation_time_unix": int(info.created_unix),
        "version_id": info.latest.version_id,
        "version_rules_num": info.latest.rules,
        "description": info.description,
        "permission_on_resource": "admin",
    }


def _version_json(info: DictionaryInfo) -> dict[str, Any]:
    return {
        "id": info.dictionary_id,
        "version_id": info.latest.version_id,
        "version_rules_num": info.latest.rules,
    }


# -- endpoints ------------------------------------------------------------------------------------


def _text_field(fields: dict[str, Any], name: str) -> str | None:
    field = fields.get(name)
    if field is None:
        return None
    try:
        text: str = field.value.decode("utf-8")
    except UnicodeDecodeError:
        raise SessionError("invalid_request", f"{name} is not UTF-8") from None
    return text


async def add_from_file(
    gateway: Gateway, owner: str, content_type: str | None, body: bytes
) -> Response:
    try:
        store = _store(gateway)
        fields = parse_form_data(content_type, body)
        name = _text_field(fields, "name")
        if name is None:
            raise SessionError("invalid_request", "name is required")
        description = _text_field(fields, "description")
        upload = fields.get("file")
        try:
            rules = () if upload is None else parse_pls(upload.value, store.limits.max_rules)
        except TooManyRules as error:
            raise SessionError("dictionary_limit", f"file: {error}") from None
        except ValueError as error:
            raise SessionError("invalid_dictionary", f"file: {error}") from None
        info = await asyncio.to_thread(store.create, owner, name, description, rules)
    except SessionError as error:
        return _error(error)
    return JSONResponse(_added_json(info))


async def add_from_rules(gateway: Gateway, owner: str, body: bytes) -> Response:
    try:
        store = _store(gateway)
        message = decode_object(body, "request body")
        name = message.get("name")
        description = message.get("description")
        if not isinstance(name, str):
            raise SessionError("invalid_request", "name must be a string")
        if description is not None and not isinstance(description, str):
            raise SessionError("invalid_request", "description must be a string")
        rules = parse_rules(message.get("rules"), store.limits.max_rules)
        info = await asyncio.to_thread(store.create, owner, name, description, rules)
    except SessionError as error:
        return _error(error)
    return JSONResponse(_added_json(info))


async def list_dictionaries(
    gateway: Gateway, owner: str, cursor: str | None, page_size: int | None
) -> Response:
    try:
        store = _store(gateway)
        size = DEFAULT_PAGE_SIZE if page_size is None else page_size
        if not 1 <= size <= MAX_PAGE_SIZE:
            raise SessionError(
                "invalid_page_size", f"page_size must be between 1 and {MAX_PAGE_SIZE}"
            )
        start = int(cursor) if cursor is not None and cursor.isdigit() else 0
        if cursor is not None and not cursor.isdigit():
            raise SessionError("invalid_page_token", "cursor is not valid")
        found = await asyncio.to_thread(store.list, owner)
    except SessionError as error:
        return _error(error)
    page = found[start : start + size]
    more = start + size < len(found)
    return JSONResponse(
        {
            "pronunciation_dictionaries": [dictionary_json(info) for info in page],
            "next_cursor": str(start + size) if more else None,
            "has_more": more,
        }
    )


async def get_dictionary(gateway: Gateway, owner: str, dictionary_id: str) -> Response:
    try:
        store = _store(gateway)
        info = await asyncio.to_thread(store.get, owner, dictionary_id)
        rules = await asyncio.to_thread(store.rules, owner, dictionary_id, info.latest.version_id)
    except SessionError as error:
        return _error(error)
    return JSONResponse(dictionary_json(info, rules))


async def download(gateway: Gateway, owner: str, dictionary_id: str, version_id: str) -> Response:
    try:
        store = _store(gateway)
        rules = await asyncio.to_thread(store.rules, owner, dictionary_id, version_id)
    except SessionError as error:
        return _error(error)
    return Response(
        to_pls(rules),
        media_type="application/pls+xml",
        headers={"content-disposition": f'attachment; filename="{dictionary_id}.pls"'},
    )


async def add_rules(gateway: Gateway, owner: str, dictionary_id: str, body: bytes) -> Response:
    try:
        store = _store(gateway)
        added = parse_rules(
            decode_object(body, "request body").get("rules"), store.limits.max_rules
        )
        current = await asyncio.to_thread(store.rules, owner, dictionary_id, None)
        # A rule for a word the dictionary has replaces it, as ElevenLabs does; case is
        # ignored, as the lexicon ignores it when it matches.
        replaced = {rule.grapheme.casefold() for rule in added}
        kept = [rule for rule in current if rule.grapheme.casefold() not in replaced]
        info = await asyncio.to_thread(store.add_version, owner, dictionary_id, (*kept, *added))
    except SessionError as error:
        return _error(error)
    return JSONResponse(_version_json(info))


async def remove_rules(gateway: Gateway, owner: str, dictionary_id: str, body: bytes) -> Response:
    try:
        store = _store(gateway)
        strings = decode_object(body, "request body").get("rule_strings")
        if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
            raise SessionError("invalid_request", "rule_strings must be a list of strings")
        current = await asyncio.to_thread(store.rules, owner, dictionary_id, None)
        removed = set(strings)
        kept = tuple(rule for rule in current if rule.grapheme not in removed)
        info = await asyncio.to_thread(store.add_version, owner, dictionary_id, kept)
    except SessionError as error:
        return _error(error)
    return JSONResponse(_version_json(info))
