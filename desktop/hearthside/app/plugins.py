"""The plugin service: packs loaded once per process, their contributions, and pack management.

The CLI and the tray both go through this service. Loading honours safe mode and the block
list (``plugins.blocked`` in settings); pack skills, and skills in the user's skills folder,
that trip the injection scan are held back
until the user allows that exact text (``plugins.allowed_skills`` records name and SHA-256, so
an edited skill is checked again).
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..core.contributions import McpServerContribution
from ..core.forms import SettingsForm
from ..core.search import SearchProvider
from ..core.skills import (
    ORIGIN_PACK,
    ORIGIN_PERSONA,
    ORIGIN_USER,
    DirectorySkillSource,
    SkillCatalog,
    SkillSource,
    scan_skill,
)
from ..core.tools import Tool
from ..pluginhost.host import (
    PackHost,
    PackReport,
    ReadOnlySettings,
    canonical_name,
    discover,
    is_opt_in,
)
from ..pluginhost.installer import (
    InstallCancelled,
    InstallError,
    InstallOutcome,
    OutputFn,
    PackInstaller,
    pip_phase,
)
from ..pluginhost.packsenv import PacksEnv
from .paths import AppPaths
from .settings import SettingsStore

log = logging.getLogger(__name__)

BLOCKED_KEY = "plugins.blocked"
#: The opt-in packs (the shell) the user turned on; every other opt-in pack stays off.
ENABLED_KEY = "plugins.enabled"
ALLOWED_SKILLS_KEY = "plugins.allowed_skills"
PROVIDER_KEY = "search.provider"


@dataclass(frozen=True)
class HeldSkill:
    """A pack skill, or one in the user's skills folder (``pack`` is ""), kept out of sessions
    because the injection scan flagged it."""

    pack: str
    name: str
    sha256: str
    finding: str

    @property
    def key(self) -> str:
        # A pack name never holds ':', so a user skill's key cannot collide with a pack's.
        return f"{self.pack}/{self.name}@{self.sha256}" if self.pack else f"{ORIGIN_USER}:{self.name}@{self.sha256}"

    @property
    def label(self) -> str:
        """How the skill is named to the user: ``pack/name``, or ``user/name``."""
        return f"{self.pack or ORIGIN_USER}/{self.name}"

    @property
    def origin(self) -> str:
        return ORIGIN_PACK if self.pack else ORIGIN_USER

    def as_dict(self) -> dict[str, str]:
        return {"pack": self.pack, "name": self.name, "origin": self.origin, "sha256": self.sha256,
                "finding": self.finding}


class PluginService:
    """Loads plugin packs and answers what they contribute; installs and removes packs."""

    def __init__(self, paths: AppPaths, settings: SettingsStore, safe_mode: bool = False) -> None:
        self.paths = paths
        self.settings = settings
        self.safe_mode = safe_mode
        self.env = PacksEnv(paths.packs_dir)
        self.installer = PackInstaller(self.env, paths.installed_packs_file, __version__)
        self._host: PackHost | None = None
        self._lock = threading.RLock()

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> PackHost:
        """Load every pack once (idempotent); safe mode and the block list apply before import."""
        with self._lock:
            if self._host is None:
                host = PackHost(
                    ReadOnlySettings(self.settings.get),
                    self.blocked(),
                    self.safe_mode,
                    self.env.site_dir,
                    self.opted_in(),
                )
                host.load(discover(self.env.site_dir, self._search_path()))
                self._host = host
                for r in host.reports.values():
                    if r.status == "failed":
                        log.warning("plugin pack %s (%s) failed: %s", r.name, r.dist, r.error)
                # What was imported now (the app and every pack) lives as long as the process:
                # move it out of the collector's sight, or each full collection rescans it all
                # and stalls every thread for a tenth of a second with a few hundred packs.
                gc.freeze()
            return self._host

    def _search_path(self) -> list[str] | None:
        """Where to look for packs. Safe mode lists the packs folder but never puts it on
        ``sys.path`` (so none of its code, ``.pth`` files included, runs); otherwise it is
        activated and the normal path is searched."""
        if self.safe_mode:
            return self.env.search_path()
        self.env.activate()
        return None

    def load_new(self, dist: str) -> list[PackReport]:
        """Load a pack that was just installed, without a restart."""
        host = self.load()
        with self._lock:
            self._search_path()
            importlib.invalidate_caches()
            host.load(discover(self.env.site_dir, [str(self.env.site_dir)], [dist]))
            gc.freeze()  # the new pack's modules live as long as the process too (see load())
            return [r for r in host.reports.values() if canonical_name(r.dist) == canonical_name(dist)]

    def report(self) -> list[PackReport]:
        """Every pack found, sorted by name: ok, failed or blocked, with what it contributed."""
        host = self.load()
        return sorted(host.reports.values(), key=lambda r: (r.name, canonical_name(r.dist)))

    def tool_entries(self) -> list[tuple[Tool, str]]:
        """(tool, pack name) for every tool the healthy packs registered, sorted by name."""
        host = self.load()
        return [host.tools[n] for n in sorted(host.tools)]

    def mcp_servers(self) -> list[McpServerContribution]:
        host = self.load()
        return [host.servers[n] for n in sorted(host.servers)]

    def settings_forms(self, pack: str) -> list[SettingsForm]:
        """The settings forms the healthy pack ``pack`` registered (plugin API 1.1), in order."""
        return list(self.load().forms.get(pack, []))

    def providers(self) -> list[tuple[SearchProvider, str]]:
        """(provider, pack) in registration order."""
        return list(self.load().providers.values())

    def search_provider(self) -> SearchProvider | None:
        """The provider the ``search.provider`` setting names, else the first registered one."""
        providers = self.providers()
        wanted = self.settings.get(PROVIDER_KEY)
        if isinstance(wanted, str) and wanted:
            for p, _ in providers:
                if p.name == wanted:
                    return p
            log.warning("search.provider in settings.toml is %r, but no pack offers a web search of "
                        "that name (available: %s); web search is off until you change it",
                        wanted, ", ".join(p.name for p, _ in providers) or "none")
            return None
        return providers[0][0] if providers else None

    # -- skills ----------------------------------------------------------------------------

    def _allowed(self) -> set[str]:
        return _names(self.settings.get(ALLOWED_SKILLS_KEY, []))

    def _pack_skill_sources(self) -> dict[str, DirectorySkillSource]:
        """Fresh (re-read) skill sources of the healthy packs: first-party packs first (their skill
        names are theirs, even for a skill another pack adds to its folder later), then by name."""
        host = self.load()
        first = host.first_party_packs()  # first: the first name wins in a SkillCatalog
        return {pack: DirectorySkillSource(roots, ORIGIN_PACK, pack)
                for pack, roots in sorted(host.skill_roots.items(), key=lambda i: (i[0] not in first, i[0]))}

    def _scanned_sources(self) -> dict[str, DirectorySkillSource]:
        """Every source the injection scan guards, fresh: the user's skills folder (key "")
        first, then the packs by name. The user folder holds skills people download, exactly
        like packs, so it gets the same scan and the same hold-until-allowed rule."""
        return {"": DirectorySkillSource([self.paths.user_skills_dir], ORIGIN_USER),
                **self._pack_skill_sources()}

    def _held(self, sources: dict[str, DirectorySkillSource]) -> list[HeldSkill]:
        allowed = self._allowed()
        out = []
        for pack, src in sources.items():
            for doc in src.docs():
                hit = scan_skill(doc)
                if hit is None:
                    continue
                held = HeldSkill(pack, doc.meta.name, doc.sha256, hit.describe())
                if held.key not in allowed:
                    out.append(held)
        return out

    def held_back_skills(self) -> list[HeldSkill]:
        """Skills of the user folder and of packs that the injection scan flagged and the user
        has not allowed (read afresh)."""
        return self._held(self._scanned_sources())

    def allow_skill(self, name: str) -> list[HeldSkill]:
        """Allow held-back skills named ``name``, ``pack/name`` or ``user/name``; returns what
        was allowed."""
        hits = [h for h in self.held_back_skills() if name in (h.name, h.label, f"{h.pack}/{h.name}")]
        if hits:
            keys = sorted(self._allowed() | {h.key for h in hits})
            self.settings.set(ALLOWED_SKILLS_KEY, keys)
        return hits

    def skill_catalog(self, persona_dir: Path | None = None,
                      persona_held: Mapping[str, str] | None = None) -> SkillCatalog:
        """Skills for a session: persona ``skills/``, then the user's skills folder, then packs.

        The user folder and packs are read and scanned afresh for each catalog, so the text that
        reaches a session is the text that was scanned; flagged ones the user has not allowed are
        held back. ``persona_held`` maps persona skill folders the drift service holds back
        (strict mode, unapproved links) to why. A held-back skill keeps its name taken, so no
        later source's copy stands in for it. Sessions and ``plugins skills`` both build their
        catalog here (through :meth:`SessionService.skill_catalog`).
        """
        sources: list[SkillSource] = []
        if persona_dir is not None:
            own = DirectorySkillSource([Path(persona_dir) / "skills"], ORIGIN_PERSONA)
            if persona_held:
                own.withhold_folders(persona_held)
            sources.append(own)
        scanned = self._scanned_sources()
        for h in self._held(scanned):
            hint = f"'hearthside plugins allow-skill {h.label}'"
            scanned[h.pack].withhold({h.name: f"{h.finding}; read it, then allow it with {hint}"})
        sources.extend(scanned.values())
        return SkillCatalog(sources)

    # -- block list ------------------------------------------------------------------------

    def blocked(self) -> list[str]:
        """The block list; a single name written by hand as a string counts as one entry."""
        return sorted(_names(self.settings.get(BLOCKED_KEY, [])))

    def opted_in(self) -> list[str]:
        """The opt-in packs (the shell) the user turned on (``plugins.enabled``)."""
        return sorted(_names(self.settings.get(ENABLED_KEY, [])))

    def disable(self, name: str) -> bool:
        """Add ``name`` (a pack or distribution name) to the block list; False if already there.
        An opt-in pack is turned off by leaving the list of those turned on."""
        if is_opt_in(name):
            on = self.opted_in()
            kept = [n for n in on if canonical_name(n) != canonical_name(name)]
            if kept == on:
                return False
            self.settings.set(ENABLED_KEY, kept)
            return True
        current = self.blocked()
        if name in current:
            return False
        self.settings.set(BLOCKED_KEY, sorted({*current, name}))
        return True

    def enable(self, name: str) -> bool:
        """Take ``name`` off the block list; an opt-in pack is also recorded as turned on.
        False when there was nothing to change."""
        changed = False
        if is_opt_in(name) and not any(canonical_name(n) == canonical_name(name) for n in self.opted_in()):
            self.settings.set(ENABLED_KEY, sorted({*self.opted_in(), name}))
            changed = True
        current = self.blocked()
        if name in current:
            self.settings.set(BLOCKED_KEY, [b for b in current if b != name])
            changed = True
        return changed

    def known_names(self) -> set[str]:
        names: set[str] = set()
        for r in self.report():
            names.update({r.name, r.dist, canonical_name(r.dist)})
        return names

    # -- installing ------------------------------------------------------------------------

    @staticmethod
    def origin(report: PackReport) -> str:
        """Where a pack came from, in words: first-party, installed by you, or in the app's
        environment (put there by whoever installed Hearthside)."""
        if report.location == "packs":
            return "installed by you"
        if report.first_party:
            return "first-party"
        return "in the app's environment"

    @staticmethod
    def check_spec(spec: str) -> str:
        """Why ``spec`` cannot be installed before pip is asked ("" when it may be): a file or
        folder that is not there gets that sentence, not pip's words about wheel file names."""
        spec = spec.strip()
        if not spec:
            return "give a pack to install: its name, name==version, a wheel file or a pack folder."
        if spec.startswith("-"):
            return f"{spec!r} is not a package name or file; give a pack to install."
        looks_like_file = (spec.endswith((".whl", ".tar.gz", ".zip"))
                           or spec.startswith((".", "/", "~")) or os.sep in spec)
        if looks_like_file and "://" not in spec and not os.path.exists(os.path.expanduser(spec)):
            return f"there is no file {spec}; check the name and the folder you are in."
        return ""

    def install(self, spec: str, out: OutputFn, wait: float = 0.0,
                cancel: threading.Event | None = None) -> tuple[InstallOutcome, list[PackReport]]:
        """Install a pack; a new pack is loaded at once, an upgrade needs a restart. ``cancel``
        set stops pip and removes what it had installed (:class:`InstallCancelled`)."""
        spec = os.path.expanduser(spec.strip())
        outcome = self.installer.install(spec, out, wait, cancel)
        reports: list[PackReport] = []
        if not outcome.restart_needed:
            reports = self.load_new(outcome.dist)
        return outcome, reports

    def uninstall(self, name: str, out: OutputFn, wait: float = 0.0) -> tuple[str, str]:
        # A built-in pack named as `plugins list` shows it ("files"): ask about its distribution,
        # so the user hears "part of Hearthside's own installation", not "no pack named files".
        app_dist = next((r.dist for r in self.report() if r.name == name and r.location == "app"), None)
        return self.installer.uninstall(app_dist or name, out, wait)

    def restore(self, out: OutputFn, wait: float = 0.0) -> list[tuple[str, str]]:
        return self.installer.restore(out, wait)


def _names(raw: object) -> set[str]:
    """A settings list of names; a lone string (hand-edited TOML) is one name, not letters."""
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, (list, tuple)) else []
    return {x.strip() for x in items if isinstance(x, str) and x.strip()}


__all__ = ["HeldSkill", "InstallCancelled", "InstallError", "PluginService", "pip_phase"]


