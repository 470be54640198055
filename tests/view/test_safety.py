"""The view is safe by construction: it serves only journals under its folder and the artifacts
inside their stores, shows every text redacted and escaped, answers only requests for its own
address, binds loopback unless told, and never takes a journal's writer lock."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from chaoseval.store.artifacts import store_root, trial_dir_name
from tests.view.conftest import Served, copy_runs

SECRET = "sk-view-test-0123456789abcdef"
SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"


def _png() -> bytes:
    """A 1x1 red PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    raw = zlib.compress(b"\x00\xff\x00\x00")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def _rewrite(journal: Path, change: Callable[[dict[str, object]], None]) -> str:
    """Applies ``change`` to the first failed trial's line; its trial id."""
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    target = next(d for d in lines if d.get("type") == "trial" and d["status"] == "failed")
    change(target)
    journal.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return str(target["trial_id"])


@pytest.fixture
def stores(runs: Path, tmp_path: Path) -> tuple[Path, Path, str]:
    """A folder whose release-1 journal lists artifacts: a screenshot and stderr in its store,
    and four that leave it (``../``, an absolute path, a symlink out of the store); its
    release-2 store is itself a symlink out of the folder. The folder, a secret file outside
    it, and the trial's id."""
    root = copy_runs(runs, tmp_path / "view")
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("OUTSIDE-THE-FOLDER")
    journal = root / "release-1" / "run.jsonl"
    names: dict[str, str] = {}

    def add(d: dict[str, object]) -> None:
        here = store_root(journal) / trial_dir_name(str(d["trial_id"]))
        here.mkdir(parents=True, exist_ok=True)
        (here / "shot.png").write_bytes(_png())
        (here / "stderr.txt").write_text("Traceback: boom <script>x</script>\n")
        (here / "link.txt").symlink_to(secret)
        rel = here.relative_to(journal.parent).as_posix()
        names.update(rel=rel)
        d["artifacts"] = [
            {"name": "shot.png", "path": f"{rel}/shot.png", "size": 10},
            {"name": "stderr.txt", "path": f"{rel}/stderr.txt", "size": 10},
            {"name": "dots.txt", "path": "../../outside/secret.txt", "size": 1},
            {"name": "abs.txt", "path": str(secret), "size": 1},
            {"name": "link.txt", "path": f"{rel}/link.txt", "size": 1},
            {"name": "store-dots.txt", "path": "run.jsonl.d/../../../outside/secret.txt",
             "size": 1},
        ]  # fmt: skip

    trial = _rewrite(journal, add)
    # release-2: its whole store a symlink to a folder outside, holding a "screenshot".
    other = root / "release-2" / "run.jsonl"
    away = tmp_path / "away-store"
    (away / "x").mkdir(parents=True)
    (away / "x" / "shot.png").write_bytes(_png())
    store_root(other).symlink_to(away)
    _rewrite(other, lambda d: d.update(
        artifacts=[{"name": "shot.png", "path": "run.jsonl.d/x/shot.png", "size": 10}]
    ))  # fmt: skip
    return root, secret, trial


def test_artifacts_outside_the_store_or_folder_are_never_served(
    stores: tuple[Path, Path, str], serve: Callable[[Path], Served]
) -> None:
    root, secret, trial = stores
    view = serve(root)
    j = "release-1/run.jsonl"
    shot = view.get("/artifact", params={"j": j, "id": trial, "n": 0})
    assert shot.status_code == 200 and shot.headers["content-type"] == "image/png"
    assert shot.content == _png()
    stderr = view.get("/artifact", params={"j": j, "id": trial, "n": 1})
    assert stderr.headers["content-type"].startswith("text/plain")
    assert stderr.headers["x-content-type-options"] == "nosniff"
    for n in (2, 3, 4, 5):  # ../, absolute, a symlink out, ../ through the store's name
        out = view.get("/artifact", params={"j": j, "id": trial, "n": n})
        assert out.status_code == 404, (n, out.text)
        assert "OUTSIDE-THE-FOLDER" not in out.text
    page = view.get("/trial", params={"j": j, "id": trial}).text
    assert "OUTSIDE-THE-FOLDER" not in page
    assert page.count("not served (") == 4
    assert "<img class='shot' src='/artifact?j=release-1%2Frun.jsonl" in page
    assert "Traceback: boom &lt;script&gt;x&lt;/script&gt;" in page  # stderr's tail, escaped
    # A store that is itself a symlink out of the folder serves nothing.
    t2 = next(
        json.loads(line)["trial_id"]
        for line in (root / "release-2" / "run.jsonl").read_text().splitlines()
        if '"artifacts"' in line
    )
    away = view.get("/artifact", params={"j": "release-2/run.jsonl", "id": t2, "n": 0})
    assert away.status_code == 404
    assert secret.read_text() == "OUTSIDE-THE-FOLDER"


def test_a_journal_linked_from_outside_the_folder_is_not_served(
    runs: Path, tmp_path: Path, serve: Callable[[Path], Served]
) -> None:
    root = tmp_path / "view"
    root.mkdir()
    (root / "linked.jsonl").symlink_to(runs / "release-1" / "run.jsonl")
    view = serve(root)
    assert "linked.jsonl" not in view.get("/").text
    assert view.get("/run", params={"j": "linked.jsonl"}).status_code == 404


def test_hostile_text_is_escaped_and_secrets_redacted_on_every_page(
    runs: Path, tmp_path: Path, serve: Callable[[Path], Served], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_runs(runs, tmp_path / "view")
    journal = root / "release-1" / "run.jsonl"

    def hostile(d: dict[str, object]) -> None:
        d["answer"] = f"{SCRIPT} key {SECRET}"
        d["error"] = IMG
        d["checks"] = [{"name": IMG, "passed": False, "detail": f"expected {SCRIPT}, got {SECRET}"}]
        traj = d["trajectory"]
        assert isinstance(traj, dict)
        step = next(s for s in traj["steps"] if s["kind"] == "tool")
        step["args"] = {"q": IMG, "token": SECRET}
        step["result"] = {"body": SCRIPT}

    trial = _rewrite(journal, hostile)
    # The secret is one only now (as a --redact pattern or an environment key is for a run
    # being reported): the view redacts what it shows, not only what was redacted when written.
    monkeypatch.setenv("VIEW_TEST_API_KEY", SECRET)
    view = serve(root)
    j = "release-1/run.jsonl"
    pages = [
        view.get("/"),
        view.get("/run", params={"j": j}),
        view.get("/run", params={"j": j, "status": "failed"}),
        view.get("/fragment/trials", params={"j": j}),
        view.get("/fragment/report", params={"j": j}),
        view.get("/trial", params={"j": j, "id": trial}),
        view.get("/compare", params={"a": j, "b": "release-2/run.jsonl"}),
        view.get("/trends", params={"j": j}),
        view.get("/run", params={"j": f"{SCRIPT}.jsonl"}),  # the 404 names what was asked
    ]
    for response in pages:
        low = response.text.lower()
        assert "<script>alert" not in low and "<img src=x" not in low, response.url
        assert SECRET not in response.text, response.url
        assert "script-src 'self'" in response.headers["content-security-policy"]
    trial_page = pages[5].text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; key [REDACTED]" in trial_page
    assert "&lt;img src=x onerror=alert(2)&gt;" in trial_page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[8].text


def _raw(port: int, host: str | None) -> str:
    """The status line of a GET / sent by hand (a browser cannot be made to send a Host it
    does not mean; a rebound DNS name makes it send the attacker's)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        head = "GET / HTTP/1.1\r\n" if host is not None else "GET / HTTP/1.0\r\n"
        if host is not None:
            head += f"Host: {host}\r\n"
        s.sendall((head + "Connection: close\r\n\r\n").encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data.split(b"\r\n", 1)[0].decode()


def test_requests_for_another_host_are_refused(
    runs: Path, serve: Callable[[Path], Served]
) -> None:
    view = serve(runs)
    port = view.port
    assert " 200 " in _raw(port, f"127.0.0.1:{port}")
    assert " 200 " in _raw(port, f"localhost:{port}")
    assert " 421 " in _raw(port, f"attacker.example:{port}")
    assert " 421 " in _raw(port, "attacker.example")
    assert " 421 " in _raw(port, None)


def test_the_command_binds_loopback_by_default_and_warns_for_another_host(
    runs: Path, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "chaoseval", "view", str(runs), "--port", "0"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "on http://127.0.0.1:" in line, line
        port = int(line.rsplit(":", 1)[1].strip(" /\n"))
        assert " 200 " in _raw(port, f"127.0.0.1:{port}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the warning, then a clear error.
    done = subprocess.run(
        [*command[:-2], "--host", "192.0.2.1", "--port", "0"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "warning:" in done.stderr and "not a loopback address" in done.stderr
    assert "--host 192.0.2.1 --port 0: cannot listen there" in done.stderr


HOLD = """
import sys
from pathlib import Path
from chaoseval.store.lock import JournalLock
lock = JournalLock(Path(sys.argv[1]))
lock.acquire()
print("locked", flush=True)
sys.stdin.read()
lock.release()
"""


def test_the_view_never_takes_the_writer_lock(
    runs: Path, tmp_path: Path, serve: Callable[[Path], Served]
) -> None:
    root = copy_runs(runs, tmp_path / "view")
    journal = root / "release-1" / "run.jsonl"
    store = store_root(journal)
    before = sorted(os.listdir(store)) if store.exists() else []
    view = serve(root)
    # A writer holds the lock (another process, as a run would): every page still answers.
    writer = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(journal)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "locked"
        for path in ("/run", "/fragment/trials", "/fragment/report"):
            assert view.get(path, params={"j": "release-1/run.jsonl"}).status_code == 200
    finally:
        writer.communicate("", timeout=60)
    # And the view, having read everything, leaves the lock free for the next writer.
    again = subprocess.run(
        [sys.executable, "-c", HOLD, str(journal)], input="", capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert again.stdout.strip() == "locked", again.stderr
    after = sorted(os.listdir(store)) if store.exists() else []
    assert after == before  # nothing written beside the journal


def test_hosts_allowed_are_loopback_names_and_the_address_served() -> None:
    from chaoseval.view.app import allowed_hosts

    assert allowed_hosts("127.0.0.1") == {"localhost", "127.0.0.1", "::1"}
    assert "10.1.2.3" in allowed_hosts("10.1.2.3")
    every = allowed_hosts("0.0.0.0")
    assert socket.gethostname().lower() in every and "0.0.0.0" not in every
