"""Loading plugin packs one at a time, so one broken pack never takes the others down.

pluggy calls every implementation of a hook in one loop and stops at the first exception; a
pack that fails to import breaks ``load_setuptools_entrypoints`` for everyone after it. Here
each entry point is imported, registered and has each of its hooks called on its own, inside
a guard that catches *everything* a pack can raise (``SystemExit`` and ``KeyboardInterrupt``
included). What a pack registers is staged and committed only when all of its hooks
succeeded and none of its names clash, so a failed pack leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import inspect
import os
import re
import site
import sys
import sysconfig
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import click
import pluggy

from ..core.contributions import ContributionError, McpServerContribution, validate_mcp_contribution
from ..core.forms import SettingsForm, form_problem
from ..core.hosttools import RESERVED_TOOL_NAMES, RESERVED_TOOL_PREFIX
from ..core.search import PROVIDER_NAME_RX, SearchProvider
from ..core.skills import ORIGIN_PACK, DirectorySkillSource
from ..core.tools import TOOL_NAME_RX, Tool, is_tool
from . import specs
from .specs import ENTRY_POINT_GROUP, HOOK_NAMES, HOOKS, KIND_OF_HOOK, PROJECT, HookKind


@dataclass(frozen=True)
class FirstPartyPack:
    """What identifies one of Hearthside's own packs: its distribution, its entry-point name and
    the module the entry point loads."""

    dist: str
    pack: str
    module: str


#: The packs shipped with Hearthside. A pack counts as first-party only when *all* of this
#: matches and its metadata sits in Hearthside's own environment (:func:`app_site_dirs`): a
#: name alone is what any wheel can claim.
FIRST_PARTY_PACKS = (
    FirstPartyPack("hearthside-files", "files", "hearthside_files"),
    FirstPartyPack("hearthside-searxng", "searxng", "hearthside_searxng"),
    FirstPartyPack("hearthside-starter-skills", "starter-skills", "hearthside_starter_skills"),
    FirstPartyPack("hearthside-calendar", "calendar", "hearthside_calendar"),
    FirstPartyPack("hearthside-feeds", "feeds", "hearthside_feeds"),
    FirstPartyPack("hearthside-websearch", "websearch", "hearthside_websearch"),
    FirstPartyPack("hearthside-shell", "shell", "hearthside_shell"),
)

#: First-party packs that are off until the user turns them on (``plugins enable``): the shell.
#: Off means not imported at all, as for a pack the user disabled.
OPT_IN_PACKS = frozenset({"shell"})
#: Why an opt-in pack is not loaded (the start of its block reason).
OPT_IN_WHY = "off until you turn it on (it runs shell commands, in the sandbox, asking you each time)"

#: The names an opt-in pack registers, owned even while it is off: a pack that is not
#: Hearthside's cannot pass itself off as the sandboxed, always-asking ``Bash`` because the
#: user has not turned the shell on (tests/test_pack_names.py checks this list against what
#: the pack really registers).
OPT_IN_NAMES: dict[str, dict[str, str]] = {"tools": {"Bash": "shell"}}

def is_opt_in(name: str) -> bool:
    """Whether ``name`` (a pack or distribution name) is one of the off-until-enabled packs."""
    n = canonical_name(name)
    return any(n in (canonical_name(p.pack), canonical_name(p.dist)) for p in FIRST_PARTY_PACKS
               if p.pack in OPT_IN_PACKS)


#: Distribution names of the first-party packs.
FIRST_PARTY = frozenset(p.dist for p in FIRST_PARTY_PACKS)

#: Entry-point names of the first-party packs -> the distribution that owns each. Another
#: distribution claiming one of these names is refused (and the first-party pack keeps
#: working), instead of both being failed as a name clash.
RESERVED_PACK_NAMES = {p.pack: p.dist for p in FIRST_PARTY_PACKS}


#: The ``hearthside`` command line's own commands (``cli.LAZY_COMMANDS``, kept equal by a test)
#: and click's ``help``: no pack command may take one of these names.
BUILTIN_COMMANDS = frozenset({"agents", "chat", "chats", "doctor", "forks", "heartbeat", "help", "mcp", "memory",
                              "model", "persona", "plugins", "settings", "soul"})

#: A pack command's name: what the user types after ``hearthside``.
COMMAND_NAME_RX = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


def canonical_name(name: str) -> str:
    """PEP 503 normalised distribution name (``Foo_Bar`` -> ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


#: Hearthside's own tool names, case-folded: a pack's ``skill`` or ``Memory_Recall`` would pass
#: for the host's tool with a model as well as the exact name would.
_RESERVED_FOLDED = frozenset(n.casefold() for n in RESERVED_TOOL_NAMES)


class RegistrationError(ValueError):
    """A pack registered something unusable; raised into the pack and recorded against it."""


PackStatus = Literal["ok", "failed", "blocked"]


@dataclass
class PackReport:
    """One pack as ``plugins list`` shows it. ``status`` is ``ok``, ``failed`` or ``blocked``."""

    name: str
    dist: str
    version: str
    status: PackStatus = "ok"
    error: str = ""
    hooks: list[str] = field(default_factory=list)
    contributes: dict[str, list[str]] = field(
        default_factory=lambda: {h.kind: [] for h in HOOKS}
    )
    warnings: list[str] = field(default_factory=list)
    location: str = "app"
    first_party: bool = False
    #: For a blocked pack: why, in words for a window (no command to type); and whether it is
    #: an opt-in pack that is simply not turned on yet (the window says "off", not "disabled").
    off_reason: str = ""
    opt_in: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dist": self.dist,
            "version": self.version,
            "status": self.status,
            "error": self.error,
            "hooks": list(self.hooks),
            "contributes": {k: list(v) for k, v in self.contributes.items()},
            "warnings": list(self.warnings),
            "location": self.location,
        }


@dataclass
class _Staged:
    tools: list[Tool] = field(default_factory=list)
    skill_roots: list[Path] = field(default_factory=list)
    providers: list[SearchProvider] = field(default_factory=list)
    servers: list[McpServerContribution] = field(default_factory=list)
    commands: list[click.Command] = field(default_factory=list)
    forms: list[SettingsForm] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Candidate:
    """An entry point found in the ``hearthside.plugins`` group, with its distribution."""

    ep: md.EntryPoint
    dist: str
    version: str
    location: str  # "app" or "packs"
    error: str = ""  # set when the distribution's entry points cannot even be read
    first_party: bool = False  # one of Hearthside's own packs, checked by is_first_party

    @property
    def name(self) -> str:
        return self.ep.name


def _dist_location(dist: md.Distribution, packs_site: Path | None) -> str:
    path = getattr(dist, "_path", None)
    if packs_site is not None and path is not None:
        try:
            if Path(path).parent == packs_site:
                return "packs"
        except TypeError:
            pass
    return "app"


def app_site_dirs() -> set[Path]:
    """The folders Hearthside itself was installed into (resolved).

    Derived from the interpreter's prefix (and the bundle's folder when frozen), never from
    ``sys.path``: the packs location, and any folder a pack's ``.pth`` file adds, is on the path
    too, and a distribution found there must not pass for one shipped with Hearthside.
    """
    dirs: list[str] = []
    for key in ("purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.append(p)
    with contextlib.suppress(AttributeError):  # a virtualenv's old site.py may lack them
        dirs.extend(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        with contextlib.suppress(AttributeError):
            dirs.append(site.getusersitepackages())
    frozen = getattr(sys, "_MEIPASS", None)
    if isinstance(frozen, str):
        dirs.append(frozen)
    out: set[Path] = set()
    for d in dirs:
        with contextlib.suppress(OSError, ValueError):
            out.add(Path(d).resolve())
    return out


def is_first_party(dist: md.Distribution, ep: md.EntryPoint, packs_site: Path | None,
                   app_dirs: set[Path] | None = None) -> bool:
    """True when ``ep`` of ``dist`` is one of Hearthside's own packs.

    What a pack's author controls is its metadata: distribution name, entry-point names and
    module names. So all three must match a :data:`FIRST_PARTY_PACKS` entry *and* the
    distribution's metadata must sit in Hearthside's own environment (not in the packs
    location, where ``hearthside plugins install`` puts everything else).
    """
    want = next((p for p in FIRST_PARTY_PACKS if p.pack == ep.name), None)
    if want is None or canonical_name(dist.metadata["Name"] or "") != want.dist:
        return False
    module = ep.value.partition(":")[0].strip()
    if module != want.module and not module.startswith(want.module + "."):
        return False
    path = getattr(dist, "_path", None)
    if path is None:
        return False
    try:
        where = Path(path).resolve().parent
        if packs_site is not None and where == Path(packs_site).resolve():
            return False
    except (OSError, TypeError, ValueError):
        return False
    return where in (app_dirs if app_dirs is not None else app_site_dirs())


def pack_entry_points(dist: md.Distribution) -> tuple[list[md.EntryPoint], str]:
    """Our group's entry points of ``dist``, and why they could not be read ("" when fine).

    A damaged ``entry_points.txt`` makes ``importlib.metadata`` raise; a distribution that
    names our group in it is reported as a failed pack (under its distribution name) instead
    of breaking discovery of every other pack.
    """
    try:
        return [ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP], ""
    except Exception as exc:  # noqa: BLE001 - any parse error of a damaged file
        try:
            raw = dist.read_text("entry_points.txt") or ""
        except Exception:  # noqa: BLE001
            raw = ""
        if f"[{ENTRY_POINT_GROUP}]" not in raw:
            return [], ""
        name = canonical_name(dist.metadata["Name"] or "unknown")
        placeholder = md.EntryPoint(name, name, ENTRY_POINT_GROUP)
        reason = (f"its entry_points.txt cannot be read ({_describe(exc)}); reinstall or "
                  "uninstall the pack")
        return [placeholder], reason


def discover(packs_site: Path | None = None, path: list[str] | None = None,
             only_dists: Iterable[str] = ()) -> list[Candidate]:
    """Every entry point of our group, one pass over the installed distributions.

    A distribution installed twice on the path (say in the app and in the packs location) is
    taken once, the first copy winning as it does on import.
    """
    wanted = {canonical_name(d) for d in only_dists}
    seen: set[str] = set()
    out: list[Candidate] = []
    app_dirs = app_site_dirs()
    dists = md.distributions(path=path) if path is not None else md.distributions()
    for dist in dists:
        eps, error = pack_entry_points(dist)
        if not eps:
            continue
        meta = dist.metadata
        dname = meta["Name"] or "unknown"
        key = canonical_name(dname)
        if key in seen or (wanted and key not in wanted):
            continue
        seen.add(key)
        loc = _dist_location(dist, packs_site)
        for ep in eps:
            first = not error and is_first_party(dist, ep, packs_site, app_dirs)
            out.append(Candidate(ep, dname, meta["Version"] or "", loc, error, first))
    # Hearthside's own packs first: they load first, so their tool, skill and provider names
    # are theirs whatever another pack is called (a pack named "aaa" once took "Read").
    out.sort(key=lambda c: (not c.first_party, c.name, canonical_name(c.dist)))
    return out


class ReadOnlySettings:
    """What a pack sees of the settings: ``get(key, default)``, no writing."""

    def __init__(self, getter: Callable[[str, Any], Any]) -> None:
        self._get = getter

    def get(self, key: str, default: Any = None) -> Any:
        return self._get(key, default)


def _no_settings(key: str, default: Any = None) -> Any:
    return default


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    if isinstance(exc, KeyboardInterrupt):
        return "it raised KeyboardInterrupt"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def describe_failure(exc: BaseException) -> str:
    """What a pack's exception was, in one line (its type and first line; an exit or interrupt
    in words): for reports, and for the CLI when a pack's command fails."""
    return _describe(exc)


def _validation_reason(exc: pluggy.PluginValidationError) -> str:
    """pluggy's multi-line complaint as one sentence a user can act on."""
    text = " ".join(str(exc).split())
    hook = re.search(r"for hook '(\w+)'", text)
    args = re.search(r"Argument\(s\) \{(.*?)\} are declared in the hookimpl", text)
    if hook and args:
        return (f"its {hook.group(1)} hook asks for {args.group(1)}, which this Hearthside does "
                "not provide; the pack may need a newer Hearthside")
    return f"it does not fit this Hearthside (it may need a newer version): {text}"


def _reserved_reason(c: Candidate) -> str:
    """Why ``c`` may not use its name: a first-party name from anything that is not the
    first-party pack itself (another distribution, the user's packs location, a module that is
    not the pack's own)."""
    owner = RESERVED_PACK_NAMES.get(c.name)
    if owner is None or c.first_party:
        return ""
    return (f"the pack name {c.name!r} is reserved for Hearthside's own pack {owner}; "
            f"{c.dist} was not loaded (ask its author to rename its entry point)")


class PackHost:
    """Loads packs in isolation and holds what the healthy ones contributed.

    ``blocked`` holds pack or distribution names the user disabled; ``opted_in`` the opt-in
    packs (:data:`OPT_IN_PACKS`) the user turned on, every other one stays off; ``safe_mode``
    loads only first-party packs from the app's own environment.
    """

    def __init__(
        self,
        settings: ReadOnlySettings | None = None,
        blocked: Iterable[str] = (),
        safe_mode: bool = False,
        packs_site: Path | None = None,
        opted_in: Iterable[str] = (),
    ) -> None:
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(specs)
        self.settings = settings or ReadOnlySettings(_no_settings)
        self.blocked = {b.strip() for b in blocked if b.strip()}
        self.opted_in = {canonical_name(b.strip()) for b in opted_in if b.strip()}
        self.safe_mode = safe_mode
        self.packs_site = packs_site
        self.reports: dict[tuple[str, str], PackReport] = {}
        self._by_name: dict[str, list[PackReport]] = {}
        self.tools: dict[str, tuple[Tool, str]] = {}
        self.skill_roots: dict[str, list[Path]] = {}
        self.providers: dict[str, tuple[SearchProvider, str]] = {}
        self.servers: dict[str, McpServerContribution] = {}
        #: command name -> (click command, pack): the commands of the healthy packs.
        self.commands: dict[str, tuple[click.Command, str]] = {}
        #: pack -> its settings forms, in registration order.
        self.forms: dict[str, list[SettingsForm]] = {}
        #: command name -> the first pack that tried to register it, loaded or not: says which
        #: failed pack a missing command belongs to.
        self.command_claims: dict[str, str] = {}
        #: names the loaded first-party packs own: kind ("tools", "skills", "providers",
        #: "servers") -> case-folded name -> (name, pack). Nothing else may take them.
        self.owned: dict[str, dict[str, tuple[str, str]]] = {h.kind: {} for h in HOOKS}
        for kind, names in OPT_IN_NAMES.items():
            for name, pack in names.items():
                self.owned[kind][name.casefold()] = (name, pack)

    # -- loading ---------------------------------------------------------------------------

    def load(self, candidates: list[Candidate]) -> list[PackReport]:
        """Load each candidate on its own; returns the reports of this batch."""
        by_name: dict[str, list[Candidate]] = {}
        batch: list[PackReport] = []
        # First-party packs first (a stable sort keeps the rest in their order): the names they
        # register are theirs, so a pack loaded after them that claims one is the one refused.
        for c in sorted(candidates, key=lambda c: not c.first_party):
            if (c.name, canonical_name(c.dist)) in self.reports:
                continue  # already loaded (or reported) in an earlier batch
            report = PackReport(c.name, c.dist, c.version, location=c.location,
                                first_party=c.first_party)
            reserved = _reserved_reason(c)
            if reserved:  # kept out of _by_name: it must not count as a clash for the real owner
                report.status, report.error = "failed", reserved
                self.reports[(report.name, canonical_name(report.dist))] = report
                batch.append(report)
                continue
            reason, advice = self._block_reason(c)
            if reason:
                report.status, report.error = "blocked", f"{reason}; {advice}" if advice else reason
                report.off_reason, report.opt_in = reason, reason == OPT_IN_WHY
                self._keep(report, batch)
                continue
            by_name.setdefault(c.name, []).append(c)
        for name, group in by_name.items():
            earlier = [r for r in self._by_name.get(name, []) if r.status != "blocked"]
            if len(group) > 1 or earlier:
                owners = [f"{r.dist} {r.version}" for r in earlier] + [f"{c.dist} {c.version}" for c in group]
                for c in group:
                    report = PackReport(c.name, c.dist, c.version, "failed", location=c.location,
                                        first_party=c.first_party)
                    report.error = (
                        f"the pack name {name!r} is claimed by several distributions "
                        f"({', '.join(owners)}); uninstall or disable one of them by "
                        "distribution name"
                    )
                    self._keep(report, batch)
                continue
            self._keep(self._load_one(group[0]), batch)
        return batch

    def _keep(self, report: PackReport, batch: list[PackReport]) -> None:
        self.reports[(report.name, canonical_name(report.dist))] = report
        self._by_name.setdefault(report.name, []).append(report)
        batch.append(report)

    def _block_reason(self, c: Candidate) -> tuple[str, str]:
        """Why ``c`` is not loaded, as (the reason, the command that changes it); ("", "") when it loads."""
        if c.name in self.blocked or canonical_name(c.dist) in {canonical_name(b) for b in self.blocked}:
            return "disabled by you", f"run 'hearthside plugins enable {c.name}' to load it again"
        if is_opt_in(c.name) and not {canonical_name(c.name), canonical_name(c.dist)} & self.opted_in:
            return OPT_IN_WHY, f"run 'hearthside plugins enable {c.name}' to load it"
        if self.safe_mode and not c.first_party:
            return "safe mode: third-party packs are not loaded", ""
        return "", ""

    def _load_one(self, c: Candidate) -> PackReport:
        # A pack that prints must not corrupt a command's JSON on stdout.
        with contextlib.redirect_stdout(sys.stderr):
            return self._load_one_quietly(c)

    def _load_one_quietly(self, c: Candidate) -> PackReport:
        report = PackReport(c.name, c.dist, c.version, location=c.location, first_party=c.first_party)
        if c.error:
            return self._fail(report, c.error)
        try:
            plugin = c.ep.load()
        except BaseException as exc:  # noqa: BLE001 - a pack may raise anything, even SystemExit
            return self._fail(report, f"could not be imported: {_describe(exc)}")
        try:
            self.pm.register(plugin, name=c.name)
        except BaseException as exc:  # noqa: BLE001 - PluginValidationError, ValueError, ...
            msg = _describe(exc)
            if isinstance(exc, pluggy.PluginValidationError):
                msg = _validation_reason(exc)
            return self._fail(report, msg)
        try:
            return self._call_hooks(c, plugin, report)
        finally:
            if report.status != "ok" and self.pm.is_registered(plugin):
                with contextlib.suppress(BaseException):
                    self.pm.unregister(plugin)

    def _fail(self, report: PackReport, reason: str) -> PackReport:
        report.status, report.error = "failed", reason
        return report

    def _call_hooks(self, c: Candidate, plugin: Any, report: PackReport) -> PackReport:
        for attr in dir(plugin):
            if attr.startswith("hearthside_") and attr not in HOOK_NAMES:
                opts = self.pm.parse_hookimpl_opts(plugin, attr)
                if opts is not None and not opts.get("optionalhook"):
                    return self._fail(report, (
                        f"it implements the hook {attr!r}, which this Hearthside does not have; "
                        "the pack may need a newer Hearthside"
                    ))
        staged = _Staged()
        for hook in HOOK_NAMES:
            opts = self.pm.parse_hookimpl_opts(plugin, hook)
            if opts is None:
                continue
            if opts.get("hookwrapper") or opts.get("wrapper"):
                return self._fail(report, f"{hook} is a hook wrapper; packs may only use plain hooks")
            impl = pluggy.HookImpl(plugin, c.name, getattr(plugin, hook), opts)
            report.hooks.append(hook)
            register = _Register(self, c.name, KIND_OF_HOOK[hook], staged)
            available = {"register": register, "settings": self.settings}
            try:
                impl.function(**{a: available[a] for a in impl.argnames})
            except BaseException as exc:  # noqa: BLE001 - isolate the pack, whatever it raised
                if staged.errors:
                    return self._fail(report, staged.errors[0])
                return self._fail(report, f"its {hook} hook failed: {_describe(exc)}")
            finally:
                register.closed = True
            if staged.errors:
                return self._fail(report, staged.errors[0])
        skills = DirectorySkillSource(staged.skill_roots, ORIGIN_PACK, c.name) if staged.skill_roots else None
        clash = "" if c.first_party else self._owned_clash(staged, skills)
        clash = clash or self._clash(c.name, staged)
        if clash:
            return self._fail(report, clash)
        self._commit(c.name, staged, report, skills)
        return report

    def _owned_clash(self, staged: _Staged, skills: DirectorySkillSource | None) -> str:
        """Why a pack that is not first-party may not load: a name a first-party pack owns
        (compared without case: ``read`` passes for ``Read`` with a model). "" when none."""
        claims = [("tools", "tool", t.spec.name) for t in staged.tools]
        claims += [("skills", "skill", d.meta.name) for d in (skills.docs() if skills else [])]
        claims += [("providers", "search provider", p.name) for p in staged.providers]
        claims += [("servers", "MCP server", s.name) for s in staged.servers]
        claims += [("commands", "command", str(c.name)) for c in staged.commands]
        for kind, thing, name in claims:
            hit = self.owned[kind].get(name.casefold())
            if hit is not None:
                owner = RESERVED_PACK_NAMES.get(hit[1], hit[1])
                return (f"its {thing} {name!r} takes the name of the {thing} {hit[0]!r} of "
                        f"Hearthside's own pack {hit[1]!r} ({owner}); first-party names are kept "
                        "for the first-party pack, so this pack was not loaded")
        return ""

    def _clash(self, pack: str, staged: _Staged) -> str:
        for t in staged.tools:
            n = t.spec.name
            if n in self.tools:
                return (f"its tool {n!r} has the same name as a tool of the pack "
                        f"{self.tools[n][1]!r}; disable one of the two packs")
        for p in staged.providers:
            if p.name in self.providers:
                return (f"its search provider {p.name!r} has the same name as one of the pack "
                        f"{self.providers[p.name][1]!r}")
        for s in staged.servers:
            if s.name in self.servers:
                return (f"its MCP server {s.name!r} has the same name as one of the pack "
                        f"{self.servers[s.name].pack!r}")
        for c in staged.commands:
            if c.name in self.commands:
                return (f"its command {c.name!r} has the same name as a command of the pack "
                        f"{self.commands[str(c.name)][1]!r}; disable one of the two packs")
        return ""

    def _commit(self, pack: str, staged: _Staged, report: PackReport,
                skills: DirectorySkillSource | None) -> None:
        for t in staged.tools:
            self.tools[t.spec.name] = (t, pack)
            report.contributes["tools"].append(t.spec.name)
        for p in staged.providers:
            self.providers[p.name] = (p, pack)
            report.contributes["providers"].append(p.name)
        for s in staged.servers:
            self.servers[s.name] = s
            report.contributes["servers"].append(s.name)
        for c in staged.commands:
            self.commands[str(c.name)] = (c, pack)
            report.contributes["commands"].append(str(c.name))
        if staged.forms:
            self.forms[pack] = list(staged.forms)
            report.contributes["forms"] = [f.title for f in staged.forms]
        if skills is not None:
            self.skill_roots[pack] = list(staged.skill_roots)
            report.contributes["skills"] = loaded = [d.meta.name for d in skills.docs()]
            # A diagnostic about a skill that loaded anyway (its folder is called otherwise) is
            # a warning, not a skip.
            report.warnings.extend(f"skill {d.skill!r}{':' if d.skill in loaded else ' skipped:'} {d.reason}"
                                   for d in skills.diagnostics)
        if report.first_party:
            for kind, names in report.contributes.items():
                for name in names:
                    self.owned[kind].setdefault(name.casefold(), (name, pack))

    def pack_of_missing_command(self, name: str) -> PackReport | None:
        """The report of the pack that would have provided the command ``name`` but did not load
        (failed or blocked): the one that tried to register it, else the pack of that name."""
        pack = self.command_claims.get(name, name)
        for r in self.reports.values():
            if r.name == pack and r.status != "ok":
                return r
        return None

    def first_party_packs(self) -> set[str]:
        """Names of the first-party packs that loaded (their skills come before other packs')."""
        return {r.name for r in self.reports.values() if r.first_party and r.status == "ok"}


class _Register:
    """The ``register`` callback handed to one hook of one pack: validates and stages."""

    def __init__(self, host: PackHost, pack: str, kind: HookKind, staged: _Staged) -> None:
        self.host, self.pack, self.kind, self.staged = host, pack, kind, staged
        self.closed = False

    def _reject(self, msg: str) -> RegistrationError:
        self.staged.errors.append(msg)
        return RegistrationError(msg)

    def __call__(self, obj: Any = None, *args: Any, **kwargs: Any) -> None:
        if self.closed:
            raise RegistrationError(
                f"pack {self.pack!r} called register after its hook returned; register only "
                "while the hook runs"
            )
        if args or kwargs:
            raise self._reject(f"register() takes exactly one {self.kind.thing} per call")
        getattr(self, "_" + self.kind.kind)(obj)

    def _tools(self, obj: Any) -> None:
        if not is_tool(obj):
            raise self._reject(
                f"it registered {type(obj).__name__} {obj!r:.60} as a tool, but it is not one "
                "(a tool needs spec, read_only and execute)"
            )
        if not inspect.iscoroutinefunction(obj.execute):
            raise self._reject(
                f"its tool {obj.spec.name!r} has an execute that is not 'async def'; sessions "
                "await every tool"
            )
        name = obj.spec.name
        if not TOOL_NAME_RX.match(name):
            raise self._reject(f"its tool name {name!r} is invalid: use 1-64 letters, digits, '_' or '-'")
        folded = name.casefold()
        if folded in _RESERVED_FOLDED or folded.startswith(RESERVED_TOOL_PREFIX.casefold()):
            raise self._reject(f"its tool name {name!r} is reserved for Hearthside's own tools")
        if any(t.spec.name == name for t in self.staged.tools):
            raise self._reject(f"it registered the tool name {name!r} twice")
        self.staged.tools.append(obj)

    def _skills(self, obj: Any) -> None:
        if not isinstance(obj, (str, os.PathLike)):
            raise self._reject(f"it registered {type(obj).__name__} as skills; pass a folder path")
        path = Path(obj)
        if not path.is_dir():
            raise self._reject(f"its skills folder {str(path)!r} does not exist")
        self.staged.skill_roots.append(path)

    def _providers(self, obj: Any) -> None:
        try:
            name = obj.name
        except Exception:  # noqa: BLE001
            name = None
        if not isinstance(name, str) or not PROVIDER_NAME_RX.match(name) or not callable(
            getattr(obj, "search", None)
        ):
            raise self._reject(
                f"it registered {type(obj).__name__} as a search provider, but a provider needs "
                "a lowercase 'name' and a 'search(query)' method"
            )
        if any(p.name == name for p in self.staged.providers):
            raise self._reject(f"it registered the search provider {name!r} twice")
        self.staged.providers.append(obj)

    def _servers(self, obj: Any) -> None:
        try:
            server = validate_mcp_contribution(obj, self.pack)
        except ContributionError as exc:
            raise self._reject(f"it registered an invalid MCP server: {exc}") from None
        if any(s.name == server.name for s in self.staged.servers):
            raise self._reject(f"it registered the MCP server {server.name!r} twice")
        self.staged.servers.append(server)

    def _commands(self, obj: Any) -> None:
        if not isinstance(obj, click.Command):
            raise self._reject(f"it registered {type(obj).__name__} {obj!r:.60} as a command, but it is "
                               "not a click.Command (or click.Group)")
        name = obj.name
        if not isinstance(name, str) or not COMMAND_NAME_RX.fullmatch(name):
            raise self._reject(f"its command name {name!r:.60} is invalid: use 1-40 lowercase letters, "
                               "digits and '-', starting with a letter")
        self.host.command_claims.setdefault(name, self.pack)
        if name in BUILTIN_COMMANDS:
            raise self._reject(f"its command {name!r} has the name of a built-in hearthside command; "
                               "ask its author to rename it")
        if any(c.name == name for c in self.staged.commands):
            raise self._reject(f"it registered the command {name!r} twice")
        self.staged.commands.append(obj)

    def _forms(self, obj: Any) -> None:
        problem = form_problem(obj)
        if problem:
            raise self._reject(problem)
        if len(self.staged.forms) >= 10:
            raise self._reject("it registered more than 10 settings forms")
        self.staged.forms.append(obj)
