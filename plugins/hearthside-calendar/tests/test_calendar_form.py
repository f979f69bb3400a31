"""hearthside-calendar: the "Calendars" settings form and the ``calendar`` command as the host loads them."""

from __future__ import annotations

from pathlib import Path

from hearthside.pluginhost.host import PackHost, discover

ICS = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTAMP:20260101T000000Z\r\n"
       "DTSTART:20261026T120000Z\r\nSUMMARY:Lunch\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")


def _form():  # type: ignore[no-untyped-def]
    host = PackHost()
    [report] = host.load(discover(only_dists=["hearthside-calendar"]))
    assert report.status == "ok", report.error
    assert "calendar" in host.commands
    [form] = host.forms["calendar"]
    return form


def test_the_form_adds_lists_and_removes_a_calendar(tmp_path: Path) -> None:
    form = _form()
    assert form.title == "Calendars" and form.submit_label == "Add calendar"
    assert [f.kind for f in form.fields if f.key == "password"] == ["password"]
    f = tmp_path / "home.ics"
    f.write_text(ICS)
    assert form.submit({"name": "Home", "source": str(f), "user": "", "password": ""}) == ""
    [(key, line)] = form.items()
    assert line == f"Home: file {f}"
    assert form.remove(key) == ""
    assert list(form.items()) == []


def test_the_form_answers_bad_input_with_one_sentence(tmp_path: Path) -> None:
    form = _form()
    assert form.submit({"name": "Web", "source": "http://example.com/x.ics"}) == (
        "Plain http:// is allowed only to this computer (127.0.0.1 or [::1]); use https:// for example.com.")
    assert form.submit({"name": "", "source": "/x.ics"}) == "Give the calendar a name."
    fifo = tmp_path / "pipe.ics"
    import os

    os.mkfifo(fifo)
    said = form.submit({"name": "Pipe", "source": str(fifo)})
    assert said == (f"Pipe: {fifo} is a named pipe (FIFO), not a regular file; it was not read "
                    "(the calendar was added; it will be tried again).")
