"""The package version, in a module of its own: any layer may import it without the package root
(pyproject.toml reads it from here)."""

__version__ = "0.1.0"
