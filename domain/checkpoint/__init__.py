"""Checkpointers, under LangGraph's module names."""
