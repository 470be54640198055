"""The command line. ``chaoseval.cli.app`` builds the typer app (the console script's entry
point) from the command modules: ``run``, ``analysis`` (report, compare, gate), ``summary``,
``investigate`` (search, diverge, replay, sample), ``catalogue`` (scenarios and
perturbations lists), ``authoring`` (lint, init) and ``relay`` (mcp-relay). Each exposes
``register(app)``; they share ``_common`` and import no other command module (but
``catalogue``, which lists authoring's lint again as ``scenarios lint``), so the command
line has no import circle."""
