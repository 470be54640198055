from chaoseval.cli import app

app(prog_name="chaoseval")
