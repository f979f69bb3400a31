"""Hole 9 of issue 18: an install spec's credentials are never stored or shown.

``hearthside plugins install 'hs-good @ http://user:TOKEN@127.0.0.1:PORT/hs_good-….whl'`` saved
the token in ``installed-packs.json`` (the old code only cleaned a spec that was a bare URL).
Here a real wheel is served over loopback HTTP behind basic auth, installed by the real command
with real pip; afterwards the token is in no file under HOME (every XDG folder is inside it) and
in no output, and ``plugins restore`` asks for the credentials instead of guessing.
"""

from __future__ import annotations

import base64
import http.server
import json
import secrets
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import packfactory
import pytest

OFFLINE = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": ""}


class _Server:
    def __init__(self, wheel: Path, user: str, password: str) -> None:
        self.wheel, self.authorized = wheel, 0
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="packs"')
                    self.end_headers()
                    return
                if urllib.parse.urlsplit(self.path).path != "/" + outer.wheel.name:
                    self.send_error(404)
                    return
                outer.authorized += 1
                body = outer.wheel.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()


@pytest.fixture
def token() -> str:
    return "hs-pack-token-" + secrets.token_hex(12)


@pytest.fixture
def server(token: str) -> Iterator[_Server]:
    s = _Server(packfactory.wheels()["hs-good"], "packer", token)
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def _files_holding(root: Path, needles: list[str]) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_symlink() or not p.is_file():
            continue
        data = p.read_bytes()
        hits.extend(f"{p} holds {n!r}" for n in needles if n.encode() in data)
    return hits


def test_a_spec_with_a_token_leaves_it_in_no_file_and_no_output(run_cli, isolated_home: Path, app_paths,  # type: ignore[no-untyped-def]
                                                               server: _Server, token: str) -> None:
    url = f"http://packer:{token}@127.0.0.1:{server.port}/{server.wheel.name}"
    spec = f"hs-good @ {url}"
    proc = run_cli("plugins", "install", spec, env=OFFLINE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert server.authorized >= 1  # pip really fetched it with the credentials
    assert "installed hs-good 1.0.0" in proc.stdout
    needles = [token, base64.b64encode(f"packer:{token}".encode()).decode()]
    assert not [n for n in needles if n in proc.stdout + proc.stderr]

    record = json.loads(app_paths.installed_packs_file.read_text())
    [entry] = record["packs"]
    assert entry["spec"] == f"hs-good @ http://127.0.0.1:{server.port}/{server.wheel.name}"
    assert entry["credentials_removed"] is True
    assert not _files_holding(isolated_home, needles)

    listed = run_cli("plugins", "list", "--json")
    assert listed.returncode == 0 and token not in listed.stdout + listed.stderr

    # restore cannot reinstall without the credentials, and says so (never falling back to a
    # public index, where the same name may be someone else's pack)
    import shutil

    shutil.rmtree(app_paths.packs_dir)
    before = server.authorized
    proc = run_cli("plugins", "restore", env=OFFLINE)
    assert proc.returncode == 1
    assert "user name, password or token, which Hearthside never stores" in proc.stdout
    assert server.authorized == before
    assert not _files_holding(isolated_home, needles)


@pytest.mark.parametrize(("spec", "public", "secret"), [
    ("hs-good @ https://user:s3cr3tpass@host.example/x.whl", "hs-good @ https://host.example/x.whl", "s3cr3tpass"),
    ("https://host.example/x.whl?X-Amz-Signature=abcdef123&X-Amz-Credential=AKIDEXAMPLE&v=2",
     "https://host.example/x.whl?v=2", "abcdef123"),
    ("https://host.example/x.whl?sig=zzzz9999&auth=yyyy8888", "https://host.example/x.whl", "zzzz9999"),
    ("git+https://ghp_abcdefghijklmnopqrstuvwx@github.com/o/r.git#egg=pack",
     "git+https://github.com/o/r.git#egg=pack", "ghp_abcdefghijklmnopqrstuvwx"),
    ("https://host.example/ghp_abcdefghijklmnopqrstuvwx/x.whl", "https://host.example/********/x.whl",
     "ghp_abcdefghijklmnopqrstuvwx"),
    ("https://host.example/x.whl#hidden-token-value", "https://host.example/x.whl", "hidden-token-value"),
    ("https://host.example/x.whl#sha256=abc", "https://host.example/x.whl#sha256=abc", ""),
    ("hs-good==1.0", "hs-good==1.0", ""),
])
def test_the_public_form_of_a_spec_keeps_nothing_secret(spec: str, public: str, secret: str) -> None:
    from hearthside.pluginhost.installer import split_spec

    got = split_spec(spec)
    assert got.text == public
    assert (secret in got.removed) if secret else not got.removed
    if secret:
        assert secret not in got.text


def test_an_old_record_holding_a_token_is_cleaned_when_restore_reads_it(run_cli, app_paths, token: str) -> None:  # type: ignore[no-untyped-def]
    app_paths.installed_packs_file.parent.mkdir(parents=True, exist_ok=True)
    app_paths.installed_packs_file.write_text(json.dumps({"version": 1, "packs": [
        {"name": "hs-good", "spec": f"hs-good @ http://u:{token}@127.0.0.1:9/x.whl", "version": "1.0.0"}]}))
    proc = run_cli("plugins", "restore", env=OFFLINE)
    assert proc.returncode == 1 and token not in proc.stdout + proc.stderr
    assert "never stores" in proc.stdout
    assert token not in app_paths.installed_packs_file.read_text()
