"""Audio output: sample conversion and containers."""
