"""One module per ``obai-e2e`` subcommand; each exposes ``register(subparsers)``."""
