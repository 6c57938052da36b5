// An RFC 4180 record reader over a text held in memory or read from a stream in chunks
// (docs/design.md §2, "Data").
//
// Comma separator, or a semicolon when the header line has semicolons and no comma (as
// spreadsheets write CSV where the comma is the decimal mark); double-quoted fields with "" escapes, holding commas and line breaks;
// LF, CRLF or a lone CR between records; the last record with or without a line break; a
// UTF-8 byte order mark at the start is skipped; spaces and tabs around unquoted values (and
// outside the quotes of quoted ones) are trimmed. Blank lines are skipped.
//
// The reader works in place: quoted fields are unescaped inside the buffer, and fields are
// views into it, so reading a record allocates nothing once the field vector has grown.
// From a stream, the buffer holds one chunk plus the record that crosses its end, so memory
// is O(chunk + longest record), not O(file).
#pragma once

#include <cstddef>
#include <istream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vbn {

class CsvReader {
public:
    // `text` is modified (quoted fields are unescaped in place) and must outlive the reader
    // and every field view it hands out. `name` is what messages print (usually the path).
    CsvReader(std::string& text, std::string name);
    // Reads `in` (which must outlive the reader) `chunk` bytes at a time; fields() then stay
    // valid only until the next call to next(). Throws vbn::Error of kind io when the stream
    // fails.
    CsvReader(std::istream& in, std::string name, std::size_t chunk = std::size_t{1} << 20);

    // Reads the next non-blank record; false at the end of the text. Throws vbn::Error of
    // kind data, naming the line, for an unterminated quote, a character after a closing
    // quote, or a byte that has no place in a text file (NUL and other control characters).
    bool next();

    // The fields of the current record; views stay valid while the text lives (from a
    // stream: until the next call to next()).
    std::span<const std::string_view> fields() const { return fields_; }
    // Line where the current record starts (1-based); a record with quoted line breaks
    // spans several lines.
    long line() const { return record_line_; }
    const std::string& name() const { return name_; }
    // ',' or ';', as the header line showed.
    char separator() const { return separator_; }
    // A notice for the user when the separator is not a comma, else empty.
    std::string separator_notice() const;

private:
    void read_record();
    bool try_read_record();                     // false: the buffer ends inside the record
    bool read_quoted(char*& p, bool& escaped);  // the same for a quoted field
    bool more();    // unread text is left (reading the next chunk if needed)
    void refill();  // keeps the text from pos_ on and appends the next chunk
    void sniff();
    void choose_separator();
    [[noreturn]] void fail(long line, long column, const std::string& message) const;
    [[noreturn]] void fail_byte(unsigned byte, long column) const;
    [[noreturn]] void fail_after_quote(char c) const;

    char* pos_;
    char* end_;
    std::istream* in_ = nullptr;  // null: the whole text is in memory
    // From a stream: the text read and not yet consumed, then '\0'. Not zero-filled on
    // allocation, so the pages of a chunk that a short file never reaches are never touched.
    std::unique_ptr<char[]> buffer_;
    std::size_t buffer_size_ = 0;
    std::size_t chunk_ = 0;
    bool at_end_ = true;          // nothing more to read after end_
    std::string name_;
    long line_ = 1;         // line of pos_
    long record_line_ = 0;  // line where the current record starts
    bool first_quoted_ = false;
    char separator_ = ',';
    const bool* unquoted_stop_;  // the bytes that end an unquoted field, for separator_
    std::vector<std::string_view> fields_;
    std::vector<std::size_t> escaped_;  // quoted fields of the record holding ""
};

}  // namespace vbn
