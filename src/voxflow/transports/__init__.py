"""Transports: thin translations between wire protocols and the session core."""
