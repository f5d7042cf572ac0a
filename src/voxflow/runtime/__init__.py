"""Runtime: the deadline scheduler and its worker threads."""
