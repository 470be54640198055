# Every target sets itself up: a fresh clone needs only python3 (>= 3.11).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
OUT    ?= out

.PHONY: install test demo lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check chaoseval perturbations scenarios tests benchmarks

demo: $(STAMP)
	mkdir -p $(OUT)
	$(BIN)/chaoseval run --agent naive --trials 5 --seed 7 -p latency -p timeout \
	  --journal $(OUT)/naive.jsonl --overwrite
	$(BIN)/chaoseval run --agent resilient --trials 5 --seed 7 -p latency -p timeout \
	  --journal $(OUT)/resilient.jsonl --overwrite
	$(BIN)/chaoseval report $(OUT)/resilient.jsonl --format html -o $(OUT)/report.html
	$(BIN)/chaoseval compare $(OUT)/naive.jsonl $(OUT)/resilient.jsonl

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
