# `make run` starts the app, `make test` runs the tests; each sets itself up on a fresh machine.
VENV   := .venv
PY     := $(VENV)/bin/python
PACKS  := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
STAMP  := $(VENV)/.installed
SYSTEM_RUN  := $(VENV)/.system-run
SYSTEM_TEST := $(VENV)/.system-test

.PHONY: run test bench lint clean

run: $(SYSTEM_RUN) $(STAMP)
	$(VENV)/bin/hearthside $(ARGS)

test: $(SYSTEM_TEST) $(STAMP)
	scripts/run-tests.sh $(ARGS)

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

lint: $(STAMP)
	$(VENV)/bin/ruff check desktop plugins tests benchmarks
	$(VENV)/bin/mypy --strict desktop/hearthside/core

$(SYSTEM_RUN):
	scripts/ensure-system.sh run
	@mkdir -p $(VENV) && touch $@

$(SYSTEM_TEST):
	scripts/ensure-system.sh test
	@mkdir -p $(VENV) && touch $@

$(STAMP): pyproject.toml $(wildcard plugins/*/pyproject.toml)
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -U pip setuptools wheel
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]' $(addprefix -e ,$(PACKS))
	@touch $@

clean:
	rm -rf $(VENV)
