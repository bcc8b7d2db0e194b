"""LangGraph's public constants, as `from langgraph.constants import START, END`."""

from domain.graph.constants import END, START

# Tags a chat model's config may carry (LangGraph's): plain strings here, as there.
TAG_NOSTREAM = "nostream"
TAG_HIDDEN = "langsmith:hidden"

__all__ = ["END", "START", "TAG_HIDDEN", "TAG_NOSTREAM"]
