"""The native engine: runs a compiled graph's supersteps on a thread's record."""
