"""The Linux bundle end to end: `make bundle`'s archive, unpacked into a folder whose path has a
space and non-ASCII characters, runs without the checkout's Python; packs install into the user's
packs folder from inside it; install.sh / uninstall.sh into a temporary HOME.

Slow (the PyInstaller build takes minutes on two cores), so it is built once per session; it runs
in `make test` and so in `.ci/run`. The tray screenshot is kept in build/bundle/tray-bundle.png.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import packfactory
import pytest
from xdesktop import desktop_with_tray, icon_pixels, missing_tools

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
VERSION = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE).group(1)  # type: ignore[union-attr]
OFFLINE = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": ""}


@pytest.fixture(scope="session")
def bundle_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if sys.platform != "linux":
        pytest.skip("the bundle is built on Linux")
    out = tmp_path_factory.mktemp("bundle-dist")
    proc = subprocess.run([str(ROOT / "scripts" / "build-bundle.sh"), str(out)], capture_output=True, text=True,
                          timeout=2400, check=False, cwd=ROOT, env=dict(os.environ, BUNDLE_GZIP_LEVEL="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out / f"hearthside-{VERSION}-linux-{os.uname().machine}.tar.gz"


@pytest.fixture(scope="session")
def unpacked(bundle_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("bundle") / "Hearthside bündle ✓"
    where.mkdir()
    with tarfile.open(bundle_archive) as tar:
        tar.extractall(where, filter="tar")
    return where / bundle_archive.name.removesuffix(".tar.gz")


def _env(home: Path, **extra: str) -> dict[str, str]:
    """A user's environment without the checkout's venv or Python on PATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XDG_", "PYTHON", "VIRTUAL_ENV", "QT_"))}
    env.update(HOME=str(home), PATH="/usr/bin:/bin", XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local" / "share"), XDG_STATE_HOME=str(home / ".local" / "state"),
               XDG_CACHE_HOME=str(home / ".cache"))
    env.update(extra)
    return env


def _run(exe: Path, *args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=timeout, check=False)


def _tree(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = f"link -> {os.readlink(p)}"
        elif p.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = f"file {p.stat().st_size} {p.stat().st_mtime_ns}"
    return out


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "hôme dir"
    h.mkdir()
    return h


def test_the_archive_holds_the_app_the_scripts_the_launcher_and_the_icons(unpacked: Path) -> None:
    for rel in ("app/hearthside", "app/VERSION", "install.sh", "uninstall.sh", "hearthside.desktop",
                "icons/hicolor/16x16/apps/hearthside.png", "icons/hicolor/256x256/apps/hearthside.png",
                "icons/hicolor/scalable/apps/hearthside.svg", "README.txt"):
        assert (unpacked / rel).exists(), rel
    assert (unpacked / "app" / "VERSION").read_text().strip() == VERSION
    assert "StartupWMClass=Hearthside" in (unpacked / "hearthside.desktop").read_text()


def test_every_library_in_the_bundle_finds_what_it_links_to(unpacked: Path) -> None:
    """The spec drops unused Qt parts; nothing kept may lose a library it needs."""
    internal = unpacked / "app" / "_internal"
    env = dict(os.environ, LD_LIBRARY_PATH=f"{internal}:{internal / 'PySide6' / 'Qt' / 'lib'}")
    missing = []
    libs = [p for p in internal.rglob("*.so*") if p.is_file() and not p.is_symlink()]
    assert len(libs) > 50
    for lib in libs:
        out = subprocess.run(["ldd", str(lib)], env=env, capture_output=True, text=True, check=False).stdout
        missing += [f"{lib.relative_to(internal)}: {ln.strip()}" for ln in out.splitlines() if "not found" in ln]
    assert not missing, "\n".join(missing)


def test_the_bundled_app_runs_version_and_doctor_without_the_checkout(unpacked: Path, home: Path) -> None:
    exe = unpacked / "app" / "hearthside"
    version = _run(exe, "--version", env=_env(home))
    assert (version.returncode, version.stdout.strip()) == (0, f"hearthside {VERSION}"), version.stderr
    doctor = _run(exe, "doctor", "--json", env=_env(home, QT_QPA_PLATFORM="offscreen"))
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["python"]["detail"].endswith(str(exe)), checks["python"]
    assert checks["qt"]["status"] == "ok" and checks["qt"]["data"]["platform"] == "offscreen"  # the -c probe
    from hearthside.pluginhost.host import FIRST_PARTY, OPT_IN_PACKS

    on = len(FIRST_PARTY) - len(OPT_IN_PACKS)  # the shell is bundled but off until enabled
    assert checks["packs"]["detail"].startswith(f"{on} loaded, 0 failed, {len(OPT_IN_PACKS)} blocked"), \
        checks["packs"]
    if os.environ.get("DBUS_SESSION_BUS_ADDRESS"):  # make test: a real Secret Service
        assert checks["keyring"]["status"] == "ok", checks["keyring"]
        assert doctor.returncode == 0, doctor.stderr


FIRST_PARTY = {"files", "searxng", "starter-skills", "calendar", "feeds", "websearch"}
#: Bundled, but off on a fresh install (``plugins enable shell``).
OFF_AT_FIRST = {"shell"}

WEEKLY_ICS = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:standup\r\n"
              "DTSTAMP:20260101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20260105T091500\r\n"
              "DTEND;TZID=Europe/Berlin:20260105T093000\r\nRRULE:FREQ=DAILY\r\nSUMMARY:Stand-up with Ada\r\n"
              "END:VEVENT\r\nEND:VCALENDAR\r\n")
PAGE = (b"<html><head><title>Commute</title></head><body><nav>menu</nav><article><h1>Tram 28 diverted</h1>"
        b"<p>Because of works on the Rua da Conceicao, tram 28 runs a diverted route all week; allow ten "
        b"minutes more for the commute into the centre and take the bus where you can.</p></article></body></html>")
RSS = (b'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Cycling</title>'
       b"<item><title>New bike lane on Avenida da Liberdade</title><guid>lane-1</guid>"
       b"<link>https://cycling.example/lane-1</link></item></channel></rss>")


@pytest.fixture
def loopback_site() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1: /page.html (an article) and /feed.xml (RSS)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body, kind = (PAGE, "text/html") if self.path == "/page.html" else (RSS, "application/rss+xml")
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_the_first_party_packs_load_and_their_tools_work_in_a_bundled_check_in(
    unpacked: Path, home: Path, tmp_path: Path, loopback_site: str
) -> None:
    """The calendar, feeds and web-search packs load inside the bundle (with icalendar,
    recurring-ical-events, feedparser and trafilatura frozen into it), their commands run, and a
    scripted check-in calls all three packs' tools and gets real answers back."""
    from fakemodel import FakeModel

    exe = unpacked / "app" / "hearthside"
    env = _env(home, **OFFLINE)
    packs = _packs(exe, env)
    assert FIRST_PARTY | OFF_AT_FIRST <= set(packs), sorted(packs)
    assert {n: packs[n]["status"] for n in FIRST_PARTY} == dict.fromkeys(FIRST_PARTY, "ok"), \
        {n: packs[n].get("error") for n in FIRST_PARTY}
    assert {n: packs[n]["status"] for n in OFF_AT_FIRST} == dict.fromkeys(OFF_AT_FIRST, "blocked")
    cal = tmp_path / "work.ics"
    cal.write_bytes(WEEKLY_ICS.encode())
    added = _run(exe, "calendar", "add", "Work", str(cal), env=env)
    assert added.returncode == 0, added.stderr
    listed = _run(exe, "calendar", "list", "--json", env=env)
    assert json.loads(listed.stdout) == [{"name": "Work", "kind": "file", "source": str(cal), "user": ""}]
    feed = _run(exe, "feeds", "add", f"{loopback_site}/feed.xml", env=env)
    assert feed.returncode == 0, feed.stderr
    made = _run(exe, "persona", "new", "Juniper", env=env)
    assert made.returncode == 0, made.stderr
    [persona] = [p for p in json.loads(_run(exe, "persona", "list", "--json", env=env).stdout)
                 if p["name"] == "Juniper"]
    (Path(str(persona["path"])) / "HEARTBEAT.md").write_text(
        "# Checklist\n\n- Remind me before my next meeting.\n- Anything new on my feeds?\n"
        "- How is my commute today?\n", encoding="utf-8")
    seen: dict[str, str] = {}

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        for m in body["messages"]:
            if m.get("role") == "tool":
                seen[str(m.get("tool_call_id", len(seen)))] = str(m["content"])
        return {"text": "Heads up: " + " | ".join(seen.values())[:3000]}

    calls = [("calendar_next", json.dumps({"count": 1})), ("feeds_new", json.dumps({"since": "30d"})),
             ("web_read", json.dumps({"url": f"{loopback_site}/page.html"}))]
    with FakeModel([{"tool_calls": calls}, answer]) as fm:
        run = _run(exe, "heartbeat", "run", "Juniper", "--json", env=dict(env, **fm.env(),
                   HEARTHSIDE_MODEL_API_KEY="loopback-test-key"))
    assert run.returncode == 0, run.stdout + run.stderr
    out = json.loads(run.stdout)
    assert out["status"] == "notified", out
    text = " ".join(seen.values())
    assert "Stand-up with Ada" in text and "[Work]" in text, text  # icalendar + recurring-ical-events
    assert "New bike lane on Avenida da Liberdade" in text, text  # feedparser
    assert "Tram 28 diverted" in text or "tram 28 runs a diverted route" in text, text  # trafilatura


def test_launched_with_no_display_the_bundle_says_so_in_one_sentence(unpacked: Path, home: Path) -> None:
    proc = _run(unpacked / "app" / "hearthside", env=_env(home, DISPLAY="", WAYLAND_DISPLAY=""), timeout=60)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no graphical display" in lines[0] and "--headless" in lines[0], proc.stderr


# -- the tray under Xvfb + trayer ------------------------------------------------------------

@pytest.fixture
def xserver_with_tray() -> Iterator[dict[str, str]]:
    missing = missing_tools("Xvfb", "trayer", "import", "convert", "xdotool", "xprop")
    if missing:
        pytest.skip(f"{missing[0]} is not installed (make test installs it)")
    with desktop_with_tray() as display:
        yield display


def test_the_bundled_tray_shows_its_icon_with_the_launchers_window_class(
    unpacked: Path, home: Path, xserver_with_tray: dict[str, str]
) -> None:
    env = _env(home, **xserver_with_tray)
    app = subprocess.Popen([str(unpacked / "app" / "hearthside")], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    shot = ROOT / "build" / "bundle" / "tray-bundle.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    try:
        pixels = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and pixels < 100:
            time.sleep(0.5)
            assert app.poll() is None, app.communicate()[1]
            subprocess.run(["import", "-window", "root", str(shot)], env=env, check=True, timeout=30)
            pixels = icon_pixels(shot)
        assert pixels >= 100, f"the bundled tray icon did not appear (screenshot: {shot})"
        wins = subprocess.run(["xdotool", "search", "--class", "Hearthside"], env=env, capture_output=True,
                              text=True, timeout=30, check=False).stdout.split()
        classes = {subprocess.run(["xprop", "-id", w, "WM_CLASS"], env=env, capture_output=True, text=True,
                                  timeout=30, check=False).stdout.strip() for w in wins}
        desktop = (unpacked / "hearthside.desktop").read_text()
        wm_class = re.search(r"^StartupWMClass=(.+)$", desktop, re.MULTILINE).group(1)  # type: ignore[union-attr]
        assert f'WM_CLASS(STRING) = "hearthside", "{wm_class}"' in classes, classes
    finally:
        app.terminate()
        app.wait(15)


# -- packs from inside the bundle ----------------------------------------------------------

def _docs_example_wheel(tmp: Path) -> Path:
    """The hearthside-hello pack exactly as docs/packs.md writes it, built into a wheel."""
    section = (ROOT / "docs" / "packs.md").read_text(encoding="utf-8").split("## A complete example", 1)[1]
    proj = tmp / "hearthside-hello"
    for rel in ("pyproject.toml", "hearthside_hello/__init__.py", "hearthside_hello/skills/say-hello/SKILL.md"):
        m = re.search(rf"`{re.escape(rel)}`:\n\n```\w*\n(.*?)```", section, re.DOTALL)
        assert m, rel
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        (proj / rel).write_text(m.group(1), encoding="utf-8")
    packfactory.pip_wheel([proj], tmp / "wheels")
    return next((tmp / "wheels").glob("hearthside_hello-*.whl"))


def _packs(exe: Path, env: dict[str, str]) -> dict[str, dict[str, object]]:
    proc = _run(exe, "plugins", "list", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return {p["name"]: p for p in json.loads(proc.stdout)}


def _read_only_runner(app_dir: Path) -> tuple[list[str], bool]:
    """A command prefix under which app_dir cannot be written, and whether it is a real mount.

    As root, file modes do not stop writes: the app folder is then bind-mounted read-only in a
    private mount namespace (unshare). Otherwise `chmod -R a-w` (undone by the test) is enough.
    """
    if os.geteuid() != 0:
        return [], False
    probe = (subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
             if shutil.which("unshare") else None)
    if probe is None or probe.returncode != 0:
        pytest.skip("running as root without unshare: cannot make the app folder read-only")
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return ["unshare", "-m", "sh", "-c", script, str(app_dir)], True


def test_packs_install_from_inside_a_read_only_bundle_into_the_users_packs_folder(
    unpacked: Path, home: Path, tmp_path: Path
) -> None:
    exe = unpacked / "app" / "hearthside"
    env = _env(home, **OFFLINE)
    wheel = _docs_example_wheel(tmp_path)
    app_dir = unpacked / "app"
    before = _tree(app_dir)
    prefix, mounted = _read_only_runner(app_dir)
    if mounted:  # the folder really refuses writes
        probe = subprocess.run([*prefix, "touch", str(app_dir / "probe")], capture_output=True, text=True, check=False)
        assert probe.returncode != 0 and "Read-only file system" in probe.stderr, probe.stderr

    def _run(exe: Path, *args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*prefix, str(exe), *args], env=env, capture_output=True, text=True, timeout=timeout,
                              check=False)

    def _packs(exe: Path, env: dict[str, str]) -> dict[str, dict[str, object]]:
        proc = _run(exe, "plugins", "list", "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        return {p["name"]: p for p in json.loads(proc.stdout)}

    subprocess.run(["chmod", "-R", "a-w", str(app_dir)], check=True)
    try:
        proc = _run(exe, "plugins", "install", str(wheel), env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "installed hearthside-hello 0.1.0" in proc.stdout
        packs = _packs(exe, env)
        assert packs["hello"]["status"] == "ok", packs["hello"]
        assert packs["hello"]["contributes"]["tools"] == ["Greet"]  # type: ignore[index]
        assert {"files", "searxng", "starter-skills"} <= set(packs)
        v = sys.version_info
        site = (home / ".local" / "share" / "hearthside" / "packs" / "env" / "lib" / f"python{v.major}.{v.minor}"
                / "site-packages")
        assert (site / "hearthside_hello" / "__init__.py").is_file()
        gone = _run(exe, "plugins", "uninstall", "hello", env=env)
        assert gone.returncode == 0, gone.stderr
        assert "hello" not in _packs(exe, env)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(app_dir)], check=True)
    assert _tree(app_dir) == before  # nothing was written into the app's folder


def test_an_sdist_only_pack_is_refused_in_the_bundle_with_the_reason(
    unpacked: Path, home: Path, tmp_path: Path
) -> None:
    exe = unpacked / "app" / "hearthside"
    proj = _docs_example_wheel(tmp_path).parents[1] / "hearthside-hello"
    sdists = tmp_path / "sdists"
    built = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(sdists), str(proj)],
                           capture_output=True, text=True, timeout=600, check=False)
    assert built.returncode == 0, built.stderr
    sdist = next(sdists.glob("hearthside_hello-*.tar.gz"))
    direct = _run(exe, "plugins", "install", str(sdist), env=_env(home, **OFFLINE))
    assert direct.returncode == 1
    assert direct.stderr.strip().endswith("is a source distribution, which would have to be built first; the "
                                          "bundled Hearthside installs ready-built wheels (.whl) only: ask the "
                                          "pack's author for a wheel, or build one with `pip wheel --no-deps` "
                                          "on a computer with Python."), direct.stderr
    by_name = _run(exe, "plugins", "install", "hearthside-hello",
                   env=_env(home, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(sdists)))
    assert by_name.returncode == 1
    assert "installs wheels only" in by_name.stderr.strip().splitlines()[-1], by_name.stderr
    assert "hello" not in _packs(exe, _env(home, **OFFLINE))


def test_packs_installed_from_a_source_install_keep_working_in_the_bundle(
    unpacked: Path, home: Path, run_cli
) -> None:  # type: ignore[no-untyped-def]
    env = _env(home, **OFFLINE)
    wheel = packfactory.wheels()["hs-good"]
    src = subprocess.run([sys.executable, "-m", "hearthside", "plugins", "install", str(wheel)],
                         env={**env, "PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=300,
                         check=False)
    assert src.returncode == 0, src.stderr
    packs = _packs(unpacked / "app" / "hearthside", env)
    assert packs["good"]["status"] == "ok" and packs["good"]["contributes"]["tools"] == ["GoodTool"]  # type: ignore[index]


# -- install.sh / uninstall.sh ---------------------------------------------------------------

def _user_files(home: Path) -> None:
    """What a user has before installing: personas, soul, settings, memory, a pack record."""
    cfg = home / ".config" / "hearthside"
    (cfg / "personas" / "kip").mkdir(parents=True)
    (cfg / "personas" / "kip" / "SOUL.md").write_text("Kip is kind.\n")
    (cfg / "soul.md").write_text("I like tea.\n")
    (cfg / "settings.toml").write_text('[model]\nname = "llama3.2"\n')
    mem = home / ".local" / "share" / "hearthside" / "memory" / "kip"
    mem.mkdir(parents=True)
    (mem / "memory.json").write_text("{}\n")


def test_install_sh_installs_upgrades_in_place_is_idempotent_and_uninstall_sh_removes_exactly_that(
    unpacked: Path, home: Path, tmp_path: Path
) -> None:
    _user_files(home)
    before = _tree(home)
    env = _env(home)
    # An "older version": the same bundle with another version number and a file the new one lacks.
    older = tmp_path / "older bündle" / unpacked.name
    shutil.copytree(unpacked, older, symlinks=True)
    (older / "app" / "VERSION").write_text("0.0.9\n")
    (older / "app" / "only-in-old.txt").write_text("old\n")
    first = _run(older / "install.sh", env=env)
    assert first.returncode == 0, first.stderr
    app = home / ".local" / "share" / "hearthside" / "app"
    assert (app / "only-in-old.txt").exists()

    upgrade = _run(unpacked / "install.sh", env=env)
    assert upgrade.returncode == 0, upgrade.stderr
    assert "Upgrading Hearthside 0.0.9 in place." in upgrade.stdout
    assert (app / "VERSION").read_text().strip() == VERSION and not (app / "only-in-old.txt").exists()
    assert not (app.parent / "app.new").exists()
    installed = _tree(home)
    for rel, kind in before.items():  # personas, soul, settings, memory untouched
        assert installed[rel] == kind, rel

    manifest = home / ".local" / "share" / "hearthside" / "installed-files.txt"
    listed = manifest.read_text()
    again = _run(unpacked / "install.sh", env=env)  # idempotent: the same files, the same record
    assert again.returncode == 0, again.stderr
    assert set(_tree(home)) == set(installed) and manifest.read_text() == listed

    cmd = home / ".local" / "bin" / "hearthside"
    assert _run(cmd, "--version", env=env).stdout.strip() == f"hearthside {VERSION}"  # through the link
    desktop = home / ".local" / "share" / "applications" / "hearthside.desktop"
    assert f'Exec="{cmd}"' in desktop.read_text()
    if shutil.which("desktop-file-validate"):
        check = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True, check=False)
        assert check.returncode == 0 and check.stdout == "", check.stdout
    for size in (16, 22, 24, 32, 48, 64, 128, 256):
        icons = home / ".local" / "share" / "icons" / "hicolor"
        assert (icons / f"{size}x{size}" / "apps" / "hearthside.png").is_file()

    gone = _run(app / "uninstall.sh", env=env)
    assert gone.returncode == 0, gone.stderr
    assert _tree(home) == before  # exactly what install.sh made is gone; the user's files stay
    assert _run(unpacked / "uninstall.sh", env=env).returncode == 1  # nothing left to remove: says so
