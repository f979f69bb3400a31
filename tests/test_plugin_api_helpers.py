"""Plugin API 1.1's helpers for a pack's own service code: folders, keyring secrets, config.

Real parts: the test session's GNOME Keyring, real files under the test's XDG folders, a real
FIFO. Bad input gets one sentence and loses nothing (a corrupt config is never overwritten).
"""

from __future__ import annotations

import json
import os
import stat
import threading
import uuid
from pathlib import Path

import pytest

import hearthside.plugin as api
from hearthside.core.redact import redact

BAD_PACK_NAMES = ["", "Calendar", "-cal", "cal/../x", "../etc", "cal endar", "a" * 65, "ca_l", "cal\n", None, 3]


def _everything(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and not p.is_symlink())


def test_the_folders_are_private_under_xdg_and_outside_every_persona_folder(isolated_home: Path) -> None:
    data = api.pack_data_dir("calendar")
    cache = api.pack_cache_dir("calendar")
    assert data == isolated_home / ".local" / "share" / "hearthside" / "pack-data" / "calendar"
    assert cache == isolated_home / ".cache" / "hearthside" / "calendar"
    for d in (data, cache):
        assert d.is_dir() and stat.S_IMODE(d.stat().st_mode) == 0o700
    assert api.pack_data_dir("calendar") == data  # a second call is the same folder, still there
    personas = isolated_home / ".config" / "hearthside" / "personas"
    assert personas not in data.parents and personas not in cache.parents


@pytest.mark.parametrize("bad", BAD_PACK_NAMES)
def test_a_bad_pack_name_is_refused_by_every_helper_and_creates_nothing(isolated_home: Path, bad: object) -> None:
    for helper in (api.pack_data_dir, api.pack_cache_dir, api.pack_secrets, api.pack_config):
        with pytest.raises(ValueError, match="is not a pack name"):
            helper(bad)  # type: ignore[arg-type]
    assert not (isolated_home / ".local" / "share" / "hearthside").exists()
    assert not (isolated_home / ".cache" / "hearthside").exists()


def test_a_link_in_place_of_the_folder_is_refused(isolated_home: Path, tmp_path: Path) -> None:
    root = isolated_home / ".cache" / "hearthside"
    root.mkdir(parents=True)
    (root / "feeds").symlink_to(tmp_path)
    with pytest.raises(NotADirectoryError, match="is not a folder"):
        api.pack_cache_dir("feeds")


@pytest.mark.keyring
def test_secrets_live_in_the_keyring_only_and_are_masked_everywhere(secret_service, isolated_home: Path) -> None:
    secrets = api.pack_secrets("websearch")
    name, value = "brave/key", f"BSA{uuid.uuid4().hex}"
    assert secrets.get(name) is None
    secrets.set(name, value)
    assert redact(f"the key is {value}") == "the key is ********"  # registered on set
    assert api.pack_secrets("websearch").get(name) == value
    # Under the agreed keyring key, next to Hearthside's own secrets.
    from hearthside.adapters.secrets import KeyringSecretStore

    assert KeyringSecretStore().get(f"pack/websearch/{name}") == value
    assert api.pack_secrets("calendar").get(name) is None  # one pack cannot read another's by name
    assert value.encode() not in _everything(isolated_home)
    secrets.delete(name)
    assert secrets.get(name) is None
    secrets.delete(name)  # deleting what is not there is not an error


@pytest.mark.keyring
def test_a_secret_read_back_in_a_new_process_is_registered_with_the_redactor(
        secret_service, isolated_home: Path) -> None:
    value = f"tvly-{uuid.uuid4().hex}"
    api.pack_secrets("websearch").set("tavily", value)
    import subprocess
    import sys

    code = ("import hearthside.plugin as api; from hearthside.core.redact import redact; "
            "v = api.pack_secrets('websearch').get('tavily'); print(redact('x ' + v))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "x ********"
    api.pack_secrets("websearch").delete("tavily")


@pytest.mark.parametrize("bad", ["", "Key", "/abs", "a/../b", "a b", "x" * 129, "é"])
def test_a_bad_secret_name_is_refused_before_the_keyring_is_asked(bad: str) -> None:
    with pytest.raises(ValueError, match="is not a secret name"):
        api.pack_secrets("calendar").get(bad)


def test_no_recommended_keyring_backend_is_a_sentence_never_a_plaintext_fallback(
        isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With only keyring's fail backend (as on a desktop without a Secret Service), every call
    raises PackSecretError saying what to install, and no file anywhere holds the value."""
    import subprocess
    import sys

    code = """
import keyring.backend, keyring.backends.fail
keyring.backend.get_all_keyring = lambda: [keyring.backends.fail.Keyring()]
import hearthside.plugin as api
try:
    api.pack_secrets("calendar").set("caldav/work", "hunter2-very-secret")
except api.PackSecretError as exc:
    print("refused:", exc)
"""
    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS="unix:path=/nonexistent")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=False, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused: no usable OS keyring was found"), proc.stdout
    assert "install" in proc.stdout
    assert b"hunter2-very-secret" not in _everything(isolated_home)


def test_config_is_one_json_object_written_atomically_and_privately(isolated_home: Path) -> None:
    cfg = api.pack_config("feeds")
    assert cfg.load() == {}
    doc = cfg.update(lambda d: d.setdefault("feeds", []).append({"url": "https://example.org/feed"}))
    assert doc == {"feeds": [{"url": "https://example.org/feed"}]}
    path = api.pack_data_dir("feeds") / "config.json"
    assert json.loads(path.read_text()) == doc
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert api.pack_config("feeds").load() == doc
    leftovers = [p.name for p in path.parent.iterdir() if p.name not in ("config.json", "config.json.lock")]
    assert leftovers == []


def test_concurrent_updates_lose_nothing(isolated_home: Path) -> None:
    cfg = api.pack_config("feeds")

    def add(i: int) -> None:
        for j in range(10):
            cfg.update(lambda d: d.setdefault("n", []).append(f"{i}-{j}"))

    threads = [threading.Thread(target=add, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(cfg.load()["n"]) == sorted(f"{i}-{j}" for i in range(4) for j in range(10))


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe{}", b'"text"'])
def test_a_corrupt_config_is_never_overwritten(isolated_home: Path, content: bytes) -> None:
    path = api.pack_data_dir("calendar") / "config.json"
    path.write_bytes(content)
    cfg = api.pack_config("calendar")
    with pytest.raises(api.PackConfigError, match="calendar pack's settings") as err:
        cfg.load()
    assert "\n" not in str(err.value)
    with pytest.raises(api.PackConfigError):
        cfg.update(lambda d: d.update(calendars={}))
    assert path.read_bytes() == content


def test_a_fifo_config_is_refused_without_blocking_and_left_alone(isolated_home: Path) -> None:
    path = api.pack_data_dir("calendar") / "config.json"
    os.mkfifo(path)
    cfg = api.pack_config("calendar")
    with pytest.raises(api.PackConfigError, match="FIFO"):
        cfg.load()
    with pytest.raises(api.PackConfigError, match="FIFO"):
        cfg.update(lambda d: d.update(x=1))
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_a_fifo_lock_file_is_one_sentence(isolated_home: Path) -> None:
    os.mkfifo(api.pack_data_dir("feeds") / "config.json.lock")
    with pytest.raises(api.PackConfigError, match="is a FIFO"):
        api.pack_config("feeds").update(lambda d: d.update(x=1))


def test_an_update_that_fails_writes_nothing(isolated_home: Path) -> None:
    cfg = api.pack_config("feeds")
    cfg.update(lambda d: d.update(kept=True))
    before = (api.pack_data_dir("feeds") / "config.json").read_bytes()

    def boom(d: dict[str, object]) -> None:
        d["half"] = "done"
        raise RuntimeError("the pack's own bug")

    with pytest.raises(RuntimeError):
        cfg.update(boom)
    with pytest.raises(api.PackConfigError, match="cannot be saved as JSON"):
        cfg.update(lambda d: d.update(when=object()))
    assert (api.pack_data_dir("feeds") / "config.json").read_bytes() == before


@pytest.mark.keyring
def test_a_known_secret_is_refused_in_the_config(secret_service, isolated_home: Path) -> None:
    value = f"pw-{uuid.uuid4().hex}"
    api.pack_secrets("calendar").set("caldav/home", value)
    with pytest.raises(api.PackConfigError, match="secrets go in the keyring"):
        api.pack_config("calendar").update(lambda d: d.update(password=value))
    assert value.encode() not in _everything(isolated_home)
    api.pack_secrets("calendar").delete("caldav/home")


def test_forms_are_checked_by_the_host_rules() -> None:
    from hearthside.core.forms import form_problem

    ok = api.SettingsForm("Calendars", (api.FormField("name", "Name", required=True),
                                        api.FormField("kind", "Kind", kind="choice", choices=("ics", "caldav"))),
                          submit=lambda values: "")
    assert form_problem(ok) == ""
    bad = [
        (object(), "build one with hearthside.plugin.SettingsForm"),
        (api.SettingsForm("", (), submit=lambda v: ""), "form title is empty"),
        (api.SettingsForm("T", (api.FormField("Name", "N"),), submit=lambda v: ""), "field key 'Name'"),
        (api.SettingsForm("T", (api.FormField("a", "A"), api.FormField("a", "B")), submit=lambda v: ""), "twice"),
        (api.SettingsForm("T", (api.FormField("a", "A", kind="secret"),), submit=lambda v: ""),  # type: ignore[arg-type]
         "of kind 'secret'"),
        (api.SettingsForm("T", (api.FormField("a", "A", kind="choice"),), submit=lambda v: ""), "choices"),
        (api.SettingsForm("T", (), submit="not callable"), "no callable submit"),  # type: ignore[arg-type]
        (api.SettingsForm("T", [api.FormField("a", "A")], submit=lambda v: ""), "as a tuple"),  # type: ignore[arg-type]
    ]
    for form, words in bad:
        assert words in form_problem(form), (form, form_problem(form))
