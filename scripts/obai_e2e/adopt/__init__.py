"""Adopting an agent: a target configuration and starter cases drafted from its real traces, then checked on them."""
