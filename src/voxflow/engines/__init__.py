"""Synthesis engines: the Engine protocol, the Piper engine and the voice registry."""
