"""Benchmarks: engine-level figures (and, later, a load generator against a running server)."""
