"""The Deepgram Aura-compatible endpoints (``/v1/speak``, WebSocket and HTTP)."""
