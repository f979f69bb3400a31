"""Benchmark: loading 200 plugin packs — pluggy's bare loader vs Hearthside's isolated loading.

Generates 200 installed packs (a .dist-info with an entry point + a module registering 5 tools
each) in a temporary packs site folder, then measures, in the same run and each in a fresh
Python process (so module imports are not cached between runs):

  1. pluggy's bare ``PluginManager.load_setuptools_entrypoints("hearthside.plugins")``;
  2. Hearthside's ``discover`` + ``PackHost.load`` (isolated import, registration, every hook
     called on its own, contributions validated and committed);
  3. the wall time of ``hearthside plugins list --json`` with the 200 packs installed
     (and ``hearthside --version`` as the process start-up baseline).

Prints the median of several runs and the ratio to the pluggy figure.
Targets (issue 3): Hearthside <= 1.3x pluggy and <= 300 ms; ``plugins list --json`` <= 1.0 s.

Run: .venv/bin/python benchmarks/bench_plugins.py [--packs 200] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULE = '''\
from hearthside import hookimpl
from hearthside.core.tools import FunctionTool


def _echo(text: str = "") -> str:
    return text


@hookimpl
def hearthside_tools(register):
    for j in range(5):
        register(FunctionTool(f"Bench{i}_{{j}}", "A benchmark tool.", _echo))
'''

PLUGGY = r'''
import sys, time, json
sys.path.append(sys.argv[1])
import pluggy
import hearthside.core.tools, hearthside.pluginhost.specs as specs
pm = pluggy.PluginManager("hearthside")
pm.add_hookspecs(specs)
t0 = time.perf_counter()
n = pm.load_setuptools_entrypoints("hearthside.plugins")
t1 = time.perf_counter()
print(json.dumps({"seconds": t1 - t0, "plugins": n}))
'''

HEARTHSIDE = r'''
import sys, time, json
from pathlib import Path
sys.path.append(sys.argv[1])
import pluggy
import hearthside.core.tools, hearthside.pluginhost.specs
from hearthside.pluginhost.host import PackHost, discover
t0 = time.perf_counter()
host = PackHost(packs_site=Path(sys.argv[1]))
reports = host.load(discover(Path(sys.argv[1])))
t1 = time.perf_counter()
ok = sum(r.status == "ok" for r in reports)
print(json.dumps({"seconds": t1 - t0, "plugins": ok, "tools": len(host.tools)}))
'''


def make_packs(site: Path, n: int) -> None:
    site.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        mod = f"hsbench_pack_{i}"
        (site / f"{mod}.py").write_text(MODULE.format(i=i), encoding="utf-8")
        di = site / f"{mod}-1.0.dist-info"
        di.mkdir()
        (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {mod}\nVersion: 1.0\n", encoding="utf-8")
        (di / "entry_points.txt").write_text(f"[hearthside.plugins]\nbench{i} = {mod}\n", encoding="utf-8")
        (di / "INSTALLER").write_text("bench\n", encoding="utf-8")
        (di / "RECORD").write_text("", encoding="utf-8")


def run_json(code: str, site: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code, str(site)], capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def wall(args: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(args, check=False, capture_output=True, text=True, env=env, timeout=300)
    t1 = time.perf_counter()
    if proc.returncode != 0:
        raise SystemExit(f"{args} failed: {proc.stderr}")
    return t1 - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packs", type=int, default=200)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hs-bench-plugins-") as tmp:
        home = Path(tmp)
        v = sys.version_info
        site = home / "data" / "hearthside" / "packs" / "env" / "lib" / f"python{v.major}.{v.minor}" / "site-packages"
        make_packs(site, a.packs)
        env = dict(os.environ, HOME=str(home), XDG_DATA_HOME=str(home / "data"),
                   XDG_CONFIG_HOME=str(home / "config"), XDG_STATE_HOME=str(home / "state"))
        env.pop("HEARTHSIDE_SAFE_MODE", None)
        pluggy_s, hs_s, cli_s, ver_s = [], [], [], []
        info: dict[str, float] = {}
        for _ in range(a.runs):  # interleaved, so machine load hits both alike
            p = run_json(PLUGGY, site)
            h = run_json(HEARTHSIDE, site)
            pluggy_s.append(p["seconds"])
            hs_s.append(h["seconds"])
            info = {"pluggy_plugins": p["plugins"], "hearthside_ok": h["plugins"], "tools": h["tools"]}
            cli = [sys.executable, "-m", "hearthside"]
            cli_s.append(wall([*cli, "plugins", "list", "--json"], env))
            ver_s.append(wall([*cli, "--version"], env))
        listing = subprocess.run([sys.executable, "-m", "hearthside", "plugins", "list", "--json"],
                                 check=False, capture_output=True, text=True, env=env, timeout=300)
        listed_ok = sum(r["status"] == "ok" for r in json.loads(listing.stdout))
    mp, mh, mc, mv = (statistics.median(x) for x in (pluggy_s, hs_s, cli_s, ver_s))
    print(f"packs generated: {a.packs} (5 tools each); runs: {a.runs}; medians below")
    print(f"loaded: pluggy {info['pluggy_plugins']:.0f} plugins; Hearthside {info['hearthside_ok']:.0f} ok, "
          f"{info['tools']:.0f} tools; plugins list --json shows {listed_ok} ok")
    print(f"pluggy load_setuptools_entrypoints : {mp * 1000:8.1f} ms   (baseline, 1.00x)")
    print(f"Hearthside isolated load + register: {mh * 1000:8.1f} ms   "
          f"({mh / mp:.2f}x pluggy; target <= 1.3x, <= 300 ms)")
    print(f"hearthside plugins list --json     : {mc * 1000:8.1f} ms wall (target <= 1000 ms)")
    print(f"hearthside --version (start-up)    : {mv * 1000:8.1f} ms wall "
          f"(the list costs {(mc - mv) * 1000:.0f} ms on top)")
    print("all runs (ms): pluggy", [round(x * 1000) for x in pluggy_s], "hearthside", [round(x * 1000) for x in hs_s],
          "cli", [round(x * 1000) for x in cli_s])


if __name__ == "__main__":
    main()
