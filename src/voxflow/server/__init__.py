"""The HTTP/WebSocket server: app factory, lifespan, health and metrics."""
