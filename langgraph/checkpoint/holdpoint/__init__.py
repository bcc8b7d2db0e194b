"""`from langgraph.checkpoint.holdpoint import HoldpointSaver`: Holdpoint's checkpointer in
LangGraph's `langgraph.checkpoint` namespace, where LangGraph's savers live
(langgraph-checkpoint-sqlite's `langgraph.checkpoint.sqlite`, and so on). It is
implemented in Holdpoint's `saver` package; this module only names it there."""

from saver.holdpoint_saver import AppendOnlyError, HoldpointSaver

__all__ = ["AppendOnlyError", "HoldpointSaver"]
