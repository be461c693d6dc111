"""harbor-desk: a port-operations assistant built with PydanticAI, traced through OpenTelemetry."""
__version__ = "1.0.0"
