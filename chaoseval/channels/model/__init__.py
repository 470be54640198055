"""The model channel: an OpenAI-compatible API per run, a channel per trial, ``chaoseval-sim``.

- :mod:`.server` serves it on 127.0.0.1 (Starlette on uvicorn), one server per run;
- :mod:`.channel` records every request of a trial and runs the model-channel plugins;
- :mod:`.transcript` keeps each request's messages and answer for the trial's model.jsonl;
- :mod:`.sim` is the bundled offline model driven by the seeded simulated policy;
- :mod:`.session` opens a trial's endpoint (base URL and API key) on the run's server.
"""
