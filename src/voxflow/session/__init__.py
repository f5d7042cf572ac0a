"""Sans-I/O session core: contexts, their text buffers and the events they produce."""
