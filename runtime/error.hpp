// Errors the runtime and the API report: a kind, a message that already names the place,
// and the place itself (line/column for models, row/column for data).
#pragma once

#include <stdexcept>
#include <string>

namespace vbn {

enum class ErrorKind {
    usage,      // bad options or arguments
    model,      // the model text does not parse or check
    data,       // the data does not fit the model
    limit,      // a request whose cost is exponential or too large for the machine
    inference,  // a numerical failure during inference (exit status 2)
    io,         // a file that cannot be read or written
    cancelled,  // the caller asked to stop
};

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message, long line = 0, long column = 0)
        : std::runtime_error(message), kind_(kind), line_(line), column_(column) {}

    ErrorKind kind() const { return kind_; }
    // Models: 1-based line and column. Data: 1-based line of the CSV file and 1-based column.
    // 0 when the error has no single place.
    long line() const { return line_; }
    long column() const { return column_; }

private:
    ErrorKind kind_;
    long line_;
    long column_;
};

}  // namespace vbn
