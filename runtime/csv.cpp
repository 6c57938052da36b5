#include "runtime/csv.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace vbn {

namespace {

// Bytes that end a run of ordinary characters: inside an unquoted field the separator,
// line breaks and control bytes; inside a quoted field the quote, line breaks (to count
// lines) and control bytes. Tab is text.
constexpr bool is_control(unsigned c) { return (c < 0x20 && c != '\t' && c != '\n' && c != '\r'); }

constexpr std::array<bool, 256> make_stop_table(char special) {
    std::array<bool, 256> t{};
    for (unsigned c = 0; c < 256; ++c)
        t[c] = is_control(c) || c == '\n' || c == '\r' || c == static_cast<unsigned char>(special);
    return t;
}

constexpr auto kUnquotedStop = make_stop_table(',');
constexpr auto kQuotedStop = make_stop_table('"');

unsigned byte(char c) { return static_cast<unsigned char>(c); }
bool is_blank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

CsvReader::CsvReader(std::string& text, std::string name)
    : pos_(text.data()), end_(text.data() + text.size()), name_(std::move(name)) {
    const std::size_t n = text.size();
    if (n >= 2 && ((byte(text[0]) == 0xFF && byte(text[1]) == 0xFE) || (byte(text[0]) == 0xFE && byte(text[1]) == 0xFF)))
        fail(1, 0, "the file is UTF-16 encoded; save it as UTF-8 (or ASCII) comma-separated text");
    if (n >= 3 && byte(text[0]) == 0xEF && byte(text[1]) == 0xBB && byte(text[2]) == 0xBF) pos_ += 3;
    // Binary files are refused up front, before their first "line" is taken for a header and
    // reported as unknown columns; bytes further on are caught while reading.
    char* const sniff_end = pos_ + std::min<std::size_t>(static_cast<std::size_t>(end_ - pos_), 64 * 1024);
    // Reading up to the byte reports it with its line and column.
    if (std::any_of(pos_, sniff_end, [](char c) { return is_control(byte(c)); }))
        while (pos_ < end_) read_record();
}

bool CsvReader::next() {
    while (pos_ < end_) {
        read_record();
        // A line with nothing on it is not a record with one missing value: spreadsheets and
        // editors leave blank lines behind, and a real missing value can be written "" or NA.
        if (fields_.size() == 1 && fields_[0].empty() && !first_quoted_) continue;
        return true;
    }
    fields_.clear();
    return false;
}

void CsvReader::read_record() {
    fields_.clear();
    record_line_ = line_;
    first_quoted_ = false;
    // The scanning loops need no bounds check: a std::string's text is followed by '\0',
    // which stops them like any control byte, and p == end_ tells the two apart.
    char* p = pos_;
    for (;;) {
        while (is_blank(*p)) ++p;
        if (*p == '"') {
            if (fields_.empty()) first_quoted_ = true;
            fields_.push_back(read_quoted(p));
            while (is_blank(*p)) ++p;
            if (p < end_ && *p != ',' && *p != '\n' && *p != '\r') fail_after_quote(*p);
        } else {
            char* const start = p;
            while (!kUnquotedStop[byte(*p)]) ++p;
            char* last = p;
            while (last > start && is_blank(last[-1])) --last;
            fields_.emplace_back(start, static_cast<std::size_t>(last - start));
        }
        if (p == end_) break;
        const char c = *p++;
        if (c == ',') continue;
        if (c == '\r' && *p == '\n') ++p;
        if (c != '\r' && c != '\n') fail_byte(byte(c), static_cast<long>(fields_.size()));
        ++line_;
        break;
    }
    pos_ = p;
}

std::string_view CsvReader::read_quoted(char*& p) {
    const long open_line = line_;
    ++p;
    char* const start = p;
    char* dst = p;  // unescaping only ever shrinks the text, so it can be written in place
    for (;;) {
        char* const run = p;
        while (!kQuotedStop[byte(*p)]) ++p;
        if (dst != run) std::memmove(dst, run, static_cast<std::size_t>(p - run));
        dst += p - run;
        if (p == end_)
            fail(open_line, static_cast<long>(fields_.size()) + 1,
                 "unterminated quoted field: the '\"' that opens it is never closed (a quote inside a quoted "
                 "field is written twice, \"\")");
        const char c = *p;
        if (c == '"') {
            if (p[1] == '"') {
                *dst++ = '"';
                p += 2;
                continue;
            }
            ++p;
            break;
        }
        if (c == '\n' || c == '\r') {
            *dst++ = *p++;
            if (c == '\r' && *p == '\n') *dst++ = *p++;
            ++line_;
            continue;
        }
        fail_byte(byte(c), static_cast<long>(fields_.size()) + 1);
    }
    return {start, static_cast<std::size_t>(dst - start)};
}

void CsvReader::fail(long line, long column, const std::string& message) const {
    const std::string where = column > 0 ? fmt::format("{}:{}:{}", name_, line, column) : fmt::format("{}:{}", name_, line);
    throw Error(ErrorKind::data, fmt::format("{}: {}", where, message), line, column);
}

void CsvReader::fail_after_quote(char c) const {
    const auto column = static_cast<long>(fields_.size());
    if (is_control(byte(c))) fail_byte(byte(c), column);
    fail(line_, column,
         fmt::format("unexpected '{}' after the closing quote of a quoted field; a quote inside a quoted field is "
                     "written twice (\"\")",
                     c));
}

void CsvReader::fail_byte(unsigned c, long column) const {
    fail(line_, column,
         fmt::format("the file does not look like a text CSV file: it contains the byte 0x{:02X}, which has no "
                     "place in text; expected comma-separated text with a header row",
                     c));
}

}  // namespace vbn
