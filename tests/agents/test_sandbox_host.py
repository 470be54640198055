"""The sandbox holds as root: an exec: agent run by root under bubblewrap cannot set the
host's sysctls, make a user namespace, or reach anything on the network but its own trial's
servers; and the host is unchanged after it tried. Real bwrap, real processes, real sockets."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from tests.agents.test_sandbox import command, run_exec

# Each host setting the agent tries to write, with the value it writes: the one it reads
# there (so where the sandbox fails, the host is still as it was). drop_caches cannot be
# read: it is only opened for writing, never written.
SYSCTLS = [
    "/proc/sys/kernel/hostname",
    "/proc/sys/kernel/core_pattern",
    "/proc/sys/kernel/randomize_va_space",
    "/proc/sys/fs/protected_symlinks",
    "/proc/sys/net/ipv4/ip_forward",
    "/proc/sys/vm/drop_caches",
    "/sys/kernel/mm/transparent_hugepage/enabled",
]

ATTACKER = r"""
import ctypes, json, os, socket, sys, urllib.error, urllib.request
paths, foreign = json.loads(sys.argv[1]), int(sys.argv[2])
seen = {}
for path in paths:
    try:
        if path.endswith("drop_caches"):
            os.close(os.open(path, os.O_WRONLY))
        else:
            value = open(path).read()
            with open(path, "w") as fh:
                fh.write(value)
        seen[path] = "written"
    except OSError as exc:
        seen[path] = type(exc).__name__
try:
    socket.sethostname(socket.gethostname())
    seen["sethostname"] = "done"
except OSError as exc:
    seen["sethostname"] = type(exc).__name__
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER = 0x10000000
seen["userns"] = "made" if libc.unshare(CLONE_NEWUSER) == 0 else os.strerror(ctypes.get_errno())
try:
    socket.create_connection(("127.0.0.1", foreign), timeout=3).close()
    seen["foreign_port"] = "connected"
except OSError as exc:
    seen["foreign_port"] = type(exc).__name__
# chaoseval's side of the relay, asked directly for the foreign port: nothing comes back
control = os.path.join(os.path.dirname(os.getcwd()), "net.sock")
try:
    with socket.socket(socket.AF_UNIX) as ask:
        ask.connect(control)
        ask.sendall(foreign.to_bytes(2, "big"))
        _, fds, _, _ = socket.recv_fds(ask, 1, 1)
    seen["relay_foreign"] = "descriptor" if fds else "refused"
except OSError as exc:
    seen["relay_foreign"] = type(exc).__name__
request = urllib.request.Request(
    os.environ["CHAOSEVAL_TOOLS_URL"] + "/tools/lookup_order",
    data=json.dumps({"order_id": "A-1"}).encode(),
    headers={"content-type": "application/json"},
)
try:
    urllib.request.urlopen(request, timeout=45).read()  # bounds a hang, within the trial's 60 s
    seen["own_tools"] = "reached"
except urllib.error.HTTPError:  # the tool's server answered: reached
    seen["own_tools"] = "reached"
except OSError as exc:
    seen["own_tools"] = repr(exc)
print(json.dumps({"answer": json.dumps(seen)}))
"""


def host_state() -> dict[str, str]:
    state = {"hostname": socket.gethostname()}
    for path in SYSCTLS:
        try:
            state[path] = Path(path).read_text()
        except OSError as exc:
            state[path] = type(exc).__name__
    return state


@pytest.mark.skipif(os.geteuid() != 0, reason="the escapes are root's: run the suite as root")
def test_a_root_agent_in_the_sandbox_cannot_change_the_host_or_leave_its_network(tmp_path, bwrap):
    before = host_state()
    with socket.create_server(("127.0.0.1", 0)) as foreign:  # a host service not the trial's
        foreign.settimeout(0.1)
        port = foreign.getsockname()[1]
        cmd = command(tmp_path, ATTACKER, json.dumps(SYSCTLS), str(port))
        [record] = run_exec(tmp_path, cmd, sandbox="bwrap")
        with pytest.raises(TimeoutError):  # not even a connection reached it
            foreign.accept()
    seen = json.loads(record.answer or "{}")
    assert host_state() == before
    assert {p: seen[p] for p in SYSCTLS if seen.get(p) == "written"} == {}, seen
    assert set(seen) >= {*SYSCTLS, "sethostname", "userns", "foreign_port", "own_tools"}, seen
    assert seen["sethostname"] != "done", seen
    assert seen["userns"] != "made", seen
    assert seen["foreign_port"] != "connected", seen
    assert seen["relay_foreign"] != "descriptor", seen
    assert seen["own_tools"] == "reached", seen
