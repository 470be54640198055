"""Reference agents: ``scripted`` runs a scenario's reference solution exactly; ``naive`` and
``resilient`` drive a seeded simulated LLM policy through two harness styles."""
