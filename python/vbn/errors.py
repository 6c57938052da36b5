"""vbn's exceptions: one per kind of vbn::Error (<vbn/error.hpp>), each carrying the whole
located message (str(e), as the command line prints it) and its parts as attributes."""

import re

# The first line of a located message: "FILE:LINE:COLUMN: error: MESSAGE" for models,
# "FILE:LINE:COLUMN: MESSAGE" for CSV data, "FILE:LINE: MESSAGE" for CmdStan CSV files of draws.
_LOCATED = re.compile(r"^(?P<file>.*):(?P<line>\d+):(?P<column>\d+): (?:error: )?(?P<message>.*)$")
_LOCATED_LINE = re.compile(r"^(?P<file>.*):(?P<line>\d+): (?P<message>.*)$")


class Error(RuntimeError):
    """The base of every exception vbn raises.

    line and column locate the first problem (1-based) or are None when the error has no
    single place; message is the first problem's text without its place."""

    def __init__(self, text, line=0, column=0):
        super().__init__(text)
        self.line = int(line) or None
        self.column = int(column) or None
        self.file = None
        self.message = text.splitlines()[0] if text else text
        if not self.line:
            return
        first = _LOCATED.match(self.message)
        if first and int(first["line"]) == self.line and int(first["column"]) == self.column:
            self.file, self.message = first["file"], first["message"]
            return
        first = _LOCATED_LINE.match(self.message)
        if first and int(first["line"]) == self.line:
            self.file, self.message = first["file"], first["message"]


class UsageError(Error, ValueError):
    """Bad options or arguments."""


class ModelError(Error):
    """The model text does not parse or check: file, line, column and message locate the
    first error; str(e) is every diagnostic with the line quoted and a caret."""


class DataError(Error, ValueError):
    """The data do not fit the model. column names the column (a name when the Python side
    found the problem), row the row; message says what is wrong."""

    def __init__(self, text, line=0, column=0, *, row=None, column_name=None):
        super().__init__(text, line, column)
        self.row = row if row is not None else self.line
        if column_name is not None:
            self.column = column_name


class LimitError(Error):
    """A request whose cost would be exponential or too large for the machine."""


class InferenceError(Error):
    """A numerical failure during inference (every chain failed, say)."""


class IoError(Error):
    """A file that cannot be read or written."""


class CancelledError(Error):
    """The run was cancelled."""
