"""OpenAI-compatible speech endpoint."""
