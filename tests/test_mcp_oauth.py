"""OAuth sign-in to a remote MCP server: a real server protected by the ``mcp`` SDK's own auth
(authorization server and resource server, tests/oauth_server.py) on 127.0.0.1, the real
``hearthside`` command in a new process, the real keyring. The "browser" is this test's HTTP
client following the printed authorization URL to Hearthside's loopback listener."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hearthside.adapters.secrets import KeyringSecretStore
from mcp_helpers import free_port, mcp_file, secret_key, wait_port

pytestmark = pytest.mark.keyring

HERE = Path(__file__).resolve().parent


class OAuthServer:
    def __init__(self, tmp: Path, lifetime: int = 3600, evil_token_endpoint: str | None = None,
                 port: int | None = None) -> None:
        self.port = port or free_port()
        self.log = tmp / f"oauth-{self.port}.jsonl"
        args = [sys.executable, str(HERE / "oauth_server.py"), "--port", str(self.port), "--log", str(self.log),
                "--lifetime", str(lifetime)]
        if evil_token_endpoint:
            args += ["--evil-token-endpoint", evil_token_endpoint]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_port(self.port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(ln) for ln in self.log.read_text().splitlines() if ln.strip()]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def oauth_server(tmp_path: Path) -> Iterator[OAuthServer]:
    srv = OAuthServer(tmp_path)
    yield srv
    srv.stop()


def _hearthside(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hearthside", *args], capture_output=True, text=True,
                          input=input, timeout=180, check=False)


class Browser:
    """Visits the first http(s) line the login prints, following the redirects (the
    authorization server approves at once and sends the browser to the loopback callback)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.url = ""
        self.status: int | None = None
        self.lines: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith("http") and not self.url:
                self.url = line.strip()
                try:
                    with urllib.request.urlopen(self.url, timeout=60) as r:
                        self.status = r.status
                except urllib.error.HTTPError as exc:
                    self.status = exc.code


def login(name: str) -> tuple[subprocess.CompletedProcess[str], Browser]:
    proc = subprocess.Popen([sys.executable, "-m", "hearthside", "mcp", "login", name, "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    browser = Browser(proc)
    proc.wait(180)
    browser.thread.join(60)
    assert proc.stderr is not None
    done = subprocess.CompletedProcess(proc.args, proc.returncode, "".join(browser.lines), proc.stderr.read())
    return done, browser


def _keys(home: Path, name: str) -> list[str]:
    return [secret_key(mcp_file(home), f"mcp/{name}/oauth/{what}") for what in ("tokens", "client")]


def _everything(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file() and not p.is_symlink())


def _auth(name: str) -> str:
    listing = _hearthside("mcp", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    return str({e["name"]: e for e in json.loads(listing.stdout)}[name]["auth"])


@pytest.mark.slow
def test_sign_in_call_refresh_logout_and_no_copy_anywhere(  # type: ignore[no-untyped-def]
    secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    # Tokens live long enough for the first call to use the first one even on a busy machine.
    srv = OAuthServer(tmp_path, lifetime=8)
    try:
        assert _hearthside("mcp", "add", "notes", "--url", srv.url, "--timeout", "20").returncode == 0
        assert _auth("notes") == "none"

        # before signing in, a connection says so, with the command to run
        before = _hearthside("mcp", "tools", "notes")
        assert before.returncode == 1
        assert "needs you to sign in" in before.stderr and "hearthside mcp login notes" in before.stderr
        assert "SignInNeeded" not in before.stderr
        assert _auth("notes") == "needs sign-in"

        signed_in = time.monotonic()
        done, browser = login("notes")
        assert done.returncode == 0, done.stderr
        assert browser.status == 200
        assert "signed in to notes" in done.stdout
        assert "code_challenge_method=S256" in browser.url and "resource=" in browser.url
        assert _auth("notes") == "signed in"
        events = srv.events()
        assert next(e for e in events if e["event"] == "authorize")["resource"] == srv.url
        tokens_doc = json.loads(KeyringSecretStore().get(_keys(isolated_home, "notes")[0]))
        access, refresh = tokens_doc["token"]["access_token"], tokens_doc["token"]["refresh_token"]

        # a call with the token
        tools = _hearthside("mcp", "tools", "notes", "--json")
        assert tools.returncode == 0, tools.stderr
        assert [t["tool"] for t in json.loads(tools.stdout)] == ["whoami"]
        assert any(e["event"] == "mcp" and e["bearer"] == access for e in srv.events())

        # the access token expires (8 s); the next connection refreshes silently
        time.sleep(max(0.0, signed_in + 9 - time.monotonic()))
        again = _hearthside("mcp", "tools", "notes", "--json")
        assert again.returncode == 0, again.stderr
        assert any(e["event"] == "token" and e["grant"] == "refresh_token" for e in srv.events())
        new_doc = json.loads(KeyringSecretStore().get(_keys(isolated_home, "notes")[0]))
        assert new_doc["token"]["access_token"] != access
        assert _auth("notes") == "signed in"

        # no copy: neither token in any file under HOME/XDG (logs included) nor in any output
        every = _everything(isolated_home)
        for value in (access, refresh, new_doc["token"]["access_token"], new_doc["token"]["refresh_token"]):
            assert value.encode() not in every
            for out in (done.stdout, done.stderr, tools.stdout, tools.stderr, again.stdout, again.stderr):
                assert value not in out

        # sign out: every keyring entry goes, and the server is asked to revoke
        out = _hearthside("mcp", "logout", "notes")
        assert out.returncode == 0, out.stderr
        assert all(KeyringSecretStore().get(k) is None for k in _keys(isolated_home, "notes"))
        logs = b"".join(p.read_bytes() for p in isolated_home.rglob("*.log"))
        assert any(e["event"] == "revoke" for e in srv.events()), logs[-3000:]
        assert _auth("notes") == "none"
    finally:
        srv.stop()


@pytest.mark.slow
def test_a_refresh_that_fails_says_sign_in_expired(  # type: ignore[no-untyped-def]
    secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    # The token must outlive the check `mcp login` makes right after signing in, even on a busy
    # machine, and be expired by the time `mcp tools` needs it.
    srv = OAuthServer(tmp_path, lifetime=6)
    try:
        assert _hearthside("mcp", "add", "mail", "--url", srv.url, "--timeout", "20").returncode == 0
        started = time.monotonic()
        done, _ = login("mail")
        assert done.returncode == 0, done.stderr
    finally:
        srv.stop()
    # the authorization server restarts and has forgotten every token: the refresh fails
    time.sleep(max(0.0, started + 7 - time.monotonic()))
    srv2 = OAuthServer(tmp_path, lifetime=1, port=srv.port)
    try:
        failed = _hearthside("mcp", "tools", "mail")
        assert failed.returncode == 1
        assert "sign-in expired" in failed.stderr and "hearthside mcp login mail" in failed.stderr
        assert _auth("mail") == "sign-in expired"
    finally:
        srv2.stop()


def _set_keyring_locked(locked: bool) -> None:
    """Lock or unlock this worker's GNOME keyring without a prompt: locking is the Secret
    Service's own call; unlocking uses gnome-keyring's master-password call with the password
    tests/privatebus.py started the daemon with (the standard Unlock would ask for a prompt)."""
    import secretstorage
    from jeepney import DBusAddress, new_method_call
    from privatebus import PASSWORD
    from secretstorage.util import format_secret, open_session

    conn = secretstorage.dbus_init()
    try:
        coll = secretstorage.get_default_collection(conn)
        if locked:
            coll.lock()
        else:
            service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                                  interface="org.freedesktop.Secret.Service")
            (path,) = conn.send_and_get_reply(new_method_call(service, "ReadAlias", "s", ("default",))).body
            guilty = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                                 interface="org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface")
            secret = format_secret(open_session(conn), PASSWORD, "text/plain")
            conn.send_and_get_reply(new_method_call(guilty, "UnlockWithMasterPassword", "o(oayays)", (path, secret)))
        assert coll.is_locked() is locked
    finally:
        conn.close()


@pytest.mark.slow
def test_a_keyring_locked_during_refresh_is_one_sentence_and_writes_nothing(  # type: ignore[no-untyped-def]
    secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    srv = OAuthServer(tmp_path, lifetime=6)
    try:
        assert _hearthside("mcp", "add", "drive", "--url", srv.url, "--timeout", "20").returncode == 0
        started = time.monotonic()
        done, _ = login("drive")
        assert done.returncode == 0, done.stderr
        doc = json.loads(KeyringSecretStore().get(_keys(isolated_home, "drive")[0]))
        access, refresh = doc["token"]["access_token"], doc["token"]["refresh_token"]
        # the access token expires; the next connection would refresh, but the keyring is locked
        time.sleep(max(0.0, started + 7 - time.monotonic()))
        _set_keyring_locked(True)
        try:
            failed = _hearthside("mcp", "tools", "drive")
            every = _everything(isolated_home)
        finally:
            _set_keyring_locked(False)
        assert failed.returncode == 1
        assert "Traceback" not in failed.stderr
        sentence = failed.stderr.strip()
        assert "\n" not in sentence and "keyring is locked" in sentence and "drive" in sentence, sentence
        for value in (access, refresh):
            assert value.encode() not in every and value not in failed.stdout + failed.stderr
        # the sign-in survived: once unlocked, the connection refreshes and works
        again = _hearthside("mcp", "tools", "drive", "--json")
        assert again.returncode == 0, again.stderr
        assert [t["tool"] for t in json.loads(again.stdout)] == ["whoami"]
        assert any(e["event"] == "token" and e["grant"] == "refresh_token" for e in srv.events())
        assert _auth("drive") == "signed in"
    finally:
        srv.stop()


def test_remove_deletes_the_sign_in(  # type: ignore[no-untyped-def]
    secret_service, isolated_home: Path, oauth_server: OAuthServer
) -> None:
    assert _hearthside("mcp", "add", "tasks", "--url", oauth_server.url, "--timeout", "20").returncode == 0
    done, _ = login("tasks")
    assert done.returncode == 0, done.stderr
    keys = _keys(isolated_home, "tasks")
    assert KeyringSecretStore().get(keys[0]) is not None and KeyringSecretStore().get(keys[1]) is not None
    # the sign-in is the server's own: tidying orphaned secrets leaves it alone
    assert _hearthside("mcp", "forget-orphans").returncode == 0
    assert KeyringSecretStore().get(keys[0]) is not None and KeyringSecretStore().get(keys[1]) is not None
    assert _hearthside("mcp", "remove", "tasks").returncode == 0
    assert all(KeyringSecretStore().get(k) is None for k in keys)


def test_a_token_endpoint_on_another_site_is_refused(  # type: ignore[no-untyped-def]
    secret_service, isolated_home: Path, tmp_path: Path
) -> None:
    evil_port = free_port()
    srv = OAuthServer(tmp_path, evil_token_endpoint=f"http://127.0.0.1:{evil_port}/token")
    try:
        assert _hearthside("mcp", "add", "code", "--url", srv.url, "--timeout", "20").returncode == 0
        done, browser = login("code")
    finally:
        srv.stop()
    assert done.returncode == 1
    assert browser.url == ""  # no browser was sent anywhere
    assert "another site" in done.stderr and "refused" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert all(KeyringSecretStore().get(k) is None for k in _keys(isolated_home, "code")[:1])


def test_the_redirect_listener_refuses_a_wrong_or_replayed_state_and_keeps_waiting() -> None:
    from hearthside.adapters.mcp_oauth import LoopbackCallback, SignInError

    async def scenario() -> tuple[list[int], str, int]:
        listener = LoopbackCallback(timeout=60)
        await listener.start()
        listener.expect(f"https://as.example/authorize?state=right-state&redirect_uri={listener.redirect_uri}")
        base = listener.redirect_uri

        def visit(query: str) -> int:
            try:
                with urllib.request.urlopen(f"{base}?{query}", timeout=30) as r:
                    return int(r.status)
            except urllib.error.HTTPError as exc:
                return exc.code
            except OSError:
                return -1

        statuses = [await asyncio.to_thread(visit, "code=stolen&state=wrong-state"),
                    await asyncio.to_thread(visit, "code=nostate")]
        waiter = asyncio.ensure_future(listener.wait("demo"))
        statuses.append(await asyncio.to_thread(visit, "code=good-code&state=right-state"))
        result = await waiter
        replay = await asyncio.to_thread(visit, "code=good-code&state=right-state")
        # a listener that never hears back closes and says the sign-in timed out
        late = LoopbackCallback(timeout=0.2)
        await late.start()
        late.expect("https://as.example/authorize?state=s")
        with pytest.raises(SignInError, match="timed out"):
            await late.wait("demo")
        return statuses, result.code, replay

    statuses, code, replay = asyncio.run(scenario())
    assert statuses == [400, 400, 200]
    assert code == "good-code"
    assert replay in (400, -1)  # refused, or the listener is already closed


def test_login_of_a_local_server_is_one_sentence(isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    assert _hearthside("mcp", "add", "local", "--command", sys.executable, "--", "-c", "pass").returncode == 0
    done = _hearthside("mcp", "login", "local", "--no-browser")
    assert done.returncode == 1
    assert "only remote servers sign in" in done.stderr
