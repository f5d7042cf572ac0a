"""The native protocol, ``WS /v1/stream``."""
