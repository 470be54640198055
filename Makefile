# Every target sets itself up: a fresh clone needs only python3 (>= 3.11).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
OUT    ?= out

.PHONY: install test demo lint bench bench-wire bench-report bench-sequential clean chromium bubblewrap frameworks test-frameworks

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Lint first: a type error fails fast, before minutes of trials.
# The suite starts hundreds of Python processes (the CLI, workers, venvs): each compiled every
# module it imports from source where the environment sets PYTHONDONTWRITEBYTECODE (~0.35 s of
# CPU a `chaoseval run`, and pytest's assertion rewriting of chaoseval's modules). Here
# bytecode is cached, under .cache/pycache rather than beside the sources.
test: lint bubblewrap
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/.cache/pycache $(BIN)/python -m pytest -q

# ruff everywhere; mypy as configured in pyproject.toml (strict on model, seams, engine,
# analysis and loading; the default level elsewhere).
lint: $(STAMP)
	$(BIN)/ruff check chaoseval perturbations scenarios tests benchmarks
	$(BIN)/mypy

# Every perturbation in the catalogue, one cell each, beside clean, for both reference harnesses.
# (tool_schema_drift acts on MCP `tools/list` only, which the in-process agents never call.)
CATALOGUE := -p latency -p timeout -p malformed -p layout_shift -p modal -p sampling \
             -p stale_memory -p clock_skew -p slow_render -p viewport -p drift -p injection

# Model-channel faults on the wire, for the OpenAI-SDK agents against the offline chaoseval-sim
# (small retry-after and latency values: the SDK waits in wall-clock time).
WIRE := -p "model_error:modes=[429,500,reset,stream_cut],retry_after=0.05" \
        -p "model_malformed" -p "model_latency:seconds=0.05"

# The conversational tasks (a simulated customer on the other side, docs/CONVERSATIONS.md) under
# each user perturbation: what the user says, not the tools, is the fault.
CONVERSE := -s 'tag:conversation' -p user_typos -p user_paraphrase -p user_withholding \
            -p user_contradiction -p user_impatience -p user_language -p user_pressure \
            -p user_injection

# The browser agents drive Debian's Chromium: installed through apt when missing (as root).
chromium: $(STAMP)
	$(BIN)/python -c "import sys; from chaoseval.channels.browser.chromium import ensure_chromium; sys.exit(ensure_chromium())"

# The layout faults in real headless Chromium: hard-coded selectors against role/label locators.
# Eight of the UI tasks, one trial each (a browser trial costs seconds): with exact sign-flip
# tests Holm-adjusted over four cells, eight tasks is the fewest at which `compare` can call a
# cell's difference (2/2^8 x 4 < 0.05). The whole `tag:ui` set is in the main matrix above, and
# `chaoseval run --agent browser-resilient -s 'tag:ui' ...` runs it in Chromium.
BROWSER := -s ui-refund-admin -s ui-checkout -s ui-ticket-escalate -s ui-plan-downgrade \
           -s ui-return-approve -s ui-user-suspend -s ui-invoice-void -s ui-security-2fa \
           -p layout_shift -p modal -p slow_render -p viewport --trials 1 --seed 7

# exec: agents run each in a bubblewrap sandbox (chaoseval.agents.sandbox, docs/SECURITY.md):
# installed through apt when missing (apt-get update first; as root). Where it cannot be, runs
# go on unsandboxed and say so.
bubblewrap: $(STAMP)
	$(BIN)/python -c "import sys; from chaoseval.agents.sandbox import ensure_bubblewrap; r = ensure_bubblewrap(); r and print('note: ' + r + '; exec: agents will run without a sandbox', file=sys.stderr)"

demo: $(STAMP) chromium bubblewrap
	mkdir -p $(OUT)
	$(BIN)/chaoseval run --agent naive --trials 5 --seed 7 $(CATALOGUE) \
	  --journal $(OUT)/naive.jsonl --overwrite
	$(BIN)/chaoseval run --agent resilient --trials 5 --seed 7 $(CATALOGUE) \
	  --journal $(OUT)/resilient.jsonl --overwrite
	$(BIN)/chaoseval summary $(OUT)/naive.jsonl $(OUT)/resilient.jsonl
	$(BIN)/chaoseval report $(OUT)/resilient.jsonl --format html -o $(OUT)/report.html
	$(BIN)/chaoseval report $(OUT)/naive.jsonl --format html -o $(OUT)/report-naive.html
	$(BIN)/chaoseval compare $(OUT)/naive.jsonl $(OUT)/resilient.jsonl
	$(BIN)/chaoseval run --agent naive --trials 3 --seed 7 $(CONVERSE) \
	  --journal $(OUT)/conversations-naive.jsonl --overwrite --quiet
	$(BIN)/chaoseval run --agent resilient --trials 3 --seed 7 $(CONVERSE) \
	  --journal $(OUT)/conversations-resilient.jsonl --overwrite --quiet
	$(BIN)/chaoseval compare $(OUT)/conversations-naive.jsonl $(OUT)/conversations-resilient.jsonl
	$(BIN)/chaoseval run --agent openai-naive --trials 3 --seed 7 -s 'vending-*' $(WIRE) \
	  --journal $(OUT)/openai-naive.jsonl --overwrite
	$(BIN)/chaoseval run --agent openai-resilient --trials 3 --seed 7 -s 'vending-*' $(WIRE) \
	  --journal $(OUT)/openai-resilient.jsonl --overwrite
	$(BIN)/chaoseval compare $(OUT)/openai-naive.jsonl $(OUT)/openai-resilient.jsonl
	$(BIN)/chaoseval run --agent browser-naive $(BROWSER) \
	  --journal $(OUT)/browser-naive.jsonl --overwrite
	$(BIN)/chaoseval run --agent browser-resilient $(BROWSER) \
	  --journal $(OUT)/browser-resilient.jsonl --overwrite
	$(BIN)/chaoseval compare $(OUT)/browser-naive.jsonl $(OUT)/browser-resilient.jsonl
	$(BIN)/chaoseval report $(OUT)/browser-naive.jsonl --format html \
	  -o $(OUT)/report-browser-naive.html
	@echo "reports: $(OUT)/report.html $(OUT)/report-naive.html $(OUT)/report-browser-naive.html"

# Third-party agent frameworks for examples/ and tests/frameworks: each in its own venv (or, for
# Node, its own node_modules) in a cache outside the clone ($XDG_CACHE_HOME, else ~/.cache, then
# chaoseval/frameworks; FRAMEWORKS=DIR for another), from the pinned versions in
# examples/requirements/ and examples/node/package-lock.json (each lock complete: pip installs it
# as it is, --no-deps, then checks it). A venv's directory is named by a hash of its lock, so a
# changed pin builds a new one and a re-run, or another clone, reuses what is there. The missing
# ones are built at once (tests/frameworks/venvs.py: mostly waiting on downloads).
FRAMEWORKS ?=
FRAMEWORKS_ROOT = $(if $(FRAMEWORKS),--root $(FRAMEWORKS))

frameworks:
	$(PYTHON) tests/frameworks/venvs.py $(FRAMEWORKS_ROOT)

# The framework matrix (tests/frameworks, left out of `make test`): each framework's example agent
# through exec: beside examples/openai_mcp_agent.py on the same seeds, the frameworks at once.
# Its own basetemp: another pytest on the machine prunes /tmp/pytest-of-$USER while this runs.
test-frameworks: $(STAMP) frameworks
	CHAOSEVAL_FRAMEWORKS="$$($(PYTHON) tests/frameworks/venvs.py --where $(FRAMEWORKS_ROOT))" \
	  $(BIN)/python -m pytest -q -p no:cacheprovider -m frameworks tests/frameworks \
	  --basetemp=.cache/test-frameworks

# Every bench's figures, each with its target and the load average (benchmarks/run.py; what
# each measures: docs/BENCHMARKS.md). AGAINST=REF: the A/B harness instead, the tree's code and
# REF's alternating in one run (ROUNDS=N, default 10; ONLY=TEXT: the figures naming TEXT).
bench: $(STAMP)
	$(BIN)/python benchmarks/run.py $(if $(AGAINST),--against $(AGAINST)) \
	  $(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(ONLY),--only "$(ONLY)")

# The wire part of `make bench` alone (~30 s): each channel's added latency and CPU per request
# against a bare app, side by side, with the load average at the time (J=1: one client).
bench-wire: $(STAMP)
	$(BIN)/python benchmarks/bench_wire.py $(if $(J),-j $(J))

# The big-journal part of `make bench` alone (issue 23): every report command's time and peak
# memory at 100k records over 100, 10k and 100k tasks; RECORDS=1000000 for the targets' scale
# (tens of minutes on a loaded machine), TASKS=100,10000 for fewer task counts. Then
# `chaoseval view`'s time to first paint of a run's page in Chromium on the 100-task journal.
bench-report: $(STAMP)
	$(BIN)/python benchmarks/bench_report.py $(if $(RECORDS),--records $(RECORDS)) \
	  $(if $(TASKS),--tasks $(TASKS))
	CHAOSEVAL_BENCH_RECORDS=$(or $(RECORDS),100000) $(BIN)/python benchmarks/bench_browser.py view

# run --sequential's figures (issue 44): calibration under the null over 1,000 simulated runs
# beside a fixed-n test peeked every round (a few minutes), then the bundled suite with the
# naive and resilient agents, sequential against a fixed n = 20 (the trials: long). RUNS=N.
bench-sequential: $(STAMP)
	$(BIN)/python benchmarks/sequential_sim.py --efficiency $(if $(RUNS),--runs $(RUNS))

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache .cache/pycache
