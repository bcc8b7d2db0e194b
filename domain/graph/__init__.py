"""LangGraph's graph API: `from domain.graph import StateGraph, START, END`."""

from domain.graph.compiled import CompiledStateGraph
from domain.graph.state import END, START, StateGraph

__all__ = ["END", "START", "CompiledStateGraph", "StateGraph"]
