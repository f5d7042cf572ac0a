"""Cartesia-compatible text-to-speech: ``WS /tts/websocket`` and ``POST /tts/bytes``."""
