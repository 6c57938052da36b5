"""The default progress display of Model.fit, on stderr as `vbn fit` shows it: on a terminal
one line rewritten in place with every chain and the time left; otherwise a line per chain
at most every two seconds, plus one when each phase ends."""

import sys
import threading
import time


def _duration(seconds):
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class ConsoleProgress:
    """Called as progress(chain, iteration, iterations, warmup) from the chains' threads."""

    def __init__(self, chains, warmup, draws, stream=None, line_interval=2.0):
        self.stream = stream or sys.stderr
        self.terminal = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.warmup, self.draws, self.line_interval = warmup, draws, line_interval
        self.last = [None] * chains
        self.printed_at = [-1e300] * chains
        self.start = time.monotonic()
        self.first = None  # (time, fraction) of the first report
        self.line_open = False
        self.lock = threading.Lock()

    def _fraction(self):
        total = (self.warmup + self.draws) * len(self.last)
        done = sum(0 if p is None else (p[0] if p[2] else self.warmup + p[0]) for p in self.last)
        return min(done / total, 1.0) if total > 0 else -1.0

    def _eta(self, now):
        f = self._fraction()
        elapsed, gained = now - self.first[0], f - self.first[1]
        if f < 0 or f >= 1 or elapsed < 1 or gained < 0.01:
            return ""
        return "ETA " + _duration((1 - f) * elapsed / gained)

    @staticmethod
    def _describe(chain, p):
        pct = 100 * p[0] // p[1] if p[1] > 0 else 100
        return f"chain {chain + 1} {'warmup' if p[2] else 'sampling'} {p[0]}/{p[1]} ({pct}%)"

    def __call__(self, chain, iteration, iterations, warmup):
        with self.lock:
            now = time.monotonic() - self.start
            if not 0 <= chain < len(self.last):
                return
            self.last[chain] = (iteration, iterations, warmup)
            if self.first is None:
                self.first = (now, self._fraction())
            eta = self._eta(now)
            if self.terminal:
                line = "  ".join(self._describe(c, p) for c, p in enumerate(self.last) if p is not None)
                self.stream.write("\r" + line + ("  " + eta if eta else "") + "\x1b[K")
                self.stream.flush()
                self.line_open = True
                return
            phase_end = iteration >= iterations
            if not phase_end and now - self.printed_at[chain] < self.line_interval:
                return
            self.printed_at[chain] = now
            line = self._describe(chain, self.last[chain])
            self.stream.write(line + (", " + eta if eta and not phase_end else "") + "\n")
            self.stream.flush()

    def finish(self):
        """Ends the line being rewritten, so that later output starts on a fresh one."""
        with self.lock:
            if self.line_open:
                self.stream.write("\n")
                self.stream.flush()
                self.line_open = False
