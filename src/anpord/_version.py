"""The version of this code (not of an installed distribution, whose metadata may be stale)."""

__version__ = "0.1.0"
