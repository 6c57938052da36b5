#!/usr/bin/env python3
"""Golden tests of the vbn command line, and a checker of the transcripts in the docs.

    golden.py cases VBN ROOT [NAME...]   run tests/cli/golden/cases/**/*.cmd (or those whose
                                         name contains one of NAME) and diff each against its
                                         .expected file
    golden.py docs VBN ROOT [FILE...]    run the `$ vbn ...` transcripts of FILE (default:
                                         README.md and docs/*.md) and diff their output

VBN is the vbn binary, ROOT the repository. With VBN_UPDATE_GOLDEN=1, `cases` rewrites the
expected files from what the binary prints instead of failing (the docs are never rewritten).
tests/cli/golden/README.md describes both formats. Python 3 standard library only.
"""

import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
INPUTS = os.path.join(HERE, "inputs")
TIMEOUT = 60  # seconds per command; a case that takes this long is a bug in the case

# A timing: a number followed by s, ms, us, µs or seconds (a CmdStan CSV file's footer), with
# or without a space, not followed by a letter or digit ("3 samples" is not one). The spaces
# before it go too, so a right-aligned column of timings masks to the same text whatever the width of its numbers.
TIMING = re.compile(r" *(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)? ?(?:s|ms|us|µs|seconds)(?![\w])")

# A progress line of `vbn fit` before its phase ends: printed by time (every 2 s when stderr is
# not a terminal), so only on a slow machine; the line at 100% is always printed and kept.
PROGRESS = re.compile(r"^chain \d+ (?:warmup|sampling) (\d+)/(?!\1 )\d+ \(\d+%\)(?:, ETA \w+)?\n", re.M)

# A number written with 12 or more significant digits (JSON, CSV files, parameters echoed):
# compared at 10, since its last bits vary between compilers, flags and CPUs.
LONG_NUMBER = re.compile(r"(?<![\w.])-?(?=(?:0\.0*)?[1-9](?:\.?\d){11})\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])")


def round_long(m):
    return f"{float(m.group(0)):.10g}"


# Any progress line: a transcript leaves them out, as a terminal shows one line rewritten in
# place, and with several threads the chains' lines come in any order.
ANY_PROGRESS = re.compile(r"^chain \d+ (?:warmup|sampling) \d+/\d+ \(\d+%\)(?:, ETA \w+)?$")

# In JSON, a key that names seconds: its value is a timing.
SECONDS = re.compile(r'("\w*seconds\w*": *)[-+0-9.eE]+')


def mask(text, scratch=None, digits=False):
    """Text with the machine-dependent parts replaced: timings and the scratch dir's path, and
    with `digits`, long numbers rounded."""
    if scratch:
        for path in sorted({scratch, os.path.realpath(scratch)}, key=len, reverse=True):
            text = text.replace(path, "<scratch>")
    text = PROGRESS.sub("", text)
    if digits:
        text = LONG_NUMBER.sub(round_long, text)
    text = SECONDS.sub(r"\1<time>", text)
    return TIMING.sub(lambda m: " <time>" if m.group(0).startswith(" ") else "<time>", text)


class Sandbox:
    """Scratch dirs where examples/ (a copy) and inputs/ are available and `vbn` is on PATH."""

    def __init__(self, vbn, root, base):
        self.base = base
        self.bin = os.path.join(base, "bin")
        os.makedirs(self.bin, exist_ok=True)
        link = os.path.join(self.bin, "vbn")
        if not os.path.exists(link):
            os.symlink(os.path.abspath(vbn), link)
        # One pristine copy per run; each scratch dir gets its own copy of that, so a command
        # that writes into examples/ changes neither the repository nor the other cases.
        self.examples = os.path.join(base, "examples")
        if not os.path.exists(self.examples):
            shutil.copytree(os.path.join(root, "examples"), self.examples)
        self.count = 0
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("VBN_")}
        self.env.update(PATH=self.bin + os.pathsep + os.environ.get("PATH", ""), LC_ALL="C.UTF-8",
                        LANG="C.UTF-8", TZ="UTC", COLUMNS="100")

    def scratch(self, inputs=True):
        self.count += 1
        d = os.path.join(self.base, f"run{self.count}")
        os.makedirs(d)
        shutil.copytree(self.examples, os.path.join(d, "examples"))
        if inputs:  # the cases' test-only files; a doc's reader has only examples/
            os.symlink(INPUTS, os.path.join(d, "inputs"))
        return d


def decode(data):
    return data.decode("utf-8", errors="backslashreplace")


def diff(expected, actual, name_a, name_b):
    lines = difflib.unified_diff(expected.splitlines(keepends=True), actual.splitlines(keepends=True),
                                 name_a, name_b, n=3)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ no newline at end\n")
    return "".join(out)


# --- golden cases ---------------------------------------------------------------------------

def find_cases(filters):
    found = []
    for dirpath, _, files in os.walk(CASES):
        for f in files:
            if f.endswith(".cmd"):
                name = os.path.relpath(os.path.join(dirpath, f[:-4]), CASES)
                if not filters or any(x in name for x in filters):
                    found.append(name)
    return sorted(found)


def section(title, text):
    if not text:
        return ""
    if not text.endswith("\n"):
        text += "\n(no newline at end)\n"
    return f"--- {title}\n{text}"


def run_case(sandbox, name):
    """The case's transcript: each command with its stdout, stderr and exit status."""
    scratch = sandbox.scratch()
    out = []
    with open(os.path.join(CASES, name + ".cmd"), encoding="utf-8") as f:
        lines = [l.rstrip("\n") for l in f]
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith("@cat "):  # show a file an earlier command wrote
            path = line[5:].strip()
            out.append(f"@cat {path}\n")
            try:
                with open(os.path.join(scratch, path), "rb") as g:
                    out.append(section("file", mask(decode(g.read()), scratch, digits=True)) or "--- file (empty)\n")
            except OSError as e:
                out.append(f"--- no such file: {e.strerror}\n")
            continue
        args = shlex.split(line)
        out.append(f"$ {line.strip()}\n")
        if not args or args[0] != "vbn":
            out.append("--- not run: a command line starts with 'vbn'\n")
            continue
        try:
            p = subprocess.run(args, cwd=scratch, env=sandbox.env, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=TIMEOUT)
            out.append(section("stdout", mask(decode(p.stdout), scratch, digits=True)))
            out.append(section("stderr", mask(decode(p.stderr), scratch, digits=True)))
            out.append(f"--- exit {p.returncode}\n")
        except subprocess.TimeoutExpired:
            out.append(f"--- timed out after {TIMEOUT} s\n")
    return "".join(out) or "--- the case has no command\n"


def cases_main(vbn, root, filters):
    update = os.environ.get("VBN_UPDATE_GOLDEN") == "1"
    names = find_cases(filters)
    passed = failed = updated = 0
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vbn-golden-") as base:
        sandbox = Sandbox(vbn, root, base)
        for name in names:
            expected_path = os.path.join(CASES, name + ".expected")
            actual = run_case(sandbox, name)
            try:
                with open(expected_path, encoding="utf-8") as f:
                    expected = f.read()
            except FileNotFoundError:
                expected = None
            if expected == actual:
                passed += 1
                continue
            if update:
                with open(expected_path, "w", encoding="utf-8") as f:
                    f.write(actual)
                print(f"updated {os.path.relpath(expected_path, root)}")
                updated += 1
                continue
            failed += 1
            rel = os.path.relpath(expected_path, root)
            if expected is None:
                print(f"FAIL {name}: no expected file {rel} (VBN_UPDATE_GOLDEN=1 writes it); the output was:")
                print(actual, end="")
            else:
                print(f"FAIL {name}: the output differs from {rel} (- expected, + actual):")
                print(diff(expected, actual, rel, "actual"), end="")
    # An expected file whose case is gone is stale.
    if not filters:
        for dirpath, _, files in os.walk(CASES):
            for f in files:
                if f.endswith(".expected") and not os.path.exists(os.path.join(dirpath, f[:-9] + ".cmd")):
                    path = os.path.join(dirpath, f)
                    if update:
                        os.remove(path)
                        print(f"removed {os.path.relpath(path, root)} (no .cmd)")
                    else:
                        print(f"FAIL {os.path.relpath(path, root)}: no .cmd file for it (remove it)")
                        failed += 1
    took = time.monotonic() - start
    note = f", {updated} expected files updated" if update else ""
    print(f"{passed} passed, {failed} failed{note} ({len(names)} cases in {took:.1f} s)")
    return 1 if failed else 0


# --- doc transcripts ------------------------------------------------------------------------

FENCE = re.compile(r"^( *)(```+|~~~+)\s*(\S*)")


def transcripts(path):
    """Transcripts of a Markdown file: lists of (line number, command, [(line number, text)])."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    found = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3)
        j = i + 1
        body = []
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence)) and
                                      lines[j].strip().strip(fence[0]) == ""):
            text = lines[j]
            body.append((j + 1, text[indent:] if text[:indent].strip() == "" else text.lstrip()))
            j += 1
        i = j + 1
        if info not in ("", "console") or not body or not body[0][1].startswith("$ vbn "):
            continue
        commands = []
        k = 0
        while k < len(body):
            number, text = body[k]
            if text.startswith("$ "):
                command = text[2:]
                while command.endswith("\\") and k + 1 < len(body):  # a command continued
                    k += 1
                    command = command[:-1] + " " + body[k][1].strip()
                commands.append((number, command, []))
            else:
                commands[-1][2].append((number, text))
            k += 1
        found.append(commands)
    return found


def matches(expected, actual):
    """Whether the lines `actual` match `expected`, where a line '…' stands for any lines."""
    parts = [[]]
    for line in expected:
        if line == "…":
            parts.append([])
        else:
            parts[-1].append(line)
    if len(parts) == 1:
        return expected == actual
    first, last, middle = parts[0], parts[-1], parts[1:-1]
    if actual[:len(first)] != first or len(actual) < len(first) + len(last):
        return False
    if last and actual[len(actual) - len(last):] != last:
        return False
    at, end = len(first), len(actual) - len(last)
    for part in middle:  # each in order, at its earliest place
        while at + len(part) <= end and actual[at:at + len(part)] != part:
            at += 1
        if at + len(part) > end:
            return False
        at += len(part)
    return True


def tidy(lines):
    """Lines with trailing blanks removed, and no blank lines at the end."""
    lines = [l.rstrip() for l in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def docs_main(vbn, root, files):
    if not files:
        docs = os.path.join(root, "docs")
        files = [os.path.join(root, "README.md")] + sorted(
            os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    passed = failed = 0
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="vbn-docs-") as base:
        sandbox = Sandbox(vbn, root, base)
        for path in files:
            rel = os.path.relpath(os.path.abspath(path), root)
            if rel.startswith(".."):
                rel = path
            for commands in transcripts(path):
                scratch = sandbox.scratch(inputs=False)  # one per transcript: its commands share files
                for number, command, expected in commands:
                    try:
                        p = subprocess.run(["bash", "-c", command], cwd=scratch, env=sandbox.env,
                                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, timeout=TIMEOUT)
                        output = decode(p.stdout)
                    except subprocess.TimeoutExpired:
                        output = f"(timed out after {TIMEOUT} s)\n"
                    want = tidy(mask(text) for _, text in expected)
                    got = tidy(l for l in mask(output, scratch).splitlines() if not ANY_PROGRESS.match(l))
                    if matches(want, got):
                        passed += 1
                        continue
                    failed += 1
                    print(f"FAIL {rel}:{number}: $ {command}")
                    print(f"  its output (+) differs from the transcript's (-), timings masked:")
                    for line in difflib.unified_diff([l + "\n" for l in want], [l + "\n" for l in got],
                                                     f"{rel}:{number + 1}", "actual", n=2):
                        print("  " + line, end="" if line.endswith("\n") else "\n")
    took = time.monotonic() - start
    print(f"{passed} passed, {failed} failed ({len(files)} files in {took:.1f} s)")
    return 1 if failed else 0


def main(argv):
    if len(argv) < 4 or argv[1] not in ("cases", "docs"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    mode, vbn, root, rest = argv[1], argv[2], os.path.abspath(argv[3]), argv[4:]
    if not os.access(vbn, os.X_OK):
        print(f"golden.py: {vbn} is not an executable", file=sys.stderr)
        return 2
    if mode == "cases":
        return cases_main(vbn, root, rest)
    return docs_main(vbn, root, rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
