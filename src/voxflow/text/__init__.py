"""Text processing: sentence boundaries and the streaming TextBuffer."""
