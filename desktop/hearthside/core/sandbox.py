"""The process sandbox's policy and its bubblewrap command line, as pure values.

An MCP server (and a shell command) is a separate process: no guard inside Hearthside can stop
it from writing the soul file, a persona folder or ``settings.toml``. On Linux it therefore runs
under bubblewrap, and this module decides *what* the sandbox looks like; the adapter
(:mod:`hearthside.adapters.sandbox`) only checks that ``bwrap`` works and prepends the argv.

The shape, in mount order (later mounts cover earlier ones, which is what makes the protected
places read-only even inside a folder given read-write):

1. the whole filesystem read-only (``--ro-bind / /``);
2. the writable roots (the folders the user gave the server, its working folder) read-write;
3. a fresh ``/dev``, ``/proc``, a private empty ``/tmp`` and an empty user runtime folder
   (``/run/user/UID``: the session bus, the keyring's control socket, the display sockets);
   writable roots *inside* those are bound after them, and so, read-only, is the top-level
   entry of each place the program's own command line names there (:func:`launch_entries`);
4. every protected place (the soul, each persona folder, Hearthside's config, data and state
   folders) read-only again;
   then a *grant* (a fork's own copy, which lives in the state folder) read-write again: only
   that one folder, never a protected place itself nor one that holds a protected place;
5. any session-bus socket outside those folders covered by ``/dev/null``.

The session bus is where the keyring (the Secret Service) answers, so the child gets no bus
address and no path to the bus socket. An *abstract* socket (``unix:abstract=``) or a TCP bus
has no path to hide: it is reachable from any process in the same network namespace, so such a
bus means the network is cut (``--unshare-net``) unless the user turned the network on for that
server (:func:`network_for`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Folders a sandboxed process sees empty and private (a tmpfs each).
PRIVATE_TMP = "/tmp"


@dataclass(frozen=True)
class BusEndpoints:
    """Where a D-Bus address says the bus is: socket paths, and whether some part of it cannot
    be hidden by the filesystem (an abstract socket or TCP: only a network namespace cuts it)."""

    paths: tuple[str, ...] = ()
    needs_net_cut: bool = False


def bus_endpoints(address: str) -> BusEndpoints:
    """Parse a D-Bus address list (``unix:path=/run/user/1000/bus;unix:abstract=/tmp/x``)."""
    paths: list[str] = []
    cut = False
    for part in address.split(";"):
        kind, _, rest = part.strip().partition(":")
        if not kind:
            continue
        keys = dict(kv.partition("=")[::2] for kv in rest.split(",") if kv)
        if kind == "unix":
            if "path" in keys:
                paths.append(_unescape(keys["path"]))
            if "abstract" in keys:
                cut = True
        elif kind in ("tcp", "nonce-tcp"):
            cut = True
    return BusEndpoints(tuple(dict.fromkeys(paths)), cut)


def _unescape(value: str) -> str:
    """D-Bus addresses %-escape bytes (``%2d`` for ``-``)."""
    import urllib.parse

    return urllib.parse.unquote(value)


@dataclass(frozen=True)
class SandboxPolicy:
    """What one sandboxed process may see and change.

    ``protected`` are read-only whatever else is given (absolute paths; those that do not exist
    are skipped). ``writable`` are bound read-write (one that is or lies inside a protected place
    is left read-only: the protected side wins). ``network``: share the host's network or get
    none. ``cwd``: the working folder inside the sandbox. ``env``: the child's environment (the
    caller passes it on the ``Popen``; bwrap keeps it, minus :attr:`unset_env`). ``enabled``
    False means the user turned the sandbox off for this process (``off_reason`` says where).
    """

    protected: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    network: bool = True
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    unset_env: tuple[str, ...] = ("DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS", "XDG_RUNTIME_DIR",
                                  "SSH_AUTH_SOCK", "GNOME_KEYRING_CONTROL", "GPG_AGENT_INFO")
    enabled: bool = True
    off_reason: str = ""
    #: Places inside a protected place that this one process may change all the same: a fork's
    #: own copy, which lives in Hearthside's state folder. Bound read-write after the protected
    #: places; one that is itself a protected place or holds one is dropped (:func:`granted`).
    grants: tuple[str, ...] = ()
    #: Places the process must be able to *read* even inside the private folders: Hearthside's
    #: own interpreter and installation (a pack's server, a bundle's launcher script run with
    #: them). Only their top-level entries there are bound back, read-only (:func:`launch_entries`).
    readable: tuple[str, ...] = ()

    def child_env(self) -> dict[str, str]:
        """``env`` without the variables that point at the user's session."""
        return {k: v for k, v in self.env.items() if k not in self.unset_env}


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def _depth(path: str) -> int:
    return len([part for part in path.split(os.sep) if part])


def within(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (both normalised)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def granted(grants: Iterable[str], protected: Iterable[str]) -> tuple[str, ...]:
    """The grants that may really be read-write: resolved, each strictly inside a protected
    place, and none that is or holds a protected place (a grant of the whole state folder, or of
    a folder around a persona folder, would open what it sits in)."""
    prot = [_norm(p) for p in protected]
    prot += [os.path.realpath(p) for p in prot]
    out: list[str] = []
    for g in grants:
        real = os.path.realpath(_norm(g))
        if any(within(p, real) for p in prot) or not any(within(real, p) for p in prot):
            continue
        out.append(real)
    return tuple(dict.fromkeys(out))


def writable_roots(writable: Iterable[str], protected: Iterable[str],
                   grants: Iterable[str] = ()) -> tuple[str, ...]:
    """The writable roots that may really be read-write: with links resolved, deduplicated,
    without any that is or lies inside a protected place (that one stays read-only).

    Resolved, because bubblewrap binds what a link points to: a root given as a link to a
    persona folder would be bound read-write at the link's place, where the persona folder's
    read-only bind (at its real place) does not cover it."""
    prot = [_norm(p) for p in protected]
    given = granted(grants, prot)
    prot += [os.path.realpath(p) for p in prot]
    out: list[str] = []
    for w in writable:
        n = _norm(w)
        real = os.path.realpath(n)
        if any(within(real, g) for g in given):  # inside a grant: bound read-write with it
            out.append(real)
            continue
        if any(within(n, p) or within(real, p) for p in prot):
            continue
        out.append(real)
    return tuple(dict.fromkeys(out))


def network_for(requested: bool | None, bus: BusEndpoints) -> bool:
    """Whether the process shares the host's network: what the user set for it, else on —
    unless the session bus is reachable through the network namespace (an abstract socket or
    TCP), where the default is off so the keyring cannot be reached."""
    if requested is not None:
        return requested
    return not bus.needs_net_cut


def launch_entries(argv: Sequence[str], policy: SandboxPolicy, hidden: Sequence[str]) -> tuple[str, ...]:
    """What the private folders must still show, read-only, for the program to start at all.

    A program installed under ``/tmp`` (a checkout there, its virtualenv, the script it is
    given) would vanish under the private ``/tmp`` and fail with "execvp: No such file". So
    for the command (as given and as found on ``PATH``), every argument that names an existing
    absolute path and the working folder, each one's top-level entry inside a private folder
    (``/tmp/checkout`` for ``/tmp/checkout/.venv/bin/python``) is bound back read-only. Only
    those entries: the rest of ``/tmp`` (the bus sockets, other programs' files) stays hidden.
    Links are followed both ways (the place named and the place it leads to)."""
    env_path = policy.env.get("PATH") if policy.env else None
    names: list[str] = []
    if argv:
        cmd = argv[0]
        found = cmd if os.sep in cmd else shutil.which(cmd, path=env_path)
        if found:
            names.append(found)
    names += [a for a in argv[1:] if os.path.isabs(a) and os.path.lexists(a)]
    if policy.cwd:
        names.append(policy.cwd)
    names += list(policy.readable)
    out: list[str] = []
    for name in names:
        for place in (_norm(name), os.path.realpath(_norm(name))):
            for h in hidden:
                if place != h and within(place, h):
                    out.append(os.path.join(h, os.path.relpath(place, h).split(os.sep)[0]))
    return tuple(dict.fromkeys(out))


def bwrap_argv(bwrap: str, argv: Sequence[str], policy: SandboxPolicy, bus: BusEndpoints,
               runtime_dir: str | None) -> list[str]:
    """The full command line: ``bwrap <mounts and namespaces> -- argv``.

    No ``--new-session``: the stdio transport already starts bwrap in a session of its own with
    no terminal (so no TIOCSTI), and the server must stay in bwrap's process group for the
    group to be ended as one. ``--unshare-pid`` makes bwrap's helper the namespace's init: when
    it dies every process inside dies with it; ``--die-with-parent`` ends it with Hearthside.
    """
    protected = tuple(dict.fromkeys(_norm(p) for p in policy.protected))
    grants = granted(policy.grants, protected)
    # Roots inside a grant are bound with the grant, after the protected places.
    writable = tuple(w for w in writable_roots(policy.writable, protected, grants)
                     if not any(within(w, g) for g in grants))
    hidden = list(dict.fromkeys([PRIVATE_TMP] + ([_norm(runtime_dir)] if runtime_dir else [])))
    # Parents before children, so each mount covers what lies above it: a writable root inside
    # the private /tmp is bound after it, a runtime folder inside a writable root is hidden after
    # it. At the same place a fresh mount comes first and the user's writable root wins.
    mounts: list[tuple[str, list[str]]] = [(w, ["--bind-try", w, w]) for w in writable]
    mounts += [("/dev", ["--dev", "/dev"]), ("/proc", ["--proc", "/proc"])]
    mounts += [(h, ["--tmpfs", h]) for h in hidden]
    visible = launch_entries(argv, policy, hidden)
    mounts += [(v, ["--ro-bind-try", v, v]) for v in visible]
    mounts.sort(key=lambda m: (_depth(m[0]), m[1][0].startswith("--bind")))
    out = [bwrap, "--ro-bind", "/", "/"]
    for _, args in mounts:
        out += args
    # Protected places: the ones a writable root reaches (or that contain one) get a read-only
    # bind again; elsewhere the read-only root already covers them.
    for p in protected:
        if (any(within(p, w) or within(w, p) for w in writable) or any(within(p, h) for h in hidden)
                or any(within(g, p) for g in grants)):
            out += ["--ro-bind-try", p, p]
    for g in grants:  # only these, of all that lies in the protected places, become writable
        out += ["--bind", g, g]
    for sock in (_norm(s) for s in bus.paths if os.path.isabs(s)):
        hidden_already = any(within(sock, h) for h in hidden) and not any(within(sock, w) for w in writable) \
            and not any(within(sock, v) for v in visible)
        if os.path.lexists(sock) and not hidden_already:
            out += ["--ro-bind-try", "/dev/null", sock]
    out += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent"]
    if not policy.network:
        out.append("--unshare-net")
    for key in policy.unset_env:
        out += ["--unsetenv", key]
    if policy.cwd:
        out += ["--chdir", _norm(policy.cwd)]
    out.append("--")
    out += list(argv)
    return out


@dataclass(frozen=True)
class ServerSandboxSettings:
    """A server's ``[mcp.servers.NAME]`` table in ``settings.toml``: ``sandbox = false`` turns
    the sandbox off for it, ``network = true|false`` decides its network, ``writable`` adds
    folders it may change (a cache such as ``~/.npm``). ``problems`` are sentences about values
    that could not be used (the default was used instead)."""

    sandbox: bool = True
    network: bool | None = None
    writable: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def server_settings(name: str, raw: Any) -> ServerSandboxSettings:
    """Read a server's table leniently: a wrong value is named and the safe default kept."""
    if raw is None:
        return ServerSandboxSettings()
    where = f"[mcp.servers.{name}]"
    if not isinstance(raw, Mapping):
        return ServerSandboxSettings(problems=(f"{where} in settings.toml is not a section; it was ignored",))
    problems: list[str] = []
    sandbox = raw.get("sandbox", True)
    if not isinstance(sandbox, bool):
        problems.append(f"{where} sandbox must be true or false; the sandbox stays on")
        sandbox = True
    network = raw.get("network")
    if network is not None and not isinstance(network, bool):
        problems.append(f"{where} network must be true or false; the default is used")
        network = None
    writable_raw = raw.get("writable", [])
    writable: list[str] = []
    if isinstance(writable_raw, str):
        writable_raw = [writable_raw]
    if not isinstance(writable_raw, list):
        problems.append(f"{where} writable must be a list of folders; it was ignored")
        writable_raw = []
    for w in writable_raw:
        if isinstance(w, str) and os.path.isabs(os.path.expanduser(w)):
            writable.append(os.path.expanduser(w))
        else:
            problems.append(f"{where} writable: {str(w)[:60]!r} is not an absolute folder; it was ignored")
    return ServerSandboxSettings(sandbox, network, tuple(writable), tuple(problems))


#: Caches a launcher writes before the server even starts (``npx -y pkg`` fills ``~/.npm``):
#: the command's base name -> folders under the home folder made writable for it.
LAUNCHER_CACHES: Mapping[str, tuple[str, ...]] = {
    "npx": ("~/.npm",),
    "npm": ("~/.npm",),
    "uvx": ("~/.cache/uv", "~/.local/share/uv"),
    "uv": ("~/.cache/uv", "~/.local/share/uv"),
    "pipx": ("~/.cache/pipx", "~/.local/pipx", "~/.local/share/pipx"),
}


def launcher_caches(command: str) -> tuple[str, ...]:
    """The cache folders the launcher ``command`` needs writable (``~`` expanded)."""
    return tuple(os.path.expanduser(p) for p in LAUNCHER_CACHES.get(os.path.basename(command), ()))
