# `make run` starts the app, `make test` runs the tests; each sets itself up on a fresh machine.
VENV   := .venv
PY     := $(VENV)/bin/python
PACKS  := $(sort $(dir $(wildcard plugins/*/pyproject.toml)))
STAMP  := $(VENV)/.installed
SYSTEM_RUN  := $(VENV)/.system-run
SYSTEM_TEST := $(VENV)/.system-test
# The system packages come before the venv (python3-venv may be missing); `make test` needs the
# test set (a superset), anything else the run set. Order-only, so -j never runs two apt-gets.
SYSTEM := $(if $(filter test test-fast,$(MAKECMDGOALS)),$(SYSTEM_TEST),$(SYSTEM_RUN))

.PHONY: run test test-fast bench lint clean install uninstall bundle

run: $(STAMP)
	$(VENV)/bin/hearthside $(ARGS)

# Parallel test workers, whole files each (tests/conftest.py hands out the longest files first):
# twice the cores, as many tests wait on servers, processes and timers rather than compute;
# at most 8. `make test TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$((n * 2)))
PARALLEL := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test: $(STAMP)
	scripts/run-tests.sh $(PARALLEL) $(ARGS)

# The development loop: everything but the tests marked slow (`make test` still runs them all).
test-fast: $(STAMP)
	scripts/run-tests.sh $(PARALLEL) -m "not slow" $(ARGS)

bench: $(STAMP)
	@set -e; for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b; done

lint: $(STAMP)
	$(VENV)/bin/ruff check desktop plugins tests benchmarks
	$(VENV)/bin/mypy --strict  # on [tool.mypy] files in pyproject.toml, as tests/test_lint.py does

# `make install`: `hearthside` in ~/.local/bin (a link to .venv/bin/hearthside), the launcher in
# the application menu and its icons; `make uninstall` removes exactly what it created.
install: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) packaging/make_icons.py build/icons
	packaging/install.sh --source .

uninstall:
	packaging/uninstall.sh

# `make bundle`: dist/hearthside-<version>-linux-x86_64.tar.gz (PyInstaller, packaging/hearthside.spec).
bundle: $(STAMP)
	scripts/ensure-system.sh bundle
	scripts/build-bundle.sh dist

$(SYSTEM_RUN):
	scripts/ensure-system.sh run
	@mkdir -p $(VENV) && touch $@

$(SYSTEM_TEST):
	scripts/ensure-system.sh test
	@mkdir -p $(VENV) && touch $@

$(STAMP): pyproject.toml $(wildcard plugins/*/pyproject.toml) | $(SYSTEM)
	@$(PY) -m pip --version >/dev/null 2>&1 || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -U pip setuptools wheel
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,bundle]' $(addprefix -e ,$(PACKS))
	@# Editable installs are not byte-compiled by pip: do it once here, not in every process.
	$(PY) -m compileall -q desktop plugins >/dev/null
	@touch $@

clean:
	rm -rf $(VENV)
