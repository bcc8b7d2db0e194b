"""The two virtual nodes every graph has."""

START = "__start__"
END = "__end__"
