"""Real LangGraph graphs on Holdpoint's record: `HoldpointSaver`, LangGraph's checkpointer
on the event store (holdpoint_saver.py), and the JSON form of their values (values.py).
Users import it from LangGraph's namespace: `from langgraph.checkpoint.holdpoint import
HoldpointSaver`."""
