"""Shared test setup: every test gets its own HOME and XDG dirs; Qt runs offscreen.

Nothing in the test suite may touch the real home. Fixtures here are the common ground the
unit, integration and UI tests stand on; the keyring tests additionally need the private
D-Bus session that ``scripts/run-tests.sh`` (``make test``) starts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from privatebus import PrivateBus

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
_worker_bus: list[PrivateBus] = []
_run_dirs: list[Path] = []


def pytest_configure(config: pytest.Config) -> None:
    """A pytest-xdist worker inside ``run-tests.sh``'s session gets a bus and keyring of its own
    (tests/privatebus.py): parallel tests must not see each other's secrets or notifications."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker and getattr(config.option, "numprocesses", None):
        # The controller, before it starts the workers: a folder they all share for work done
        # once per run (tests/packfactory.py builds the pack wheels there); removed at the end.
        shared = tempfile.mkdtemp(prefix="hearthside-run-")
        os.environ["HEARTHSIDE_TEST_SHARED"] = shared
        _run_dirs.append(Path(shared))
    if not worker or not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return
    if not PrivateBus.available():
        return
    bus = PrivateBus(Path(tempfile.mkdtemp(prefix=f"hearthside-bus-{worker}-")))
    os.environ["DBUS_SESSION_BUS_ADDRESS"] = bus.start()
    _worker_bus.append(bus)


#: The files that take longest under ``make test`` (wall time on two cores, measured with
#: ``--durations``), longest first. With parallel workers (``--dist loadfile`` hands out whole
#: files in collection order) they start first, so no worker begins the bundle build when the
#: others are nearly done. Not listed: run after these, in the usual order. A stale list only
#: costs time.
LONGEST_FIRST = (
    "test_schedule_realtime.py",
    "test_bundle.py",
    "test_plugin_install.py",
    "test_tray_e2e.py",
    "test_mcp_client.py",
    "test_drift_watch.py",
    "test_tray_app.py",
    "test_window_plugins.py",
    "test_memory_store.py",
    "test_agent_cli.py",
    "test_no_copy.py",
    "test_plugin_loading.py",
    "test_sandbox.py",
    "test_mcp_cli.py",
    "test_memory_fill.py",
    "test_malformed_app_files.py",
    "test_doctor.py",
    "test_mcp_secret_holes.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the longest files first (see :data:`LONGEST_FIRST`); every worker
    sorts the same way, as xdist requires. Within a file the order stays as written."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files keep their order


def pytest_unconfigure(config: pytest.Config) -> None:
    while _worker_bus:
        bus = _worker_bus.pop()
        bus.stop()
        shutil.rmtree(bus.home, ignore_errors=True)
    while _run_dirs:
        shutil.rmtree(_run_dirs.pop(), ignore_errors=True)


@pytest.fixture
def app_paths(isolated_home: Path):  # type: ignore[no-untyped-def]
    from hearthside.app.paths import AppPaths

    return AppPaths.from_environment()


@pytest.fixture
def app_context(isolated_home: Path):  # type: ignore[no-untyped-def]
    from hearthside.app.context import AppContext

    return AppContext()


#: Test files whose ``run_cli`` runs the command in this process (click's test isolation),
#: because a new Python process per command proves nothing extra there and costs about a second
#: each. A test in one of them that needs a real process (exit code at process level, signals,
#: start-up, a tty, two processes racing for a lock) says so with ``@pytest.mark.subprocess_cli``.
#: See docs/testing.md.
IN_PROCESS_CLI_FILES = frozenset({
    "test_agent_cli.py",
    "test_cli_foundation.py",
    "test_doctor.py",
    "test_drift_cli.py",
    "test_malformed_app_files.py",
    "test_mcp_cli.py",
    "test_mcp_secret_holes.py",
    "test_memory_cli.py",
    "test_model_client.py",
    "test_model_service.py",
    "test_names_and_values.py",
    "test_no_copy.py",
    "test_persona_links.py",
    "test_plugin_loading.py",
    "test_sandbox.py",
    "test_terminal_escapes.py",
})


def _run_subprocess(*args: str, input: str | None = None, timeout: float = 120,
                    env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``hearthside`` console script in a new process with the test's env."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "hearthside", *args],
        capture_output=True, text=True, input=input, timeout=timeout, env=full_env, check=False,
    )


def _run_in_process(*args: str, input: str | None = None, timeout: float = 120,
                    env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The same command line run in this process, returning the same shape as
    :func:`_run_subprocess`. Each call starts from what a new process would see and leaves
    nothing behind: the redactor's registered secrets, the logging handlers and crash hooks,
    the environment and the working folder are restored, and every app context the command built
    has its runtime thread stopped. ``timeout`` is accepted for the same signature (a hung
    command hangs the test instead of being killed)."""
    import io
    import logging
    import threading

    from click.testing import CliRunner
    from hearthside.cli import cli
    from hearthside.cli import common as cli_common
    from hearthside.core import redact

    del timeout
    made: list[object] = []
    real_context = cli_common.AppContext

    def recording_context(*a: object, **kw: object) -> object:
        app = real_context(*a, **kw)
        made.append(app)
        return app

    root = logging.getLogger()
    saved_logging = (list(root.handlers), root.level, logging.getLogRecordFactory(),
                     {n: logging.getLogger(n).level for n in ("httpx2", "httpx", "httpcore",
                                                                "mcp.client.streamable_http")})
    saved_hooks = (sys.excepthook, threading.excepthook)
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_path = list(sys.path)
    saved_redactor = dict(vars(redact.DEFAULT_REDACTOR))
    fresh = redact.Redactor()
    vars(redact.DEFAULT_REDACTOR).update({k: v for k, v in vars(fresh).items() if k != "_lock"})
    cli_common.AppContext = recording_context  # type: ignore[misc,assignment]
    runner = CliRunner()
    code = 0
    try:
        with runner.isolation(input=input, env=env) as (out, err, _mixed):
            # A real stdin splits lines only at "\n" and keeps a "\r" (click's test stdin would
            # end a line there, hiding a CR smuggled into a secret).
            sys.stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline="\n")
            try:
                cli.main(args=list(args), prog_name="hearthside")
            except SystemExit as exc:  # what the interpreter does with it at exit
                if exc.code is None:
                    code = 0
                elif isinstance(exc.code, int):
                    code = exc.code
                else:
                    sys.stderr.write(f"{exc.code}\n")
                    code = 1
            except Exception:  # noqa: BLE001 - an uncaught exception: the crash hook reports it
                sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
                code = 1
            finally:
                for app in made:
                    runtime = vars(app).get("runtime")
                    if runtime is not None:
                        runtime.stop()
                for h in list(root.handlers):
                    if h not in saved_logging[0]:
                        root.removeHandler(h)
                        h.close()
                sys.stdout.flush()
                sys.stderr.flush()
            stdout = out.getvalue().decode("utf-8", "replace")
            stderr = err.getvalue().decode("utf-8", "backslashreplace")
    finally:
        cli_common.AppContext = real_context  # type: ignore[misc]
        root.handlers[:] = saved_logging[0]
        root.setLevel(saved_logging[1])
        logging.setLogRecordFactory(saved_logging[2])
        for name, level in saved_logging[3].items():
            logging.getLogger(name).setLevel(level)
        sys.excepthook, threading.excepthook = saved_hooks
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        vars(redact.DEFAULT_REDACTOR).update(saved_redactor)
        _forget_added_paths(saved_path)
    return subprocess.CompletedProcess(["hearthside", *args], code, stdout, stderr)


def _forget_added_paths(saved_path: list[str]) -> None:
    """Undo what loading packs did to this process: the packs venv put on ``sys.path`` and the
    pack modules imported from it (a new process would not have them either)."""
    import importlib

    added = [p for p in sys.path if p not in saved_path]
    sys.path[:] = saved_path
    if not added:
        return
    for name, mod in list(sys.modules.items()):
        where = getattr(mod, "__file__", None) or ""
        if any(where.startswith(p) for p in added if p):
            del sys.modules[name]
    importlib.invalidate_caches()


@pytest.fixture
def run_cli(isolated_home: Path, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Run ``hearthside ARGS`` and return ``(returncode, stdout, stderr)`` as a
    ``CompletedProcess``: in this process for the files in :data:`IN_PROCESS_CLI_FILES`
    (unless the test is marked ``subprocess_cli``), else in a new process.
    ``HEARTHSIDE_TEST_CLI=subprocess`` makes every call a new process (to compare the two)."""
    in_process = (request.path.name in IN_PROCESS_CLI_FILES
                  and request.node.get_closest_marker("subprocess_cli") is None
                  and os.environ.get("HEARTHSIDE_TEST_CLI") != "subprocess")
    return _run_in_process if in_process else _run_subprocess


@pytest.fixture
def run_cli_process(isolated_home: Path):  # type: ignore[no-untyped-def]
    """Always a new ``hearthside`` process (for the few calls in an in-process file that need one)."""
    return _run_subprocess


def have_secret_service() -> bool:
    """True inside the test D-Bus session with GNOME Keyring (``make test`` provides it)."""
    return bool(os.environ.get("DBUS_SESSION_BUS_ADDRESS"))


@pytest.fixture
def secret_service() -> Iterator[None]:
    if not have_secret_service():
        pytest.skip("needs the D-Bus session with GNOME Keyring that 'make test' starts")
    yield
