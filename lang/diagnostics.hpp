// Diagnostics for model files: every message names the file, line and column, quotes the
// line and puts a caret under the place, in the style of
//
//   m.vbn:4:27: error: unknown parent 'q'; declared nodes and covariates are h, o
//       4 | node y ~ logistic(2 + w * q);
//         |                           ^
//
// One run collects every error it can find; callers check has_errors() at the end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace vbn::lang {

// A place in a source text, 1-based. line == 0 means "the file as a whole".
struct Location {
    int line = 0;
    int column = 0;
};

// A named source text; the name is what messages print (usually the path).
class Source {
public:
    Source(std::string name, std::string text);

    const std::string& name() const { return name_; }
    const std::string& text() const { return text_; }

    // Location of a byte offset into text(); columns count characters, tabs as one.
    Location locate(std::size_t offset) const;
    // The text of line `line` (1-based), without its line break; empty if out of range.
    std::string_view line_text(int line) const;

private:
    std::string name_;
    std::string text_;
    std::vector<std::size_t> line_starts_;
};

enum class Severity { error, warning, note };

struct Diagnostic {
    Severity severity = Severity::error;
    Location location;
    std::string message;  // one or two sentences: what is wrong, what would be right
};

class Diagnostics {
public:
    explicit Diagnostics(const Source& source) : source_(&source) {}

    void error(Location where, std::string message);
    void warning(Location where, std::string message);

    bool has_errors() const;
    std::size_t error_count() const;
    const std::vector<Diagnostic>& items() const { return items_; }
    const Source& source() const { return *source_; }

    // All diagnostics, in the order they were reported, each formatted as above.
    std::string format() const;
    std::string format(const Diagnostic& d) const;

private:
    const Source* source_;
    std::vector<Diagnostic> items_;
};

}  // namespace vbn::lang
