"""What an ``exec:`` agent says: its stdout and stderr kept bounded and redacted
(:class:`Capture`), and its answer read from stdout's last line (:func:`parse_answer`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from chaoseval import redact
from chaoseval.model import untrusted
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import TrialLink

STDOUT_LIMIT = 1 << 20  # bytes of stdout kept in memory (head)
TAIL_LIMIT = 64 << 10  # bytes of stdout's end kept apart
STDERR_LIMIT = 256 << 10
ANSWER_LIMIT = 32 << 20  # bytes of the last stdout line read as the JSON answer


@dataclass
class Capture:
    """A bounded copy of one output stream: its head, its tail, its last line (stdout's: the
    JSON answer, whatever its size and wherever head and tail were cut), and how much there
    was. Head and tail keep :data:`redact.MARGIN` bytes past their limits: the text is
    redacted with them, then cut, so a secret across a cut is never kept in part."""

    limit: int
    tail_limit: int = 0
    line_limit: int = 0  # bytes of the last line kept for the answer (0: not tracked)
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    size: int = 0
    line: bytearray = field(default_factory=bytearray)  # the line being written
    last: bytes = b""  # the last complete line that is not blank
    over: bool = False  # the line being written passed line_limit: it is no answer

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.line_limit:
            self._track(chunk)
        room = self.limit + redact.MARGIN - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_limit:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.tail_limit - redact.MARGIN)]

    def _track(self, chunk: bytes) -> None:
        end = chunk.rfind(b"\n")
        if end >= 0:
            lines = chunk[:end].split(b"\n")
            self._grow(lines[0])
            lines[0] = b"" if self.over else bytes(self.line)
            done = next((ln for ln in reversed(lines) if ln.strip()), None)
            if done is not None or self.over:
                self.last = done or b""  # a line over the limit leaves no answer
            self.line, self.over = bytearray(), False
            chunk = chunk[end + 1 :]
        self._grow(chunk)

    def _grow(self, part: bytes) -> None:
        if self.over:
            return
        self.line += part
        if len(self.line) > self.line_limit:
            self.line, self.over = bytearray(), True

    @property
    def cut(self) -> bool:
        return self.size > len(self.head) + len(self.tail)

    def text(self) -> str:
        """Everything kept, redacted and then cut to the limits; a marker where the middle
        was dropped."""
        head = self.head.decode("utf-8", "replace")
        if not self.cut:  # all of it is here: nothing was cut, nothing to cut
            return redact.redact(head + self.tail.decode("utf-8", "replace"))
        head = redact.head(head, self.limit, more=True)
        if not self.tail_limit:
            return head
        tail = redact.tail(self.tail.decode("utf-8", "replace"), self.tail_limit, more=True)
        gap = self.size - len(head.encode()) - len(tail.encode())
        return head + f"\n[... {gap} bytes not kept ...]\n" + tail

    def last_line(self) -> str:
        if self.over:
            return ""
        data = bytes(self.line) if bytes(self.line).strip() else self.last
        return data.decode("utf-8", "replace").strip()


def parse_answer(stdout: Capture, link: TrialLink | None = None) -> AgentOutput:
    """The last line when it is ``{"answer": ...}``, else the whole of stdout; when that
    line's ``answer`` is itself an answer object's JSON (a framework agent relaying its
    model's answer), that object (:meth:`AgentOutput.unwrapped`). What of it a record cannot
    hold as sent (a lone surrogate, nesting past ``untrusted.MAX_DEPTH``, a line nested past
    what JSON's parser takes) is escaped or cut, and said in a note step of ``link``'s
    trial."""
    found, why = untrusted.Cleaned(), ""
    try:
        parsed = AgentOutput.unwrapped(untrusted.loads(stdout.last_line()))
        parsed = untrusted.clean(parsed, found=found)
    except untrusted.TooDeep as exc:
        parsed, why = None, str(exc)
    except ValueError:
        parsed = None
    output = AgentOutput.from_object(parsed)
    if output is None:
        output = AgentOutput(answer=stdout.text().strip())
        found = untrusted.Cleaned()  # none of the line's values is kept: nothing was done
    if link is not None and why:
        untrusted.note(
            link.state.trajectory, link.world.clock.monotonic(),
            f"the agent's last stdout line is {why}: it is not read as an answer object, "
            "the whole of stdout is the answer", {"line": "stdout"},
        )  # fmt: skip
    elif link is not None and found:
        untrusted.note(link.state.trajectory, link.world.clock.monotonic(),
                       found.sentence("the agent's answer line"), found.args())  # fmt: skip
    return output
