"""voxflow: real-time streaming text-to-speech for voice agents."""

__version__ = "0.1.0"
