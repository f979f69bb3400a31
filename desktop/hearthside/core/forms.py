"""A pack's settings form, as data (plugin API 1.1): what to ask, and whom to hand the answers.

A pack describes its form (fields, a submit callback, optionally the list of what is configured
and a way to remove one); the Plugins window draws it. The form is plain data so a pack never
touches Qt, and so the host can check a form before any window shows it: a malformed form
disables its pack at load time with one sentence, instead of breaking the window later.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

#: The kinds of field a form may have; ``password`` is drawn masked and never pre-filled.
FIELD_KINDS: tuple[str, ...] = ("text", "password", "url", "path", "choice", "bool")
FieldKind = Literal["text", "password", "url", "path", "choice", "bool"]

#: A field's key: what the submit callback's mapping is keyed by.
FIELD_KEY_RX = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

#: Bounds that keep one pack from drawing an endless form.
MAX_FIELDS = 20
MAX_TITLE = 80
MAX_LABEL = 80
MAX_HELP = 1000
MAX_CHOICES = 50


@dataclass(frozen=True)
class FormField:
    """One input of a :class:`SettingsForm`. Its value reaches ``submit`` as a string
    (``bool`` as ``"true"``/``"false"``, ``choice`` as one of ``choices``)."""

    key: str
    label: str
    kind: FieldKind = "text"
    help: str = ""
    choices: tuple[str, ...] = ()
    required: bool = False
    placeholder: str = ""


@dataclass(frozen=True)
class SettingsForm:
    """A form on the pack's page in the Plugins window.

    ``submit`` gets the entered values and returns "" on success or one sentence for the user;
    password fields arrive there and the pack keeps them in ``pack_secrets``, never in its
    config. ``items`` lists what is configured as ``(key, one-line description)`` (no secret in
    the description); ``remove(key)`` removes one ("" or one sentence). Every callback is
    called on a worker thread, never the Qt thread, and may do I/O.
    """

    title: str
    fields: tuple[FormField, ...]
    submit: Callable[[Mapping[str, str]], str]
    submit_label: str = "Save"
    items: Callable[[], Sequence[tuple[str, str]]] | None = None
    remove: Callable[[str], str] | None = None
    help: str = ""


def _text(value: object, what: str, limit: int, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        return f"its {what} is {type(value).__name__}, not text"
    if not empty and not value.strip():
        return f"its {what} is empty"
    if len(value) > limit:
        return f"its {what} is longer than {limit} characters"
    return ""


def form_problem(form: object) -> str:
    """Why ``form`` cannot be drawn, as the end of a sentence ("" when it is fine)."""
    if not isinstance(form, SettingsForm):
        return (f"it registered {type(form).__name__} as a settings form; build one with "
                "hearthside.plugin.SettingsForm")
    for value, what, limit, empty in ((form.title, "form title", MAX_TITLE, False),
                                      (form.submit_label, "submit label", MAX_LABEL, False),
                                      (form.help, "form help", MAX_HELP, True)):
        why = _text(value, what, limit, empty=empty)
        if why:
            return f"{why} (form {form.title!r:.40})"
    name = f"its settings form {form.title!r}"
    if not callable(form.submit):
        return f"{name} has no callable submit"
    for cb, what in ((form.items, "items"), (form.remove, "remove")):
        if cb is not None and not callable(cb):
            return f"{name} has an {what} that is not callable"
    if not isinstance(form.fields, tuple) or len(form.fields) > MAX_FIELDS:
        return f"{name} needs its fields as a tuple of at most {MAX_FIELDS} FormField"
    seen: set[str] = set()
    for f in form.fields:
        if not isinstance(f, FormField):
            return f"{name} has a field that is {type(f).__name__}, not a FormField"
        if not isinstance(f.key, str) or not FIELD_KEY_RX.fullmatch(f.key):
            return f"{name} has the field key {f.key!r}; use lowercase letters, digits and '_'"
        if f.key in seen:
            return f"{name} has the field key {f.key!r} twice"
        seen.add(f.key)
        for value, what, limit, empty in ((f.label, "label", MAX_LABEL, False), (f.help, "help", MAX_HELP, True),
                                          (f.placeholder, "placeholder", MAX_LABEL, True)):
            why = _text(value, f"field {f.key!r} {what}", limit, empty=empty)
            if why:
                return f"{name}: {why.removeprefix('its ')}"
        if f.kind not in FIELD_KINDS:
            return f"{name} has the field {f.key!r} of kind {f.kind!r}; use one of {', '.join(FIELD_KINDS)}"
        if f.kind == "choice":
            if (not isinstance(f.choices, tuple) or not f.choices or len(f.choices) > MAX_CHOICES
                    or not all(isinstance(c, str) and c and len(c) <= MAX_LABEL for c in f.choices)):
                return f"{name} has the choice field {f.key!r} without a tuple of 1-{MAX_CHOICES} choices"
        elif f.choices:
            return f"{name} gives choices to the {f.kind} field {f.key!r}; only a choice field has them"
    return ""
