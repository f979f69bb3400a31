"""``hearthside doctor``: a failing check fails the command, files not yet created are said so,
and a missing or locked Secret Service comes with what to install or unlock for the desktop."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hearthside.app.keyring_help import desktop_name, secret_service_advice

NO_BUS = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/hearthside-test-bus"}
OFFSCREEN = {"QT_QPA_PLATFORM": "offscreen"}


def _checks(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    return {c["name"]: c for c in json.loads(proc.stdout)["checks"]}


def test_doctor_exits_1_when_a_check_fails_in_text_and_json(run_cli, secret_service) -> None:  # type: ignore[no-untyped-def]
    good = run_cli("doctor", "--json", env=OFFSCREEN)
    assert good.returncode == 0, good.stderr
    assert all(c["status"] != "fail" for c in _checks(good).values())
    env = {**OFFSCREEN, **NO_BUS, "XDG_CURRENT_DESKTOP": "GNOME"}
    bad = run_cli("doctor", "--json", env=env)
    assert bad.returncode == 1, bad.stderr
    keyring = _checks(bad)["keyring"]
    assert keyring["status"] == "fail" and "GNOME" in str(keyring["detail"])
    text = run_cli("doctor", env=env)
    assert text.returncode == 1
    assert "[FAIL] keyring:" in text.stdout
    assert text.stderr.strip().splitlines()[-1] == "Some checks failed (marked FAIL above)."


def test_doctor_says_not_created_yet_for_files_that_do_not_exist(run_cli, app_paths) -> None:  # type: ignore[no-untyped-def]
    fresh = run_cli("doctor", "--json", env=OFFSCREEN)
    checks = _checks(fresh)
    assert checks["settings"]["status"] == "info"
    assert str(checks["settings"]["detail"]).startswith("not created yet")
    assert {"soul_file", "settings_file", "mcp_file"} <= set(checks["locations"]["data"]["not_created"])  # type: ignore[index]
    text = run_cli("doctor", env=OFFSCREEN).stdout
    assert "[ok  ] settings" not in text and "[  --] settings: not created yet" in text
    assert f"soul_file: {app_paths.soul_file} (not created yet)" in text

    app_paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    app_paths.settings_file.write_text("[model]\n")
    app_paths.soul_file.write_text("I like tea.\n")
    after = _checks(run_cli("doctor", "--json", env=OFFSCREEN))
    assert after["settings"]["status"] == "ok"
    assert "soul_file" not in after["locations"]["data"]["not_created"]  # type: ignore[index]
    assert "soul_file: " + str(app_paths.soul_file) + "\n" in run_cli("doctor", env=OFFSCREEN).stdout


def _which(*present: str):  # type: ignore[no-untyped-def]
    return lambda name: f"/usr/bin/{name}" if name in present else None


BUS = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/x"}


@pytest.mark.parametrize(("desktop", "expected"), [
    ("GNOME", "gnome"), ("ubuntu:GNOME", "gnome"), ("X-Cinnamon", "other"), ("Cinnamon", "gnome"),
    ("KDE", "kde"), ("XFCE", "other"), ("", "other"),
])
def test_the_desktop_is_read_from_xdg_current_desktop(desktop: str, expected: str) -> None:
    assert desktop_name({"XDG_CURRENT_DESKTOP": desktop}) == expected


def test_the_advice_says_what_to_install_or_unlock_for_each_desktop() -> None:
    gnome_missing = secret_service_advice({**BUS, "XDG_CURRENT_DESKTOP": "GNOME"}, _which())
    assert "sudo apt install gnome-keyring" in gnome_missing and "KeePassXC" in gnome_missing
    gnome_there = secret_service_advice({**BUS, "XDG_CURRENT_DESKTOP": "GNOME"}, _which("gnome-keyring-daemon"))
    assert "unlock" in gnome_there and "apt install gnome-keyring" not in gnome_there
    kde_missing = secret_service_advice({**BUS, "XDG_CURRENT_DESKTOP": "KDE"}, _which())
    assert "install KWallet" in kde_missing
    kde_there = secret_service_advice({**BUS, "XDG_CURRENT_DESKTOP": "KDE"}, _which("kwalletd6"))
    assert "enable the wallet" in kde_there
    xfce = secret_service_advice({**BUS, "XDG_CURRENT_DESKTOP": "XFCE"}, _which())
    assert "gnome-keyring" in xfce and "Xfce" in xfce
    keepass = secret_service_advice({**BUS, "XDG_CURRENT_DESKTOP": "XFCE"}, _which("keepassxc"))
    assert "Secret Service Integration" in keepass and "apt install keepassxc" not in keepass
    no_bus = secret_service_advice({"XDG_CURRENT_DESKTOP": "GNOME"}, _which())
    if not Path(f"/run/user/{__import__('os').getuid()}/bus").exists():
        assert "no D-Bus session" in no_bus


@pytest.mark.skipif(not (shutil.which("dbus-run-session") and shutil.which("gnome-keyring-daemon")),
                    reason="needs dbus-run-session and gnome-keyring-daemon")
def test_a_locked_keyring_is_a_warning_that_says_unlock(tmp_path: Path) -> None:
    """A private bus and keyring (never the suite's shared one), locked, then asked about."""
    code = ("import json, secretstorage\n"
            "from hearthside.app.context import AppContext\nfrom hearthside.app.doctor import check_keyring\n"
            "c = secretstorage.dbus_init(); secretstorage.get_default_collection(c).lock()\n"
            "print(json.dumps(check_keyring(AppContext()).as_dict()))\n")
    script = ('printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1\n'
              f'exec "{sys.executable}" -c "$1"\n')
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": str(tmp_path / "c"),
           "XDG_DATA_HOME": str(tmp_path / "d"), "XDG_STATE_HOME": str(tmp_path / "s")}
    proc = subprocess.run(["dbus-run-session", "--", "sh", "-c", script, "sh", code], capture_output=True,
                          text=True, timeout=60, env=env, check=False)
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert doc["status"] == "warn" and "locked" in doc["detail"] and "unlock" in doc["detail"], doc


def test_packs_installed_before_but_missing_here_point_to_plugins_restore(run_cli, app_paths) -> None:  # type: ignore[no-untyped-def]
    """As after switching to a Hearthside on another Python (the bundle, say): the record lists a
    pack the packs folder no longer holds for this Python."""
    import packfactory

    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", **OFFSCREEN}
    assert run_cli("plugins", "install", str(packfactory.wheels()["hs-good"]), env=offline).returncode == 0
    assert _checks(run_cli("doctor", "--json", env=offline))["packs"]["status"] == "ok"
    v = sys.version_info
    site = app_paths.packs_dir / "env" / "lib" / f"python{v.major}.{v.minor}"
    site.rename(site.with_name("python3.99"))  # the packs now belong to "another Python"
    packs = _checks(run_cli("doctor", "--json", env=offline))["packs"]
    assert packs["status"] == "warn" and packs["data"]["missing"] == ["hs-good"]  # type: ignore[index]
    assert "hs-good installed before but not found here (run 'hearthside plugins restore'" in str(packs["detail"])
    assert run_cli("plugins", "restore", env=offline).returncode == 0
    assert _checks(run_cli("doctor", "--json", env=offline))["packs"]["status"] == "ok"
