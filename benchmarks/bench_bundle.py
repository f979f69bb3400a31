"""The Linux bundle (issue 14): its size, and how fast it starts compared with the source install.

- the archive's size and the unpacked bundle's size on disk (target <= 200 MB unpacked), next to
  the checkout's .venv for comparison;
- start to tray ready: spawn `hearthside` under Xvfb + trayer and poll (every 10 ms) until a
  window of class Hearthside — the tray icon — exists; the bundled app vs `.venv/bin/hearthside`,
  alternating, in the same run, median of N (target bundle <= 1.2x source). The first run of each
  is also printed (closest to a cold start without dropping the system's caches).

Run: .venv/bin/python benchmarks/bench_bundle.py [--runs N] [--archive dist/hearthside-*.tar.gz]
(without --archive it uses the newest archive in dist/, building one with `make bundle` if none).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from xdesktop import desktop_with_tray


def disk_usage(root: Path) -> tuple[int, int]:
    """(bytes of file content, bytes allocated on disk) under root, links not followed."""
    size = blocks = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            st = os.lstat(os.path.join(dirpath, name))
            blocks += st.st_blocks * 512
            if not name in dirnames:
                size += st.st_size
    return size, blocks


def time_to_tray(cmd: list[str], env: dict[str, str], timeout: float = 60) -> float:
    """Seconds from spawning cmd until its tray icon window exists; the app is then stopped."""
    t0 = time.perf_counter()
    app = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - t0 < timeout:
            found = subprocess.run(["xdotool", "search", "--class", "Hearthside"], env=env,
                                   capture_output=True, text=True, check=False).stdout.strip()
            if found:
                return time.perf_counter() - t0
            if app.poll() is not None:
                raise SystemExit(f"{cmd[0]} exited with {app.returncode} before its tray appeared")
            time.sleep(0.01)
        raise SystemExit(f"{cmd[0]}: no tray icon within {timeout:.0f} s")
    finally:
        app.terminate()
        try:
            app.wait(15)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()


def newest_archive() -> Path:
    found = sorted((ROOT / "dist").glob("hearthside-*-linux-*.tar.gz"), key=lambda p: p.stat().st_mtime)
    if not found:
        subprocess.run(["make", "-C", str(ROOT), "bundle"], check=True)
        found = sorted((ROOT / "dist").glob("hearthside-*-linux-*.tar.gz"), key=lambda p: p.stat().st_mtime)
    return found[-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--archive", type=Path)
    args = ap.parse_args()
    archive = args.archive or newest_archive()
    mb = 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="hs-bench-bundle-") as tmp:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="tar")
        top = Path(tmp) / archive.name.removesuffix(".tar.gz")
        size, alloc = disk_usage(top)
        venv_size, venv_alloc = disk_usage(ROOT / ".venv")
        print(f"archive {archive.name}: {archive.stat().st_size / mb:.1f} MB")
        print(f"unpacked bundle: {size / mb:.1f} MB of files, {alloc / mb:.1f} MB on disk (target <= 200 MB)")
        print(f"for comparison, the checkout's .venv: {venv_size / mb:.1f} MB of files, "
              f"{venv_alloc / mb:.1f} MB on disk")

        home = Path(tmp) / "home"
        home.mkdir()
        base = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "QT_"))}
        base.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "c"), XDG_DATA_HOME=str(home / "d"),
                    XDG_STATE_HOME=str(home / "s"))
        with desktop_with_tray() as xenv:
            env = dict(base, **xenv)
            bundled = [str(top / "app" / "hearthside")]
            source = [str(ROOT / ".venv" / "bin" / "hearthside")]
            times: dict[str, list[float]] = {"bundle": [], "source": []}
            for _ in range(args.runs + 1):
                times["bundle"].append(time_to_tray(bundled, env))
                times["source"].append(time_to_tray(source, env))
    for name, ts in times.items():
        print(f"start to tray ready, {name}: first {ts[0] * 1000:.0f} ms, median of {args.runs} after it "
              f"{statistics.median(ts[1:]) * 1000:.0f} ms")
    ratio = statistics.median(times["bundle"][1:]) / statistics.median(times["source"][1:])
    print(f"bundle / source (median): {ratio:.2f}x (target <= 1.2x); first runs: "
          f"{times['bundle'][0] / times['source'][0]:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
