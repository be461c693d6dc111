"""ledger-agent: a small finance assistant that answers from a bundled book of figures."""

__version__ = "0.3.1"
