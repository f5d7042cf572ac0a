"""The Wyoming protocol (Home Assistant) over TCP."""
