"""The command line: one typer app; each sub-module registers its commands on it."""

from chaoseval.cli.app import app

__all__ = ["app"]
