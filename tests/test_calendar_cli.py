"""``hearthside calendar add|list|remove``: the pack's commands on the real CLI, in new processes.

The CalDAV password goes in through standard input, into the keyring; it never appears in the
config, the output or the listing, and ``remove`` deletes it from the keyring too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("secret_service")

ICS = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTAMP:20260101T000000Z\r\n"
       "DTSTART:20261026T120000Z\r\nDTEND:20261026T130000Z\r\nSUMMARY:Lunch\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")


def test_add_list_and_remove_a_file_and_a_caldav_account(run_cli, isolated_home: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "home.ics"
    f.write_text(ICS)
    r = run_cli("calendar", "add", "Home", str(f))
    assert r.returncode == 0, r.stderr
    assert f"Added Home: file {f}." in r.stdout
    # a CalDAV account on a port nobody listens on: added (the password kept), the fetch fails in a sentence
    r = run_cli("calendar", "add", "Team", "http://127.0.0.1:9/dav/ada/work/", "--user", "ada", "--password-stdin",
                input="s3cret-pa55word\n")
    assert r.returncode == 0, r.stderr
    assert "Added Team: CalDAV http://127.0.0.1:9/dav/ada/work/ as ada." in r.stdout
    assert "Team: cannot reach 127.0.0.1" in r.stdout
    assert "s3cret-pa55word" not in r.stdout + r.stderr
    r = run_cli("calendar", "list", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [
        {"name": "Home", "kind": "file", "source": str(f), "user": ""},
        {"name": "Team", "kind": "caldav", "source": "http://127.0.0.1:9/dav/ada/work/", "user": "ada"},
    ]
    for path in isolated_home.rglob("*"):
        if path.is_file() and path.stat().st_size < 5_000_000:
            assert b"s3cret-pa55word" not in path.read_bytes(), path
    from hearthside_calendar import store

    [_, team] = store.entries()
    assert store.password_of(team) == "s3cret-pa55word"  # in the keyring
    r = run_cli("calendar", "remove", "Team")
    assert r.returncode == 0 and "Removed Team." in r.stdout, r.stderr
    from hearthside.plugin import pack_secrets

    assert pack_secrets("calendar").get(f"{team.id}/password") is None
    r = run_cli("calendar", "list")
    assert r.stdout.strip() == f"Home: file {f}"


def test_bad_sources_are_one_sentence_on_the_cli(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("calendar", "add", "Web", "http://example.com/cal.ics")
    assert r.returncode != 0
    assert "plain http:// is allowed only to this computer (127.0.0.1 or [::1]); use https:// for example.com" \
        in r.stderr
    r = run_cli("calendar", "remove", "Nope")
    assert r.returncode != 0 and "there is no calendar named 'Nope'" in r.stderr
