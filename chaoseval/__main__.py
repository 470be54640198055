from chaoseval.cli.app import app

app(prog_name="chaoseval")
