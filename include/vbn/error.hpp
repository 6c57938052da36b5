// vbn's exceptions: one base class, vbn::Error, carrying a kind, a message that already names
// the place, and the place itself; one subclass per kind so that a host can catch the ones it
// handles. Part of the public API (included by <vbn/vbn.hpp>).
#pragma once

#include <stdexcept>
#include <string>

namespace vbn {

// What went wrong.
enum class ErrorKind {
    usage,      // bad options or arguments (UsageError)
    model,      // the model text does not parse or check (ModelError)
    data,       // the data does not fit the model (DataError)
    limit,      // a request whose cost is exponential or too large for the machine (LimitError)
    inference,  // a numerical failure during inference (InferenceError)
    io,         // a file that cannot be read or written (IoError)
    cancelled,  // the caller asked to stop (CancelledError)
};

// The base of every exception vbn throws. what() is the whole message: for models every
// diagnostic as "name:line:column: error: ..." with the line quoted and a caret under the
// place; for data "name:line:column: ..." for up to 20 problems and how many more there were.
class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message, long line = 0, long column = 0)
        : std::runtime_error(message), kind_(kind), line_(line), column_(column) {}

    ErrorKind kind() const { return kind_; }
    // The place of the first problem, 1-based; 0 when the error has no single place.
    // Models: line and column of the model text. Data: the line of a CSV source (1 is the
    // header), or the 1-based row of in-memory data; and the 1-based column.
    long line() const { return line_; }
    long column() const { return column_; }

private:
    ErrorKind kind_;
    long line_;
    long column_;
};

// Bad options or arguments: an unknown method, a non-positive number of chains, a dataset
// used with another model, in-memory columns of different lengths.
class UsageError : public Error {
public:
    UsageError(const std::string& message, long line = 0, long column = 0) : Error(ErrorKind::usage, message, line, column) {}
};

// The model does not parse or check; line() and column() locate the first error.
class ModelError : public Error {
public:
    ModelError(const std::string& message, long line = 0, long column = 0) : Error(ErrorKind::model, message, line, column) {}
};

// The data do not fit the model (a bad value, a missing column, no rows); row() and column()
// locate the first problem (row() is the CSV line for CSV sources, 1 being the header).
class DataError : public Error {
public:
    DataError(const std::string& message, long row = 0, long column = 0) : Error(ErrorKind::data, message, row, column) {}
    long row() const { return line(); }
};

// A request that would cost exponential time or memory: too many unobserved nodes summed
// out jointly in one row, say.
class LimitError : public Error {
public:
    explicit LimitError(const std::string& message) : Error(ErrorKind::limit, message) {}
};

// A numerical failure during inference: every chain failed, or the variational iteration
// broke down. Never a silent NaN.
class InferenceError : public Error {
public:
    explicit InferenceError(const std::string& message) : Error(ErrorKind::inference, message) {}
};

// A file that cannot be read or written; the message names it.
class IoError : public Error {
public:
    explicit IoError(const std::string& message) : Error(ErrorKind::io, message) {}
};

// The fit was cancelled through its CancellationToken.
class CancelledError : public Error {
public:
    explicit CancelledError(const std::string& message) : Error(ErrorKind::cancelled, message) {}
};

}  // namespace vbn
