"""Scheduled runs (LangGraph's crons): schedules as recorded facts, and their firings."""
