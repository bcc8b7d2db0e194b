"""Assistants: a served graph with recorded configuration, in versions."""
