"""The package's version, for what reports it (the CLI, the app's OpenAPI, Wyoming's info,
Deepgram's metadata) without importing the public API's modules."""

__version__ = "0.1.0"
