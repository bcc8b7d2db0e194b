"""Long-term memory (LangGraph's `BaseStore`): items under keys in namespaces, on record."""
