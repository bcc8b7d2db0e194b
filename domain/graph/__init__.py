"""LangGraph's graph API: `from domain.graph import StateGraph, START, END`."""

from domain.graph.compiled import CompiledStateGraph
from domain.graph.constants import END, START
from domain.graph.state import StateGraph

__all__ = ["END", "START", "CompiledStateGraph", "StateGraph"]
