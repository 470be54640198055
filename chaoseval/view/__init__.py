"""``chaoseval view``: a local web app over the journals under a folder (docs/VIEW.md).

``library`` finds and reads the journals (columns, re-read as they grow), ``runs`` the runs
list and a run's page, ``trial`` a trial beside its clean twin, ``messages`` each model step's
messages and answer (the trial's model.jsonl), ``compare`` two runs and a run's trend,
``files`` the artifacts it serves, ``html`` what every page shares, ``app`` the routes and
guards, ``serve`` the server."""
