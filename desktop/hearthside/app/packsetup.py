"""What the first-run window and Settings ask of packs, through the forms the packs registered.

The welcome window's *Add your calendar* and the Settings window's search-provider key go
through the same :class:`~hearthside.core.forms.SettingsForm` a pack draws on its Plugins page,
looked up in the loaded host — never by importing the pack. So the window works with whatever
calendar or search pack is installed, a pack that is missing or broken is one sentence, and the
pack alone decides where its data and secrets go (its config and the keyring).

Every function here may load packs and do I/O: call them on a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.forms import FormField, SettingsForm
from ..core.redact import register_secret
from .plugins import PROVIDER_KEY, PluginService
from .settings import SettingsStore

#: The first-party calendar pack and the title of its form (plugins/hearthside-calendar).
CALENDAR_PACK = "calendar"
CALENDAR_FORM = "Calendars"


def _sentence(text: str) -> str:
    text = " ".join(text.split())[:500]
    return (text[:1].upper() + text[1:]).rstrip(".") + "." if text else ""


def callback_failed(what: str, exc: BaseException) -> str:
    """What a person is told when a pack's form callback raised (``what``: "pack's form")."""
    detail = " ".join(str(exc).split())[:300]
    return f"The {what} failed: {type(exc).__name__}{': ' + detail if detail else ''}."


def callback_answer(got: object, what: str, tidy: bool = True) -> str:
    """A form callback's answer as a sentence ("" is success); anything but text is named, not
    shown raw. ``tidy`` makes it a sentence (capital, full stop); else it is only one line."""
    if got is None or got == "":
        return ""
    if isinstance(got, str):
        return _sentence(got) if tidy else " ".join(got.split())[:500]
    return f"The {what} answered {type(got).__name__} instead of a sentence."


def _blank(form: SettingsForm) -> dict[str, str]:
    """Every field as the Plugins window sends it when left empty ("false" for a check box)."""
    return {f.key: "false" if f.kind == "bool" else "" for f in form.fields}


def find_form(plugins: PluginService, pack: str, title: str) -> SettingsForm | None:
    """The healthy pack's form called ``title``, or None when the pack is missing or broken."""
    return next((f for f in plugins.settings_forms(pack) if f.title == title), None)


# --- the welcome window: a calendar --------------------------------------------------------

def add_calendar(plugins: PluginService, name: str, source: str) -> str:
    """Add a calendar (a file path or an ICS address) through the calendar pack's own form.

    "" when it was added and could be read; otherwise one sentence: the pack's (an address
    that is not https, one that does not answer) or why the pack cannot take it.
    """
    name, source = name.strip(), source.strip()
    if not source:
        return "Give a calendar file or an ICS address (https:// or webcal://) first."
    if not name:
        return "Give the calendar a name."
    form = find_form(plugins, CALENDAR_PACK, CALENDAR_FORM)
    if form is None:
        return ("The calendar pack is not loaded, so calendars cannot be added here; the Plugins window "
                "says why.")
    values = _blank(form)
    values.update(name=name, source=source)
    try:
        return callback_answer(form.submit(values), "calendar pack's form")
    except Exception as exc:  # noqa: BLE001 - a pack's bug is a sentence, never a broken window
        return callback_failed("calendar pack's form", exc)


# --- the Settings window: the search provider -----------------------------------------------

@dataclass(frozen=True)
class ProviderChoice:
    """A registered search provider, and whether it waits for an API key.

    ``key_form`` is its pack's form that takes the key (a ``choice`` field offering the
    provider's name and one ``password`` field); ``has_key`` is None when the provider needs no
    key (or its pack has no such form), else whether the pack lists a key for it.
    """

    name: str
    pack: str
    key_form: SettingsForm | None = None
    choice_field: str = ""
    key_field: str = ""
    has_key: bool | None = None
    key_note: str = ""  # the pack's own line for the key ("Brave Search: key set"), never the key

    @property
    def needs_key(self) -> bool:
        return self.has_key is False


@dataclass(frozen=True)
class ProviderState:
    """What the Settings window shows: the providers, the saved choice, and the one in use."""

    choices: tuple[ProviderChoice, ...]
    saved: str  # the search.provider setting, "" when unset
    in_use: str  # the provider searches go to now, "" when none

    def find(self, name: str) -> ProviderChoice | None:
        return next((c for c in self.choices if c.name == name), None)


def _key_fields(form: SettingsForm, provider: str) -> tuple[FormField, FormField] | None:
    """(choice field, password field) when ``form`` takes an API key for ``provider``."""
    choice = next((f for f in form.fields if f.kind == "choice" and provider in f.choices), None)
    secret = [f for f in form.fields if f.kind == "password"]
    others = [f for f in form.fields if f is not choice and f not in secret]
    if choice is None or len(secret) != 1 or any(f.required for f in others):
        return None
    return choice, secret[0]


def _choice(plugins: PluginService, name: str, pack: str) -> ProviderChoice:
    for form in plugins.settings_forms(pack):
        fields = _key_fields(form, name)
        if fields is None:
            continue
        has_key: bool | None = None
        note = ""
        if form.items is not None:
            try:
                notes = [str(text) for key, text in form.items() if key == name]
            except Exception:  # noqa: BLE001 - the pack cannot say: no key line; searches will tell
                notes = []
            else:
                has_key = bool(notes)
            note = " ".join(" ".join(notes[:1]).split())[:200]
        return ProviderChoice(name, pack, form, fields[0].key, fields[1].key, has_key, note)
    return ProviderChoice(name, pack)


def provider_state(plugins: PluginService, settings: SettingsStore) -> ProviderState:
    """Every registered provider (in registration order) with its key status."""
    choices = tuple(_choice(plugins, p.name, pack) for p, pack in plugins.providers())
    saved = settings.get(PROVIDER_KEY)
    in_use = plugins.search_provider()
    return ProviderState(choices, saved if isinstance(saved, str) else "", in_use.name if in_use else "")


def choose_provider(plugins: PluginService, settings: SettingsStore, name: str) -> ProviderState:
    """Save ``name`` as ``search.provider`` (only a registered provider) and return the new state."""
    if name not in {p.name for p, _ in plugins.providers()}:
        raise ValueError(f"No pack offers a web search called {name!r}; nothing was saved.")
    settings.set(PROVIDER_KEY, name)
    return provider_state(plugins, settings)


def save_provider_key(choice: ProviderChoice, key: str) -> str:
    """Hand the API key to the provider's pack form (which keeps it in the keyring); "" or a
    sentence. The key is masked in every log from now on, and never written by Hearthside."""
    if choice.key_form is None:
        return f"The {choice.name} search needs no key here."
    key = key.strip()
    if not key:
        return "Paste the API key first; nothing was stored."
    register_secret(key)
    values = _blank(choice.key_form)
    values.update({choice.choice_field: choice.name, choice.key_field: key})
    try:
        return callback_answer(choice.key_form.submit(values), f"{choice.pack} pack's form")
    except Exception as exc:  # noqa: BLE001 - as above
        return callback_failed(f"{choice.pack} pack's form", exc)
