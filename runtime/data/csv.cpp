#include "runtime/data/csv.hpp"

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

constexpr auto kCommaStop = make_stop_table(',');
constexpr auto kSemicolonStop = make_stop_table(';');
constexpr auto kQuotedStop = make_stop_table('"');

unsigned byte(char c) { return static_cast<unsigned char>(c); }
bool is_blank(char c) { return c == ' ' || c == '\t'; }

}  // namespace

CsvReader::CsvReader(std::string& text, std::string name)
    : pos_(text.data()), end_(text.data() + text.size()), name_(std::move(name)), unquoted_stop_(kCommaStop.data()) {
    sniff();
}

CsvReader::CsvReader(std::istream& in, std::string name, std::size_t chunk)
    : pos_(nullptr), end_(nullptr), in_(&in), chunk_(std::max<std::size_t>(chunk, 1)), at_end_(false),
      name_(std::move(name)), unquoted_stop_(kCommaStop.data()) {
    buffer_ = std::make_unique_for_overwrite<char[]>(1);
    buffer_size_ = 1;
    buffer_[0] = '\0';
    pos_ = end_ = buffer_.get();
    // The checks of the first bytes look at up to 64 KiB.
    while (!at_end_ && end_ - pos_ < 64 * 1024) refill();
    sniff();
}

void CsvReader::sniff() {
    const auto n = static_cast<std::size_t>(end_ - pos_);
    const char* const t = pos_;
    if (n >= 2 && ((byte(t[0]) == 0xFF && byte(t[1]) == 0xFE) || (byte(t[0]) == 0xFE && byte(t[1]) == 0xFF)))
        fail(1, 0, "the file is UTF-16 encoded; save it as UTF-8 (or ASCII) comma-separated text");
    if (n >= 3 && byte(t[0]) == 0xEF && byte(t[1]) == 0xBB && byte(t[2]) == 0xBF) pos_ += 3;
    choose_separator();
    // Binary files are refused up front, before their first "line" is taken for a header and
    // reported as unknown columns; bytes further on are caught while reading.
    char* const sniff_end = pos_ + std::min<std::size_t>(static_cast<std::size_t>(end_ - pos_), 64 * 1024);
    // Reading up to the byte reports it with its line and column.
    if (std::any_of(pos_, sniff_end, [](char c) { return is_control(byte(c)); }))
        while (more()) read_record();
}

// The header line (the first that is not blank, up to 64 KiB of it) decides: semicolons and
// no comma outside quotes make ';' the separator, anything else ','.
void CsvReader::choose_separator() {
    const char* p = pos_;
    const char* const end = pos_ + std::min<std::size_t>(static_cast<std::size_t>(end_ - pos_), 64 * 1024);
    long commas = 0, semicolons = 0;
    bool quoted = false, blank = true;
    for (; p < end; ++p) {
        const char c = *p;
        if (c == '"') quoted = !quoted;  // "" inside quotes toggles twice
        if (quoted) continue;
        if ((c == '\n' || c == '\r') && !blank) break;
        commas += c == ',';
        semicolons += c == ';';
        blank = blank && (is_blank(c) || c == '\n' || c == '\r');
    }
    if (commas == 0 && semicolons > 0) {
        separator_ = ';';
        unquoted_stop_ = kSemicolonStop.data();
    }
}

std::string CsvReader::separator_notice() const {
    if (separator_ == ',') return {};
    return fmt::format("{}: reading the file as semicolon-separated: its header line has semicolons and no comma (numbers "
                       "are still written with a decimal point)",
                       name_);
}

void CsvReader::refill() {
    const auto keep = static_cast<std::size_t>(end_ - pos_);
    // A record longer than a chunk doubles what is read, so it costs O(its length) to gather.
    const std::size_t want = std::max(chunk_, keep);
    if (buffer_size_ < keep + want + 1) {
        auto grown = std::make_unique_for_overwrite<char[]>(keep + want + 1);
        std::memcpy(grown.get(), pos_, keep);
        buffer_ = std::move(grown);
        buffer_size_ = keep + want + 1;
    } else {
        std::memmove(buffer_.get(), pos_, keep);
    }
    char* const base = buffer_.get();
    in_->read(base + keep, static_cast<std::streamsize>(want));
    const auto got = static_cast<std::size_t>(in_->gcount());
    if (in_->bad()) throw Error(ErrorKind::io, fmt::format("cannot read data '{}'", name_));
    at_end_ = got < want;
    pos_ = base;
    end_ = base + keep + got;
    *end_ = '\0';  // stops the scanning loops like any control byte
}

bool CsvReader::more() {
    while (pos_ == end_ && !at_end_) refill();
    return pos_ < end_;
}

bool CsvReader::next() {
    while (more()) {
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
    while (!try_read_record()) refill();
}

namespace {
// A quoted field's text without its quotes, with each "" made ", in place.
std::string_view unescape(std::string_view raw) {
    char* const start = const_cast<char*>(raw.data());  // a view into the reader's own buffer
    char* dst = start;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        *dst++ = raw[i];
        if (raw[i] == '"') ++i;  // the quote's twin
    }
    return {start, static_cast<std::size_t>(dst - start)};
}
}  // namespace

bool CsvReader::try_read_record() {
    fields_.clear();
    escaped_.clear();
    record_line_ = line_;
    first_quoted_ = false;
    // Nothing is written until the whole record is in the buffer, so a record that crosses
    // the buffer's end is read again from its start once the next chunk is in.
    const auto incomplete = [this] {
        line_ = record_line_;
        return false;
    };
    // The scanning loops need no bounds check: the text is followed by '\0', which stops
    // them like any control byte, and p == end_ tells the two apart.
    char* p = pos_;
    const char separator = separator_;
    const bool* const unquoted_stop = unquoted_stop_;
    for (;;) {
        while (is_blank(*p)) ++p;
        if (*p == '"') {
            if (fields_.empty()) first_quoted_ = true;
            bool escaped = false;
            if (!read_quoted(p, escaped)) return incomplete();
            if (escaped) escaped_.push_back(fields_.size() - 1);
            while (is_blank(*p)) ++p;
            if (p < end_ && *p != separator && *p != '\n' && *p != '\r') fail_after_quote(*p);
        } else {
            char* const start = p;
            while (!unquoted_stop[byte(*p)]) ++p;
            char* last = p;
            while (last > start && is_blank(last[-1])) --last;
            fields_.emplace_back(start, static_cast<std::size_t>(last - start));
        }
        if (p == end_) {
            if (!at_end_) return incomplete();
            break;
        }
        const char c = *p++;
        if (c == separator) continue;
        if (c == '\r') {
            if (p == end_ && !at_end_) return incomplete();  // its '\n' may follow
            if (*p == '\n') ++p;
        }
        if (c != '\r' && c != '\n') fail_byte(byte(c), static_cast<long>(fields_.size()));
        ++line_;
        break;
    }
    pos_ = p;
    for (std::size_t i : escaped_) fields_[i] = unescape(fields_[i]);
    return true;
}

bool CsvReader::read_quoted(char*& p, bool& escaped) {
    const long open_line = line_;
    ++p;
    char* const start = p;
    for (;;) {
        while (!kQuotedStop[byte(*p)]) ++p;
        if (p == end_) {
            if (!at_end_) return false;
            fail(open_line, static_cast<long>(fields_.size()) + 1,
                 "unterminated quoted field: the '\"' that opens it is never closed (a quote inside a quoted "
                 "field is written twice, \"\")");
        }
        const char c = *p;
        if (c == '"') {
            if (p[1] == '"') {
                escaped = true;
                p += 2;
                continue;
            }
            fields_.emplace_back(start, static_cast<std::size_t>(p - start));
            ++p;
            return true;
        }
        if (c == '\n' || c == '\r') {
            ++p;
            if (c == '\r' && *p == '\n') ++p;
            ++line_;
            continue;
        }
        fail_byte(byte(c), static_cast<long>(fields_.size()) + 1);
    }
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
