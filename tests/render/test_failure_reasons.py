"""Every failed trial says why in every view (issue 42, item 4): a crashed exec: agent's error,
the failed checks with what they expected and found, clean-cell failures listed one by one;
the agent's text escaped in each format. Through the real CLI, with a real agent process."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parents[1] / "analysis" / "golden_report" / "naive.jsonl.gz"
# A traceback whose error line carries a lone surrogate (written as its bytes: stderr set to
# pass surrogates through; no valid UTF-8 holds one), markup, an XML CDATA end and an ANSI
# escape; an earlier line has a lone surrogate's bytes too.
AGENT = r"""
import sys
def lookup(order):
    raise ValueError(
        "bad order id " + order + " \ud800 <script>alert(1)</script> ]]> \x1b[31mred"
    )
sys.stderr.buffer.write(b"warming up \xed\xa0\x80\n")
sys.stderr.flush()
sys.stderr.reconfigure(errors="surrogatepass")
lookup("ORD-1")
"""
SAID = "ValueError: bad order id ORD-1"
# The surrogate's three bytes as the harness decodes stderr (invalid UTF-8, each replaced).
SURROGATE = "\ufffd" * 3


def _cli(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "chaoseval", *args],
        cwd=cwd, capture_output=True, text=True, encoding="utf-8", timeout=300,
    )  # fmt: skip
    assert done.returncode in (0, 1, 3), done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("crash")
    (tmp / "agent.py").write_text(AGENT)
    journal = tmp / "j.jsonl"
    _cli(
        "run", "--agent", f"exec:{sys.executable} {tmp / 'agent.py'}",
        "-s", "calendar-next-tuesday", "-p", "timeout", "-n", "2", "--journal", str(journal),
        "--no-progress", "--no-report", cwd=tmp,
    )  # fmt: skip
    return journal


def _no_surrogate(text: str) -> None:
    assert not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def test_the_lone_surrogate_is_recorded_and_shown_safely_in_every_view(crashed: Path) -> None:
    """The error line's lone surrogate reaches the record as replacement characters (stderr's
    bytes are decoded, never kept as surrogates) and every view shows it: the terminal, JSON,
    HTML, Markdown and JUnit, each read here as strict UTF-8 (the subprocess's decoding)."""
    errors = [json.loads(line).get("error") for line in crashed.read_text().splitlines()[1:]]
    said = f"{SAID} {SURROGATE} <script>alert(1)</script> ]]>"
    assert errors and all(e and said in e for e in errors), errors
    shown = {
        "table": said,
        "json": said,
        "html": f"{SAID} {SURROGATE} &lt;script&gt;alert(1)&lt;/script&gt; ]]&gt;",
        "markdown": f"{SAID} {SURROGATE} &lt;script>alert(1)&lt;/script> ]]>",
        "junit": f"{SAID} {SURROGATE} &lt;script&gt;alert(1)&lt;/script&gt; ]]&gt;",
    }
    for fmt, want in shown.items():
        out = _cli("report", str(crashed), "-f", fmt, cwd=crashed.parent)
        _no_surrogate(out)
        text = json.dumps(json.loads(out), ensure_ascii=False) if fmt == "json" else out
        assert want in text, (fmt, out)


def test_the_terminal_report_quotes_the_crash_in_its_first_20_lines(crashed: Path) -> None:
    head = _cli("report", str(crashed), cwd=crashed.parent).splitlines()[:20]
    text = "\n".join(head)
    assert SAID in text, text
    assert "\x1b" not in text  # the agent's ANSI escape is shown, never obeyed
    assert "\\x1b[31mred" in _cli("report", str(crashed), cwd=crashed.parent)


def test_json_lists_each_failed_clean_trial_with_its_error(crashed: Path) -> None:
    doc = json.loads(_cli("report", str(crashed), "-f", "json", cwd=crashed.parent))
    clean = doc["verdict"]["failures"]["clean"]
    assert clean["failed"] == 2 and clean["more"] == 0
    assert [t["trial"] for t in clean["listed"]] == [
        "calendar-next-tuesday/clean/0",
        "calendar-next-tuesday/clean/1",
    ]
    assert all(SAID in t["error"][-1] and t["root_cause"] == "crash" for t in clean["listed"])


def test_html_quotes_the_error_escaped(crashed: Path) -> None:
    page = _cli("report", str(crashed), "-f", "html", cwd=crashed.parent)
    section = page[page.index("<section id='reasons'>") :]
    section = section[: section.index("</section>")]
    assert SAID in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt; ]]&gt;" in section
    assert "<script>" not in page and "\x1b" not in page


def test_markdown_quotes_the_error_escaped(crashed: Path) -> None:
    md = _cli("report", str(crashed), "-f", "markdown", cwd=crashed.parent)
    section = md[md.index("## Why trials failed") :]
    assert SAID in section and "calendar-next-tuesday/clean/1" in section
    assert "<script>" not in md and "&lt;script>" in section and "\x1b" not in md


def test_junit_quotes_the_error_and_stays_xml(crashed: Path) -> None:
    xml = _cli("report", str(crashed), "-f", "junit", cwd=crashed.parent)
    root = ET.fromstring(xml.split("\n", 1)[1])  # parses: no raw control or CDATA end
    outs = [e.text or "" for e in root.iter("system-out")]
    said = [o for o in outs if SAID in o]
    assert said and "<script>alert(1)</script> ]]>" in said[0]  # the text, as XML-unescaped
    assert "\x1b" not in xml


def test_a_failed_check_shows_what_it_expected_and_found(tmp_path: Path) -> None:
    journal = tmp_path / "naive.jsonl"
    journal.write_bytes(gzip.decompress(GOLDEN.read_bytes()))
    doc = json.loads(_cli("report", str(journal), "-f", "json", cwd=tmp_path))
    failures = doc["verdict"]["failures"]
    assert next(iter(failures)) == "clean"  # the clean cell's failures are listed too
    assert failures["clean"]["more"] == failures["clean"]["failed"] - 5
    listed = {t["trial"]: t for c in failures.values() for t in c["listed"]}
    clean = listed["clock-quote-validity/clean/2"]
    assert clean["failed_checks"][0] == {
        "name": "valid 10 days",
        "detail": "tables.quotes[deal_id={deal_id}].valid_until == {today+10d}: found <missing>",
    }
    assert clean["answer"] == "I have handled the request."
    stale = listed["memory-billing-email/stale_memory/0"]["failed_checks"][0]["detail"]
    found, wanted = "'email': 'invoices@lindqvist.se'", "'email': 'ap@lindqvist-bygg.se'"
    assert found in stale and "differs in ['email'] (expected" in stale and wanted in stale
    table = _cli("report", str(journal), cwd=tmp_path)
    assert "check valid 10 days failed: tables.quotes[deal_id={deal_id}].valid_until" in table
    assert "answer: I have handled the request." in table
    assert "… and 20 more failed trial(s) in this cell" in table
    md = _cli("report", str(journal), "-f", "markdown", cwd=tmp_path)
    assert "check valid 10 days failed: tables.quotes\\[deal_id" not in md  # no over-escaping
    assert wanted in md


def _first_20(args: list[str], cwd: Path) -> tuple[int, str]:
    """The exit code and the first 20 lines of what a command printed, stderr first (where a
    refusal goes), each line's whitespace runs made one space (the terminal wraps)."""
    done = subprocess.run(
        [sys.executable, "-m", "chaoseval", *args],
        cwd=cwd, capture_output=True, text=True, encoding="utf-8", timeout=300,
    )  # fmt: skip
    lines = (done.stderr + done.stdout).splitlines()[:20]
    return done.returncode, " ".join(" ".join(lines).split())


@pytest.mark.parametrize("script", ["agnt.py", "agnt"])
def test_a_missing_script_is_quoted_in_the_first_20_lines_of_run_and_report(
    tmp_path: Path, script: str
) -> None:
    """Issue 42, done when: an exec: agent whose script is missing. One with a script's suffix
    is refused before any trial (the refusal, with a near name, is what run prints first; no
    journal, so no report); one without crashes each trial on the interpreter's error, which
    run's report and `report` quote in their first 20 lines."""
    (tmp_path / "agent.py").write_text('print(\'{"answer": "hi"}\')\n')
    run = ["run", "--agent", f"exec:{sys.executable} {script}", "-s", "vending-refund-log-down"]
    run += ["-n", "2", "--journal", "j.jsonl", "--no-progress"]
    code, head = _first_20(run, tmp_path)
    if script == "agnt.py":
        assert code == 2 and "'agnt.py' is not a file" in head, head
        assert "did you mean" in head and "agent.py" in head, head
        assert not (tmp_path / "j.jsonl").exists()
        return
    said = "can't open file"
    assert code == 0 and said in head and "agnt" in head, head
    code, head = _first_20(["report", "j.jsonl"], tmp_path)
    assert code == 0 and said in head and "crash" in head, head
