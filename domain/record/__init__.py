"""The record every engine writes: the thread aggregate, its hash chain, and the store."""
