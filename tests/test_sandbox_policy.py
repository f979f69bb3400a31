"""The sandbox's pure policy (core/sandbox.py): bus addresses, the mount order that keeps the
protected places read-only inside writable folders, and the per-server settings read leniently."""

from __future__ import annotations

from pathlib import Path

from hearthside.core.sandbox import (
    BusEndpoints,
    SandboxPolicy,
    bus_endpoints,
    bwrap_argv,
    network_for,
    server_settings,
    writable_roots,
)


def test_bus_addresses_name_their_sockets_and_abstract_or_tcp_ones_need_the_network_cut() -> None:
    assert bus_endpoints("unix:path=/run/user/1000/bus") == BusEndpoints(("/run/user/1000/bus",), False)
    assert bus_endpoints("unix:path=/tmp/dbus%2dx,guid=ab") == BusEndpoints(("/tmp/dbus-x",), False)
    assert bus_endpoints("unix:abstract=/tmp/dbus-Q,guid=1").needs_net_cut
    assert bus_endpoints("tcp:host=127.0.0.1,port=5555").needs_net_cut
    both = bus_endpoints("unix:path=/a/bus;unix:abstract=/b")
    assert both.paths == ("/a/bus",) and both.needs_net_cut
    assert bus_endpoints("") == BusEndpoints()
    assert network_for(None, both) is False and network_for(True, both) is True
    assert network_for(None, BusEndpoints(("/a/bus",))) is True and network_for(False, BusEndpoints()) is False


def test_a_protected_place_inside_a_writable_folder_is_bound_read_only_after_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = home / ".config" / "hearthside"
    config.mkdir(parents=True)
    policy = SandboxPolicy(protected=(str(config),), writable=(str(home), str(config / "personas" / "kip")))
    argv = bwrap_argv("bwrap", ["srv"], policy, BusEndpoints(), None)
    # a writable root inside a protected place stays read-only: never bound read-write
    assert ["--bind-try", str(config / "personas" / "kip"), str(config / "personas" / "kip")] not in \
        [argv[i:i + 3] for i in range(len(argv))]
    rw = argv.index(str(home))  # the home under /tmp: bound after the private /tmp
    ro = argv.index(str(config))
    assert argv[rw - 1] == "--bind-try" and argv[ro - 1] == "--ro-bind-try" and ro > rw
    assert argv.index("--tmpfs") < rw
    assert argv[:4] == ["bwrap", "--ro-bind", "/", "/"] and argv[-2:] == ["--", "srv"]
    assert "--unshare-pid" in argv and "--die-with-parent" in argv and "--new-session" not in argv
    assert "--unshare-net" not in argv
    assert "--unshare-net" in bwrap_argv("bwrap", ["srv"], SandboxPolicy(network=False), BusEndpoints(), None)
    assert writable_roots([str(home), str(config)], [str(config)]) == (str(home),)


def test_a_bus_socket_outside_the_hidden_folders_is_covered(tmp_path: Path) -> None:
    sock = tmp_path / "bus"
    sock.write_text("")  # stands for the socket: only its existence matters here
    argv = bwrap_argv("bwrap", ["srv"], SandboxPolicy(writable=(str(tmp_path),)), BusEndpoints((str(sock),)),
                      "/run/user/1000")
    i = argv.index(str(sock))
    assert argv[i - 2:i] == ["--ro-bind-try", "/dev/null"]
    assert ["--tmpfs", "/run/user/1000"] == argv[argv.index("/run/user/1000") - 1:argv.index("/run/user/1000") + 1]
    assert "DBUS_SESSION_BUS_ADDRESS" in argv and argv[argv.index("DBUS_SESSION_BUS_ADDRESS") - 1] == "--unsetenv"
    assert "DBUS_SESSION_BUS_ADDRESS" not in SandboxPolicy(env={"DBUS_SESSION_BUS_ADDRESS": "x", "A": "1"}).child_env()


def test_per_server_settings_are_read_leniently_and_the_sandbox_stays_on_for_a_bad_value() -> None:
    assert server_settings("s", None).sandbox is True
    off = server_settings("s", {"sandbox": False, "network": False, "writable": ["/data"]})
    assert (off.sandbox, off.network, off.writable, off.problems) == (False, False, ("/data",), ())
    bad = server_settings("s", {"sandbox": "no", "network": "yes", "writable": ["relative", 5]})
    assert bad.sandbox is True and bad.network is None and bad.writable == ()
    assert bad.problems[0] == "[mcp.servers.s] sandbox must be true or false; the sandbox stays on"
    assert len(bad.problems) == 4
    assert server_settings("s", 5).problems == ("[mcp.servers.s] in settings.toml is not a section; it was ignored",)


def test_mounts_go_parents_first_so_a_runtime_folder_inside_a_writable_root_stays_hidden() -> None:
    argv = bwrap_argv("bwrap", ["srv"], SandboxPolicy(writable=("/tmp/x", "/")), BusEndpoints(), "/tmp/x/run")
    order = [argv[i:i + 2] for i in range(len(argv)) if argv[i] in ("--bind-try", "--tmpfs", "--dev", "--proc")]
    assert order == [["--bind-try", "/"], ["--dev", "/dev"], ["--proc", "/proc"], ["--tmpfs", "/tmp"],
                     ["--bind-try", "/tmp/x"], ["--tmpfs", "/tmp/x/run"]]
    # the user's own /tmp given as a root: bound after the fresh one, so it is the real /tmp
    same = bwrap_argv("bwrap", ["srv"], SandboxPolicy(writable=("/tmp",)), BusEndpoints(), None)
    assert same.index("--tmpfs") < same.index("--bind-try")


def test_only_the_top_level_entries_a_command_line_names_under_tmp_are_bound_back(tmp_path: Path) -> None:
    from hearthside.core.sandbox import launch_entries

    policy = SandboxPolicy(cwd="/tmp/work/sub", readable=("/tmp/venv/bin/python", "/usr/bin/python3"))
    entries = launch_entries(["/tmp/checkout/.venv/bin/python", "/tmp/checkout/tests/srv.py", "--flag",
                              "relative.py"], policy, ["/tmp", "/run/user/0"])
    assert set(entries) <= {"/tmp/checkout", "/tmp/work", "/tmp/venv"} and "/tmp/work" in entries
    assert "/tmp" not in entries
    argv = bwrap_argv("bwrap", ["/tmp/checkout/.venv/bin/python"], policy, BusEndpoints(("/tmp/checkout/bus",)), None)
    tmpfs, ro = argv.index("--tmpfs"), argv.index("/tmp/checkout")
    assert argv[tmpfs + 1] == "/tmp" and tmpfs < ro and argv[ro - 1] == "--ro-bind-try"
