#include "lang/diagnostics.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace vbn::lang {

Source::Source(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
    line_starts_.push_back(0);
    for (std::size_t i = 0; i < text_.size(); ++i)
        if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

Location Source::locate(std::size_t offset) const {
    offset = std::min(offset, text_.size());
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const auto line = static_cast<int>(it - line_starts_.begin());
    const std::size_t start = line_starts_[static_cast<std::size_t>(line - 1)];
    // Count characters, not bytes: skip UTF-8 continuation bytes.
    int column = 1;
    for (std::size_t i = start; i < offset; ++i)
        if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++column;
    return {line, column};
}

std::string_view Source::line_text(int line) const {
    if (line < 1 || static_cast<std::size_t>(line) > line_starts_.size()) return {};
    const std::size_t start = line_starts_[static_cast<std::size_t>(line - 1)];
    std::size_t end = text_.find('\n', start);
    if (end == std::string::npos) end = text_.size();
    if (end > start && text_[end - 1] == '\r') --end;
    return std::string_view(text_).substr(start, end - start);
}

void Diagnostics::error(Location where, std::string message) {
    items_.push_back({Severity::error, where, std::move(message)});
}

void Diagnostics::warning(Location where, std::string message) {
    items_.push_back({Severity::warning, where, std::move(message)});
}

bool Diagnostics::has_errors() const { return error_count() > 0; }

std::size_t Diagnostics::error_count() const {
    return static_cast<std::size_t>(std::count_if(
        items_.begin(), items_.end(), [](const Diagnostic& d) { return d.severity == Severity::error; }));
}

namespace {
const char* severity_word(Severity s) {
    switch (s) {
        case Severity::error: return "error";
        case Severity::warning: return "warning";
        case Severity::note: return "note";
    }
    return "error";
}

// Printable copy of a source line: control characters (binary garbage) become '?', and
// very long lines are cut around the column so a message stays readable.
std::string printable_line(std::string_view line, int& column) {
    constexpr int width = 120;
    std::string out;
    std::size_t begin = 0;
    if (column > width) {
        begin = static_cast<std::size_t>(column - width / 2);
        column = width / 2 + 3;  // after the "..."
        out = "...";
    }
    std::size_t n = 0;
    for (std::size_t i = begin; i < line.size() && n < static_cast<std::size_t>(2 * width); ++i, ++n) {
        const auto c = static_cast<unsigned char>(line[i]);
        out += (c < 0x20 && c != '\t') || c == 0x7F ? '?' : (c == '\t' ? ' ' : static_cast<char>(c));
    }
    if (begin + n < line.size()) out += "...";
    return out;
}
}  // namespace

std::string Diagnostics::format(const Diagnostic& d) const {
    if (d.location.line <= 0)
        return fmt::format("{}: {}: {}\n", source_->name(), severity_word(d.severity), d.message);
    std::string out = fmt::format("{}:{}:{}: {}: {}\n", source_->name(), d.location.line, d.location.column,
                                  severity_word(d.severity), d.message);
    int column = std::max(1, d.location.column);
    const std::string line = printable_line(source_->line_text(d.location.line), column);
    const std::string number = std::to_string(d.location.line);
    out += fmt::format("  {} | {}\n", number, line);
    out += fmt::format("  {} | {}^\n", std::string(number.size(), ' '), std::string(static_cast<std::size_t>(column - 1), ' '));
    return out;
}

std::string Diagnostics::format() const {
    std::string out;
    for (const auto& d : items_) out += format(d);
    return out;
}

}  // namespace vbn::lang
