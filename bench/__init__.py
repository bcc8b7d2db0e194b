"""Side-by-side benchmarks of Holdpoint and LangGraph (see bench/README.md)."""
