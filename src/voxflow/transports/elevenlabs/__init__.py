"""ElevenLabs-compatible text-to-speech: WebSocket and HTTP."""
