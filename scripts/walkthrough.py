"""Walk the app as a person would and screenshot each step: first start -> welcome -> model ->
chat with an approval (denied) -> check-in notification -> hand edit -> review -> approve.

The real Shell, tray and windows, clicks and typing on the real widgets, a fresh HOME, the
loopback fake model from tests/. Run under an X server with a tray host and a keyring, e.g.:
    Xvfb :57 -screen 0 1100x760x24 & DISPLAY=:57 trayer --edge top --align right &
    DISPLAY=:57 QT_QPA_PLATFORM=xcb dbus-run-session -- sh -c \
      'printf x | gnome-keyring-daemon --unlock --components=secrets; .venv/bin/python scripts/walkthrough.py OUTDIR'
"""
import os, subprocess, sys, tempfile, time, json
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]; sys.path.insert(0, str(ROOT / "tests"))
home = Path(tempfile.mkdtemp(prefix="walk-"))
for k, v in {"HOME": home, "XDG_CONFIG_HOME": home/".config", "XDG_DATA_HOME": home/".local/share",
             "XDG_STATE_HOME": home/".local/state", "XDG_CACHE_HOME": home/".cache", "XDG_RUNTIME_DIR": home/"run"}.items():
    os.environ[k] = str(v)
(home/"run").mkdir(mode=0o700)
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "walkthrough"); OUT.mkdir(parents=True, exist_ok=True)
from fakemodel import FakeModel
from PySide6.QtWidgets import QApplication
from PySide6.QtCore import QTimer
qapp = QApplication(sys.argv[:1]); qapp.setQuitOnLastWindowClosed(False)
from hearthside.app.context import AppContext
from hearthside.ui.app import Shell
from hearthside.ui.tray import TrayController

def pump(sec):
    end = time.monotonic() + sec
    while time.monotonic() < end:
        qapp.processEvents(); time.sleep(0.02)
def until(cond, sec=30, what=""):
    end = time.monotonic() + sec
    while time.monotonic() < end:
        qapp.processEvents()
        if cond(): return True
        time.sleep(0.05)
    print("TIMEOUT waiting for", what); return False
def shot(name):
    pump(0.6); subprocess.run(["import", "-window", "root", str(OUT / name)], check=True); print("shot", name)

fm = FakeModel(default={"text": "HEARTBEAT_OK"})
fm.__enter__()
app = AppContext()
shell = Shell(app, opener=lambda p: True)
tray = TrayController(shell)
print('mode', tray.show())
shell.start()
until(lambda: shell.started and shell.rows_loaded, 60, "start")
from hearthside.ui.windows.welcome import WelcomeWindow
until(lambda: isinstance(shell.windows.get("welcome"), WelcomeWindow), 30, "welcome")
w = shell.windows["welcome"]; w.move(0, 30)
shot("01-welcome-empty.png")
from PySide6.QtTest import QTest
QTest.keyClicks(w.name_edit, "Juniper"); QTest.keyClicks(w.call_me_edit, "Sam")
QTest.keyClicks(w.character_edit, "Calm, kind and a little dry-humoured.")
shot("02-welcome-filled.png")
w.persona_button.click()
until(lambda: w.pages.currentIndex() == 1, 30, "model page")
shot("03-model-step.png")
# "Other" endpoint: the loopback fake model
idx = next((i for i in range(w.provider_box.count()) if "other" in w.provider_box.itemText(i).lower()), -1)
print("providers:", [w.provider_box.itemText(i) for i in range(w.provider_box.count())])
if idx < 0: idx = w.provider_box.count() - 1
w.provider_box.setCurrentIndex(idx)
w.endpoint_edit.setText(""); QTest.keyClicks(w.endpoint_edit, fm.base_url)
w.model_edit.setText(""); QTest.keyClicks(w.model_edit, "fake-model")
w.test_button.click(); pump(3)
shot("04-model-tested.png")
w.save_button.click(); pump(2)
shot("05-model-saved.png")
try: w.finish_button.click()
except Exception as e: print("finish:", e)
pump(1)
until(lambda: [r.name for r in shell.rows] == ["Juniper"], 30, "row")
# tray menu
tray.rebuild_menu(); g = tray.tray.geometry() if tray.tray else None
print("tray available:", tray.tray is not None, g)
if tray.tray is not None:
    tray.menu.popup(g.center()); pump(1); shot("06-tray-menu.png"); tray.menu.hide()
# chat: the model asks to Write SOUL.md-adjacent note; we deny
fm.add({"tool_calls": [("Write", json.dumps({"path": "notes/today.md", "content": "- call the plumber"}))]},
       {"text": "All right, I won't write it. I'll just remind you: call the plumber before noon."})
app.settings.set("files.workspace", str(home / "Documents")); (home/"Documents").mkdir()
c = shell.show_chat("Juniper"); pump(1); c.move(0, 30)
QTest.keyClicks(c.input, "Note: call the plumber before noon") if hasattr(c, "input") else None
send = getattr(c, "send_button", None)
if send is not None: send.click()
until(lambda: c.approval.isVisible(), 30, "approval")
shot("07-chat-approval.png")
deny = getattr(c, "deny_button", None)
if deny is not None: deny.click()
pump(4); shot("08-chat-denied.png")
print("model told:", any("did not allow" in json.dumps(r) or "denied" in json.dumps(r).lower() for r in fm.requests[-1:]))
c.hide()
# check-in with an alert
folder = app.personas.list()[0].path
(folder / "HEARTBEAT.md").write_text("# Check-in\n\n- Remind me of meetings in the next hour.\n")
fm.add({"text": "The 3pm sync with Ana starts in ten minutes."})
shell.check_in_now("Juniper") if hasattr(shell, "check_in_now") else None
until(lambda: any(e.status == "notified" for e in app.notifications.entries()), 60, "check-in alert")
shot("09-checkin-notification.png")
n = shell.show_notifications(); pump(1); n.move(0, 30); shot("10-notifications.png"); n.hide()
# hand edit of SOUL.md (atomic save from outside)
soul = folder / "SOUL.md"; tmp = folder / ".SOUL.md.swp"
tmp.write_text(soul.read_text() + "\nShe likes tidy lists.\n"); os.replace(tmp, soul)
until(lambda: len(shell.waiting()) > 0, 10, "badge")
pump(1.5); shot("11-badge-and-notice.png")
r = shell.show_review(); pump(1.5); r.move(0, 30); shot("12-review.png")
r.approve_button.click() if hasattr(r, "approve_button") else None
pump(2); shot("13-approved.png")
print("rows:", [(x.name, getattr(x, "waiting", None)) for x in shell.rows])
shell.quitting = True
for win in list(shell.windows.values()): win.hide()
shell.lifecycle.stop(); shell.bridge.close(); fm.__exit__(None, None, None)
print("done")
