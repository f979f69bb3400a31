"""MCP client sessions with the ``mcp`` 2.x SDK: one supervised session per server.

The only module that imports ``mcp`` (client side) and ``httpx2``. Each server gets a
supervisor task on the app's asyncio runtime that connects with a timeout per phase, lists
tools, then pings the session and reconnects with backoff when it drops, so one broken server
never holds up the others. Header secrets are bound to the server's origin by a transport
wrapper (they are added per request, only when the request goes to the configured scheme,
host and port) instead of sitting on the client as default headers that any redirect would
carry along.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import shutil
import ssl
import tempfile
from collections.abc import Callable, Mapping
from typing import IO, Any

import anyio
import httpx2
import mcp.client.stdio as _sdk_stdio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ..core.errors import ErrorKind, ServiceError
from ..core.loopback import is_loopback_host
from ..core.mcpconfig import (
    SecretRef,
    ServerConfig,
    ServerState,
    ServerStatus,
    arg_key,
    origin_of,
    short_tool_name,
    url_secret_key,
    url_with_secrets,
)
from ..core.mcppaths import PathArgument, path_arguments, server_roots
from ..core.mcppaths import refusal as path_refusal
from ..core.mcpresults import DEFAULT_MAX_RESULT_CHARS, MAX_RESULT_ITEMS, Part, bounded_text, describe_binary
from ..core.redact import SECRET_HEADER_NAMES, is_secret_name, redact, register_secret
from ..core.sandbox import SandboxPolicy
from ..core.secrets import SecretStoreError
from ..core.tools import TOOL_NAME_RX, ToolEnv, ToolResult, ToolSpec
from . import procgroups
from . import sandbox as _sandbox
from .mcp_oauth import GuardedOAuthProvider, OAuthRecords, SignInNeeded, background_auth

#: The process groups spawned by the stdio transport being opened in this context (set by
#: :meth:`McpConnection._open_transport`), so each connection knows its server's group.
_SPAWNED: contextvars.ContextVar[set[int] | None] = contextvars.ContextVar("hearthside_mcp_spawned", default=None)
_sdk_spawn = _sdk_stdio._create_platform_compatible_process


async def _spawn_tracked(*args: Any, **kwargs: Any) -> Any:
    """The SDK's spawn (a new session: the server leads its own process group), with the group
    recorded in :mod:`.procgroups` so it is ended at close and at exit whatever the SDK's own
    shutdown managed."""
    process = await _sdk_spawn(*args, **kwargs)
    procgroups.track(process.pid)
    mine = _SPAWNED.get()
    if mine is not None:
        mine.add(process.pid)
    return process


_sdk_stdio._create_platform_compatible_process = _spawn_tracked

log = logging.getLogger(__name__)

#: What a stdio child inherits besides the env it is given (the SDK adds HOME, LOGNAME, PATH,
#: SHELL, TERM, USER). Locale and temp dir only: nothing that could carry a credential or a
#: handle to the user's session (no DBUS_SESSION_BUS_ADDRESS, SSH_AUTH_SOCK, *_TOKEN).
SAFE_ENV_KEYS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL",
                 "LC_CTYPE", "TZ", "TMPDIR")

#: At most this many tools are taken from one server (pages are followed until then).
MAX_TOOLS_PER_SERVER = 5000
MAX_TOOL_PAGES = 200

#: The largest single message read from an HTTP server (the SDK's default is 1 MiB). A result
#: of a few megabytes is read whole and then cut to the server's ``max_result_chars`` (the model
#: gets the start and a notice) instead of failing outright; past this the call fails.
MAX_SSE_EVENT_BYTES = 64 * 1024 * 1024

SecretResolver = Callable[[str], "str | None"]
#: The sandbox policy for one launch of a stdio server, given the env it is started with.
SandboxFor = Callable[[ServerConfig, Mapping[str, str]], SandboxPolicy]
StatusListener = Callable[["ServerStatus"], None]


class McpConnectError(ServiceError):
    """A connection attempt failed: the user-facing reason (already redacted), its kind, and
    the command-line advice kept apart (see :mod:`hearthside.core.errors`)."""


def minimal_env(given: Mapping[str, str]) -> dict[str, str]:
    """The whole environment a stdio child gets: the safe set from ours, then its own."""
    env = {k: os.environ[k] for k in SAFE_ENV_KEYS if k in os.environ and not os.environ[k].startswith("()")}
    env.update(given)
    return env


def _command_path(command: str, env: Mapping[str, str]) -> str:
    """The server's command as a path, found on the ``PATH`` it is started with: bubblewrap
    would report a missing command only as its own exit, not as "not found"."""
    if os.sep in command:
        return command
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise McpConnectError(redact(f"the command was not found: {command}"), ErrorKind.NOT_FOUND)
    return found


_SSL_CONTEXT: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every connection: building one loads the CA bundle, which
    costs ~20 ms of CPU, and ten servers connecting at once would otherwise pay it ten times."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        _SSL_CONTEXT = httpx2.create_ssl_context()
    return _SSL_CONTEXT


class OriginBoundTransport(httpx2.AsyncBaseTransport):
    """Adds secret headers to a request only when it goes to ``origin`` (scheme, host, port).

    Any request elsewhere (a redirect the SDK or a caller followed) goes without them, and
    without any other secret-shaped header, whatever the client's defaults say.
    """

    def __init__(self, origin: tuple[str, str, int], secret_headers: Mapping[str, str],
                 inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.origin = origin
        self._secret = dict(secret_headers)
        self._inner = inner or httpx2.AsyncHTTPTransport(verify=shared_ssl_context())

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if origin_of(str(request.url)) == self.origin:
            for k, v in self._secret.items():
                request.headers[k] = v
        else:
            for k in list(request.headers.keys()):
                if k.lower() in SECRET_HEADER_NAMES or k.lower() in {s.lower() for s in self._secret} \
                        or is_secret_name(k):
                    del request.headers[k]
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _root_causes(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for e in exc.exceptions:
            out.extend(_root_causes(e))
        return out
    return [exc]


def describe(exc: BaseException) -> McpConnectError:
    """A short, redacted sentence and its kind for an exception from connecting or calling."""
    causes = [c for c in _root_causes(exc) if not isinstance(c, (asyncio.CancelledError,))] or [exc]
    c = causes[0]
    if isinstance(c, McpConnectError):
        return c
    if isinstance(c, SecretStoreError):  # e.g. the keyring locked while a refreshed token was being kept
        return McpConnectError(redact(str(c)))
    if isinstance(c, ServiceError):  # a sign-in that is needed, or an endpoint refused: its own words
        return McpConnectError(c.sentence, c.kind, c.advice)
    if isinstance(c, MCPError):
        return McpConnectError(redact(f"the server answered with an error: {c.error.message}"))
    if isinstance(c, httpx2.ConnectError):
        return McpConnectError("could not connect (connection refused or host unreachable)", ErrorKind.UNREACHABLE)
    if isinstance(c, httpx2.TimeoutException):
        return McpConnectError("the server did not answer in time", ErrorKind.TIMED_OUT)
    if isinstance(c, FileNotFoundError):
        return McpConnectError(redact(f"the command was not found: {c.filename or c}"), ErrorKind.NOT_FOUND)
    if isinstance(c, PermissionError):
        return McpConnectError(redact(f"the command could not be run: {c}"))
    msg = str(c) or type(c).__name__
    return McpConnectError(redact(f"{type(c).__name__}: {msg}"))


def describe_error(exc: BaseException) -> str:
    """A short, redacted sentence for an exception from connecting or calling (with any
    command-line advice: it goes to the model or the log, not to a window)."""
    return str(describe(exc))


class McpTool:
    """An MCP server's tool as a Hearthside tool named ``mcp__<server>__<tool>``."""

    def __init__(self, conn: McpConnection, remote_name: str, description: str,
                 schema: Mapping[str, Any], read_only: bool, name: str = "") -> None:
        self._conn = conn
        self.remote_name = remote_name  # always the server's own name: it is what is called
        self._spec = ToolSpec(name or f"mcp__{conn.name}__{remote_name}", description, schema)
        self._read_only = read_only

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def server(self) -> str:
        return self._conn.name

    def resolved_paths(self, args: Mapping[str, Any]) -> list[PathArgument]:
        """The arguments of a call that may be local paths, resolved against the folders this
        server was given (for the approval prompt and the write guard)."""
        cfg = self._conn.cfg
        return path_arguments(args, server_roots(cfg.args if cfg.transport == "stdio" else (), cfg.cwd))

    def refusal(self, args: Mapping[str, Any], env: ToolEnv) -> str:
        """The write guard's sentence when this call would change a protected place, else "".
        Read-only tools (``readOnlyHint``) are not checked: reading stays allowed."""
        if self._read_only or not self.local:
            return ""
        return path_refusal(env.write_guard, self.resolved_paths(args))

    @property
    def local(self) -> bool:
        """True when the server runs on this computer (stdio, or HTTP on a loopback address),
        so its paths are this computer's; a remote server's ``path`` names something there."""
        cfg = self._conn.cfg
        return cfg.transport == "stdio" or is_loopback_host(origin_of(cfg.url)[1])

    async def execute(self, args: Mapping[str, Any], env: ToolEnv) -> ToolResult:
        why = self.refusal(args, env)
        if why:
            return ToolResult.error(why)
        return await self._conn.call_tool(self.remote_name, dict(args))


def _content_parts(result: Any) -> list[Part]:
    """A result's content blocks as text parts: text as it is, images, audio and binary
    resources described (the model client is text-only), a resource link by its address."""
    parts: list[Part] = []
    for c in getattr(result, "content", None) or []:
        kind = getattr(c, "type", "")
        text = getattr(c, "text", None)
        if isinstance(text, str):
            parts.append(Part(text))
        elif kind == "image":
            parts.append(describe_binary("an image", getattr(c, "mime_type", ""), getattr(c, "data", "")))
        elif kind == "audio":
            parts.append(describe_binary("an audio clip", getattr(c, "mime_type", ""), getattr(c, "data", "")))
        elif kind == "resource":
            res = getattr(c, "resource", None)
            uri = str(getattr(res, "uri", "") or "")
            if isinstance(getattr(res, "text", None), str):
                parts.append(Part(res.text))  # type: ignore[union-attr]
            else:
                parts.append(describe_binary("a binary resource", getattr(res, "mime_type", "") or "",
                                             getattr(res, "blob", ""), uri))
        elif kind == "resource_link":
            name = getattr(c, "name", "") or ""
            parts.append(Part(f"[a link to the resource {getattr(c, 'uri', '')}" + (f" ({name})" if name else "")
                              + "]"))
        else:
            try:
                parts.append(Part(json.dumps(c.model_dump(mode="json", exclude_none=True), ensure_ascii=False)))
            except Exception:  # noqa: BLE001
                parts.append(Part(str(c)))
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(Part(json.dumps(result.structured_content, ensure_ascii=False, default=str)))
    return parts


def _result_text(result: Any, max_chars: int = DEFAULT_MAX_RESULT_CHARS) -> tuple[str, bool]:
    """The result as the model gets it: within ``max_chars`` and :data:`MAX_RESULT_ITEMS`."""
    return bounded_text(_content_parts(result), max_chars, MAX_RESULT_ITEMS), bool(getattr(result, "is_error", False))


def left_out_reason(tool: Any) -> str:
    """Why a listed tool cannot be offered, or ``""``: one that runs only as a task
    (``execution.taskSupport`` "required", MCP 2025-11-25) fails at every plain call, and
    Hearthside does not run MCP tasks."""
    execution = getattr(tool, "execution", None)
    if getattr(execution, "task_support", None) == "required":
        return "it runs only as a long-running MCP task, which Hearthside does not support yet"
    return ""


class _SignInWatch(httpx2.Auth):
    """The OAuth provider of a background connection, noting on the connection when the
    server asks for a sign-in (the SDK's transport turns the exception into a generic error)."""

    requires_response_body = True

    def __init__(self, provider: GuardedOAuthProvider, conn: McpConnection) -> None:
        self._provider = provider
        self._conn = conn

    async def async_auth_flow(self, request: httpx2.Request) -> Any:
        flow = self._provider.async_auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except SignInNeeded as exc:
            self._conn._sign_in = exc
            raise
        finally:
            await flow.aclose()  # in this task: the provider's flow holds a lock it took here


class McpConnection:
    """One server's supervised session on the running asyncio loop.

    ``start()`` launches the supervisor and returns when the first attempt has ended (connected
    or failed); with ``reconnect`` the supervisor keeps trying with exponential backoff and
    re-checks a live session with a ping every ``ping_interval`` seconds.
    """

    def __init__(self, cfg: ServerConfig, resolve_secret: SecretResolver, *, reconnect: bool = True,
                 ping_interval: float = 15.0, backoff: tuple[float, float] = (0.5, 30.0),
                 on_status: StatusListener | None = None, oauth: OAuthRecords | None = None,
                 sandbox: SandboxFor | None = None) -> None:
        self.cfg = cfg
        #: The sandbox policy of a stdio server's launch (None: started bare, e.g. in a unit test
        #: of the transport). The app always gives one (:mod:`hearthside.app.sandbox`).
        self._sandbox = sandbox
        #: How the last launch was started (sandboxed, or bare and why), for the status.
        self.sandbox_plan: _sandbox.SandboxPlan | None = None
        #: Where this server's OAuth sign-in lives (None: the server signs in with no OAuth).
        self._oauth = oauth
        self._sign_in: SignInNeeded | None = None
        self.name = cfg.name
        self._resolve = resolve_secret
        self._reconnect = reconnect
        self._ping_interval = ping_interval
        self._backoff = backoff
        self._on_status = on_status
        self._status = ServerStatus(cfg.name, "disabled" if not cfg.enabled else "connecting",
                                    "disabled in mcp.json" if not cfg.enabled else "",
                                    transport=cfg.transport, source=cfg.source)
        self._tools: list[McpTool] = []
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._first_done: asyncio.Event | None = None
        self._closing: asyncio.Event | None = None
        self._trouble: asyncio.Event | None = None
        self._http_status: int | None = None
        self._last_transport_error: BaseException | None = None
        self._errlog: IO[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Process groups of the stdio server (one per attempt), ended at close.
        self._groups: set[int] = set()
        self.attempts = 0

    # --- public --------------------------------------------------------------------------

    def status(self) -> ServerStatus:
        return self._status

    def tools(self) -> list[McpTool]:
        return list(self._tools) if self._status.state == "connected" else []

    async def start(self) -> ServerStatus:
        """Start the supervisor (if enabled) and wait for its first attempt to end."""
        if not self.cfg.enabled:
            return self._status
        if self._task is None:
            self._loop = asyncio.get_running_loop()
            self._first_done = asyncio.Event()
            self._closing = asyncio.Event()
            self._trouble = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"mcp:{self.name}")
        assert self._first_done is not None
        await self._first_done.wait()
        return self._status

    async def wait_for(self, state: ServerState, timeout: float) -> ServerStatus:
        """Wait until the status is ``state`` (used by tests and ``mcp test``)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._status.state != state:
                    await asyncio.sleep(0.05)
        return self._status

    async def close(self) -> None:
        """End the session (a clean MCP shutdown when connected) and stop reconnecting."""
        if self._closing is not None:
            self._closing.set()
        task = self._task
        if task is not None:
            if self._status.state != "connected":
                task.cancel()
            try:
                await asyncio.wait_for(asyncio.shield(task), 5.0)
            except BaseException:  # noqa: BLE001 - a stuck shutdown is cut short
                task.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(task, 5.0)
            self._task = None
        if self._groups:  # a server stuck in a call, or a shutdown cut short: end its group
            groups, self._groups = set(self._groups), set()
            await asyncio.to_thread(procgroups.end_groups, groups)
        self._tools = []
        self._session = None
        if self._status.state in ("connected", "connecting"):
            self._set("failed", "closed")

    async def call_tool(self, tool: str, args: dict[str, Any]) -> ToolResult:
        """Call ``tool`` on this server. Safe from any event loop: a call from another loop than
        the session's is handed over to the session's loop (an anyio session is bound to it)."""
        loop = self._loop
        if loop is not None and loop is not asyncio.get_running_loop():
            fut = asyncio.run_coroutine_threadsafe(self._call_tool(tool, args), loop)
            return await asyncio.wrap_future(fut)
        return await self._call_tool(tool, args)

    async def _call_tool(self, tool: str, args: dict[str, Any]) -> ToolResult:
        session = self._session
        if session is None or self._status.state != "connected":
            why = self._status.told or self._status.state
            return ToolResult.error(f"MCP server {self.name} is not connected: {why}")
        try:
            with anyio.fail_after(self.cfg.timeout):
                result = await session.call_tool(tool, args)
        except TimeoutError:
            if self._trouble is not None:
                self._trouble.set()
            return ToolResult.error(f"MCP server {self.name} did not answer within {self.cfg.timeout:g} s")
        except Exception as exc:  # noqa: BLE001 - a tool failure is the model's to see
            if self._trouble is not None:
                self._trouble.set()
            return ToolResult.error(f"MCP tool {tool} on {self.name} failed: {describe_error(exc)}")
        text, is_error = _result_text(result, self.cfg.max_result_chars)
        return ToolResult(text, is_error)

    # --- supervision ---------------------------------------------------------------------

    def _set(self, state: ServerState, reason: str = "", tools: int = 0,
             skipped: tuple[tuple[str, str], ...] = (), renamed: tuple[tuple[str, str], ...] = (),
             kind: ErrorKind = ErrorKind.NONE, advice: str = "") -> None:
        self._status = ServerStatus(self.name, state, redact(reason), tools, self.cfg.transport,
                                    self.cfg.source, skipped, renamed, kind, redact(advice))
        if state in ("connected", "failed") and reason != "closed":
            log.info("MCP server %s %s%s", self.name, state, f" ({self._status.told})" if reason else "")
        if self._on_status is not None:
            try:
                self._on_status(self._status)
            except Exception:
                log.exception("status listener failed")

    def _failed(self, why: McpConnectError) -> None:
        self._set("failed", why.sentence, kind=why.kind, advice=why.advice)

    async def _supervise(self) -> None:
        assert self._first_done is not None and self._closing is not None
        failures = 0
        try:
            while not self._closing.is_set():
                self.attempts += 1
                lost: McpConnectError | None = None
                try:
                    lost = await self._one_session()
                    failures = 0
                except Exception as exc:  # noqa: BLE001 - every failure becomes a status
                    self._failed(describe(exc))
                    failures += 1
                finally:
                    self._session = None
                if lost is not None:
                    self._failed(lost)
                self._first_done.set()
                if not self._reconnect or self._closing.is_set():
                    return
                base, cap = self._backoff
                delay = min(cap, base * (2 ** max(0, failures - 1)))
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._closing.wait()
        finally:
            self._first_done.set()
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None

    async def _message_handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            self._last_transport_error = message
            if self._trouble is not None:
                self._trouble.set()

    async def _one_session(self) -> McpConnectError | None:
        """Connect, list tools, then watch the session. Returns why it ended (None when closed)."""
        cfg = self.cfg
        self._http_status = None
        self._last_transport_error = None
        self._sign_in = None
        async with contextlib.AsyncExitStack() as stack:
            try:
                # Entering the transport and session only spawns a process or builds a client;
                # the timeout covers the handshake (a cancel scope must not wrap contexts that
                # stay open after it, so it cannot include them).
                streams = await self._open_transport(stack)
                session = await stack.enter_async_context(
                    ClientSession(streams[0], streams[1], message_handler=self._message_handler)
                )
                with anyio.fail_after(cfg.timeout):
                    await session.initialize()
            except TimeoutError:
                raise self._explain(McpConnectError(f"timed out after {cfg.timeout:g} s while connecting",
                                                    ErrorKind.TIMED_OUT)) from None
            except McpConnectError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise self._explain(describe(exc)) from None
            try:
                with anyio.fail_after(cfg.timeout):
                    tools, skipped, renamed = await self._list_tools(session)
            except TimeoutError:
                raise McpConnectError(f"timed out after {cfg.timeout:g} s while listing tools",
                                      ErrorKind.TIMED_OUT) from None
            except Exception as exc:  # noqa: BLE001
                why = describe(exc)
                raise self._explain(McpConnectError("listing tools failed: " + why.sentence, why.kind,
                                                    why.advice)) from None
            self._session = session
            self._tools = tools
            parts = list(cfg.warnings)
            if renamed:
                parts.append(f"{len(renamed)} tool(s) renamed (names too long or not usable)")
            if skipped:
                parts.append(f"{len(skipped)} tool(s) left out")
            self._set("connected", "; ".join(parts), len(tools), tuple(skipped), tuple(renamed))
            self._first_done.set()  # type: ignore[union-attr]
            return await self._watch(session)

    def _explain(self, fallback: McpConnectError) -> McpConnectError:
        """The most useful account of a failed attempt: what HTTP status or the server's own
        error output says, else ``fallback``."""
        code = self._http_status
        if self._sign_in is not None:
            return McpConnectError(self._sign_in.sentence, self._sign_in.kind, self._sign_in.advice)
        if code in (401, 403):
            keys = list(self.cfg.secret_refs()) or ["Authorization"]
            return McpConnectError(f"authentication failed (HTTP {code}): the server refused the credentials",
                                   ErrorKind.AUTHENTICATION,
                                   f"; set the secret again with 'hearthside mcp set-secret {self.name} {keys[0]}'")
        text = fallback.sentence
        if self.cfg.transport == "stdio" and self._errlog is not None:
            tail = self._stderr_tail()
            exited = "the server process exited or closed its output during start-up"
            # the SDK's own words for a child that went away (its exception type varies)
            if "Connection closed" in text or "closed" in text.lower():
                return McpConnectError(redact(exited + (f": {tail}" if tail else "")))
            if tail:
                return McpConnectError(redact(f"{text} (server said: {tail})"), fallback.kind, fallback.advice)
        if code is not None and code >= 400:
            return McpConnectError(f"the server answered HTTP {code}: {text}", fallback.kind, fallback.advice)
        if self._last_transport_error is not None and fallback.kind is not ErrorKind.TIMED_OUT:
            return describe(self._last_transport_error)
        return fallback

    def _stderr_tail(self) -> str:
        f = self._errlog
        if f is None:
            return ""
        try:
            f.flush()
            f.seek(0)
            lines = [ln.strip() for ln in f.read()[-4000:].splitlines() if ln.strip()]
            f.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return ""
        return lines[-1][:300] if lines else ""

    async def _open_transport(self, stack: contextlib.AsyncExitStack) -> Any:
        cfg = self.cfg
        if cfg.transport == "stdio":
            env = minimal_env(await self._resolved(cfg.env, "environment variable"))
            if self._errlog is None:
                # An unlinked temp file: the child's stderr is readable for a failure reason,
                # and nothing of it (it may echo its env) lands in the app's folders.
                self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - outlives this attempt; closed by _supervise
            # Secret arguments (a DSN with a password, the value after --token) are read from
            # the keyring only here, for the child's launch.
            numbered = {arg_key(i + 1): a for i, a in enumerate(cfg.args)}
            resolved = await self._resolved(numbered, "argument")
            args = [resolved[arg_key(i + 1)] for i in range(len(cfg.args))]
            plan = await asyncio.to_thread(self._plan, [_command_path(cfg.command, env), *args], env)
            self.sandbox_plan = plan
            if not plan.sandboxed:
                log.info("MCP server %s starts without the sandbox: %s", self.name, plan.reason)
            params = StdioServerParameters(command=plan.argv[0], args=plan.argv[1:], env=plan.policy.child_env(),
                                           cwd=cfg.cwd)
            token = _SPAWNED.set(self._groups)
            try:
                return await stack.enter_async_context(stdio_client(params, errlog=self._errlog))  # type: ignore[arg-type]
            finally:
                _SPAWNED.reset(token)
        headers = await self._resolved(cfg.headers, "header")
        secret_names = set(cfg.secret_refs())
        plain = {k: v for k, v in headers.items() if k not in secret_names}
        secret = {k: v for k, v in headers.items() if k in secret_names}
        url = url_with_secrets(cfg.url, await self._resolved(cfg.url_secrets, "URL parameter ?"))
        transport = OriginBoundTransport(origin_of(cfg.url), secret)

        async def on_response(response: httpx2.Response) -> None:
            if response.status_code >= 400:
                self._http_status = response.status_code

        auth = None
        if self._oauth is not None:
            auth = _SignInWatch(background_auth(self.name, cfg.url, self._oauth), self)
        client = httpx2.AsyncClient(
            headers=plain, transport=transport, follow_redirects=False, auth=auth,
            timeout=httpx2.Timeout(cfg.timeout, read=max(300.0, cfg.timeout)),
            event_hooks={"response": [on_response]},
        )
        await stack.enter_async_context(client)
        return await stack.enter_async_context(streamable_http_client(url, http_client=client,
                                                                      max_sse_event_size=MAX_SSE_EVENT_BYTES))

    def _plan(self, argv: list[str], env: Mapping[str, str]) -> _sandbox.SandboxPlan:
        """Sandboxed when a policy is given and bubblewrap works (blocking: the policy reads the
        persona list and the first probe runs bwrap; called in a worker thread)."""
        if self._sandbox is None:
            bare = SandboxPolicy(enabled=False, env=dict(env), off_reason="no sandbox policy was given")
            return _sandbox.wrap(argv, bare)
        return _sandbox.wrap(argv, self._sandbox(self.cfg, env))

    async def _resolved(self, pairs: Mapping[str, str | SecretRef], what: str) -> dict[str, str]:
        """Plain values as they are, references read from the secret store in a worker thread
        (a keyring read is a blocking D-Bus round trip; the runtime loop must keep running)."""
        out: dict[str, str] = {}
        for k, v in pairs.items():
            if isinstance(v, SecretRef):
                try:
                    value = await asyncio.to_thread(self._resolve, v.ref)
                except SecretStoreError as exc:
                    raise McpConnectError(str(exc)) from None
                if value is None:
                    key = url_secret_key(k) if what.endswith("?") else k
                    raise McpConnectError(f"the secret for {what.rstrip(' ?')} {k} is not set",
                                          ErrorKind.SECRET_MISSING,
                                          f": run 'hearthside mcp set-secret {self.name} {key}'")
                register_secret(value)
                out[k] = value
            else:
                out[k] = v
        return out

    async def _list_tools(
        self, session: ClientSession
    ) -> tuple[list[McpTool], list[tuple[str, str]], list[tuple[str, str]]]:
        """The server's tools, each under a usable name: ``mcp__<server>__<tool>`` when that
        fits the model API's 64 characters, else a deterministic short name (see
        :func:`short_tool_name`; the full name is still what is called). Returns the tools, the
        ``(short, full)`` renames and the ``(name, why)`` of tools left out."""
        tools: list[McpTool] = []
        skipped: list[tuple[str, str]] = []
        renamed: list[tuple[str, str]] = []
        cursor: str | None = None
        seen: set[str] = set()
        names: set[str] = set()
        for _ in range(MAX_TOOL_PAGES):
            if cursor is None:
                page = await session.list_tools()
            else:
                from mcp.types import PaginatedRequestParams

                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
            for t in page.tools:
                if t.name in seen:
                    skipped.append((t.name, "the server lists a tool of this name twice"))
                    continue
                if not t.name:
                    skipped.append((t.name, "the tool has no name"))
                    continue
                why_not = left_out_reason(t)
                if why_not:
                    seen.add(t.name)
                    skipped.append((t.name, why_not))
                    continue
                if len(tools) >= MAX_TOOLS_PER_SERVER:
                    why = (f"the server offers more than {MAX_TOOLS_PER_SERVER} tools; "
                           "this one and any after it were left out")
                    skipped.append((t.name, why))
                    return tools, skipped, renamed
                seen.add(t.name)
                full = f"mcp__{self.name}__{t.name}"
                if not TOOL_NAME_RX.match(full) or full in names:
                    full = short_tool_name(self.name, t.name, names)
                    renamed.append((full, t.name))
                names.add(full)
                ann = getattr(t, "annotations", None)
                read_only = bool(getattr(ann, "read_only_hint", False)) if ann is not None else False
                desc = t.description or getattr(t, "title", None) or t.name
                schema = t.input_schema if isinstance(t.input_schema, dict) else {"type": "object", "properties": {}}
                tools.append(McpTool(self, t.name, desc, schema, read_only, name=full))
            cursor = page.next_cursor
            if not cursor:
                break
        return tools, skipped, renamed

    async def _watch(self, session: ClientSession) -> McpConnectError | None:
        assert self._closing is not None and self._trouble is not None
        while not self._closing.is_set():
            self._trouble.clear()
            waiters = [asyncio.ensure_future(self._closing.wait()), asyncio.ensure_future(self._trouble.wait())]
            try:
                await asyncio.wait(waiters, timeout=self._ping_interval, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waiters:
                    w.cancel()
            if self._closing.is_set():
                return None
            try:
                with anyio.fail_after(self.cfg.timeout):
                    await session.send_ping()
            except TimeoutError:
                return McpConnectError(f"connection lost: no answer to a ping within {self.cfg.timeout:g} s; "
                                       "reconnecting", ErrorKind.TIMED_OUT)
            except Exception as exc:  # noqa: BLE001
                why = self._explain(describe(exc))
                return McpConnectError(f"connection lost: {why.sentence}; reconnecting", why.kind, why.advice)
        return None
