"""The frozen (PyInstaller) bundle's entry point.

A bundle has no Python interpreter beside it, so this one executable also stands in for the two
things Hearthside otherwise runs ``sys.executable`` for:

- ``--run-pip ARGS...`` (hidden): run the bundled pip in this (child) process, for
  ``hearthside plugins install`` (see ``hearthside.pluginhost.piprunner``);
- ``-c CODE``: run a snippet, as ``python -c`` would (``doctor`` probes Qt in a child process).

Anything else is the ordinary ``hearthside`` command.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["--run-pip"]:
        from hearthside.pluginhost.piprunner import run_bundled_pip

        sys.exit(run_bundled_pip(argv[1:]))
    if argv[:1] == ["-c"] and len(argv) >= 2:
        sys.argv = ["-c", *argv[2:]]
        code = compile(argv[1], "<string>", "exec")
        exec(code, {"__name__": "__main__"})  # noqa: S102 - the same contract as `python -c`
        sys.exit(0)
    from hearthside.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
