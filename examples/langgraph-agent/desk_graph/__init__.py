"""desk-graph: a small LangGraph finance assistant traced by Opik's own LangChain integration."""
__version__ = "1.4.0"
