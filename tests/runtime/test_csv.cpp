// The RFC 4180 reader and load_csv against a model: spellings, quoting, headers, and every
// kind of bad input with the place it names.
#include "inference/rng.hpp"
#include "lang/frontend.hpp"
#include "runtime/data/csv.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/runtime/data_graph.hpp"

using namespace vbn;
using vbn::test::make_graph;
using vbn::test::Var;

namespace {

// node h hidden; node y; node v[3]; covariate x.
ir::Graph model() {
    return make_graph({{"h", ir::VariableKind::binary, true},
                       {"y"},
                       {"v", ir::VariableKind::binary, false, 3},
                       {"x", ir::VariableKind::covariate}});
}

std::vector<std::vector<std::string>> records(std::string text, std::vector<long>* lines = nullptr) {
    CsvReader r(text, "t.csv");
    std::vector<std::vector<std::string>> out;
    while (r.next()) {
        out.emplace_back(r.fields().begin(), r.fields().end());
        if (lines) lines->push_back(r.line());
    }
    return out;
}

Dataset load(const ir::Graph& g, const std::string& text, LoadNotes* notes = nullptr) {
    std::istringstream in(text);
    return load_csv(g, in, "data.csv", notes);
}

// The error load_csv throws for `text`.
// A data error at line:column of data.csv, with exactly this message.
void check_data_error(const Error& e, long line, long column, const std::string& message) {
    CHECK(e.kind() == ErrorKind::data);
    CHECK(e.line() == line);
    CHECK(e.column() == column);
    CHECK(std::string(e.what()) == message);
}

Error load_error(const ir::Graph& g, const std::string& text) {
    try {
        (void)load(g, text);
    } catch (const Error& e) {
        return e;
    }
    FAIL("no error for: " << text.substr(0, 200));
    return Error(ErrorKind::usage, "");
}

Error reader_error(std::string text) {
    try {
        (void)records(std::move(text));
    } catch (const Error& e) {
        return e;
    }
    FAIL("no error");
    return Error(ErrorKind::usage, "");
}

bool contains(const std::string& haystack, std::string_view needle) { return haystack.find(needle) != std::string::npos; }

using Rec = std::vector<std::vector<std::string>>;

}  // namespace

// --- the reader ---------------------------------------------------------------------

TEST_CASE("csv: fields split on commas; spaces around unquoted values are trimmed") {
    CHECK(records("a,b,c\n1, 2 ,\t3\t\n") == Rec{{"a", "b", "c"}, {"1", "2", "3"}});
    CHECK(records("a,,c,\n") == Rec{{"a", "", "c", ""}});
    CHECK(records("a b,c\n") == Rec{{"a b", "c"}});
}

TEST_CASE("csv: quoted fields keep spaces, commas, doubled quotes and line breaks") {
    std::vector<long> lines;
    const auto r = records("a,b\n\" x, y \",\"say \"\"hi\"\"\"\n\"two\nlines\",\"crlf\r\ninside\"\nlast,\"\"\n", &lines);
    CHECK(r == Rec{{"a", "b"}, {" x, y ", "say \"hi\""}, {"two\nlines", "crlf\r\ninside"}, {"last", ""}});
    // A record's line is where it starts; line breaks inside quotes still count.
    CHECK(lines == std::vector<long>{1, 2, 3, 6});
}

TEST_CASE("csv: spaces outside the quotes are trimmed; a quote inside an unquoted field is text") {
    CHECK(records("  \"a\"  ,b\n") == Rec{{"a", "b"}});
    CHECK(records("ab\"c,d\n") == Rec{{"ab\"c", "d"}});
}

TEST_CASE("csv: LF, CRLF and lone CR line ends; last line with or without a line break") {
    const Rec expected{{"a", "b"}, {"1", "2"}, {"3", "4"}};
    CHECK(records("a,b\n1,2\n3,4\n") == expected);
    CHECK(records("a,b\n1,2\n3,4") == expected);
    CHECK(records("a,b\r\n1,2\r\n3,4\r\n") == expected);
    CHECK(records("a,b\r\n1,2\r\n3,4") == expected);
    CHECK(records("a,b\r1,2\r3,4\r") == expected);
    std::vector<long> lines;
    (void)records("a,b\r\n1,2\r\n3,4", &lines);
    CHECK(lines == std::vector<long>{1, 2, 3});
}

TEST_CASE("csv: blank lines are skipped, a line holding \"\" is a record") {
    std::vector<long> lines;
    CHECK(records("\na\n\n  \n1\n\"\"\n\n", &lines) == Rec{{"a"}, {"1"}, {""}});
    CHECK(lines == std::vector<long>{2, 5, 6});
    CHECK(records("").empty());
    CHECK(records("\n\r\n\n").empty());
}

TEST_CASE("csv: a header line with semicolons and no comma makes ';' the separator") {
    CHECK(records("a;b\n1;2\n") == Rec{{"a", "b"}, {"1", "2"}});
    // Commas inside quotes stay text, in the header and in the rows; a quoted ';' too.
    CHECK(records("\"a,x\";b\n\"1,5\" ; \"2;3\"\n") == Rec{{"a,x", "b"}, {"1,5", "2;3"}});
    // A blank line and a byte order mark before the header.
    CHECK(records("\xEF\xBB\xBF\n  \na;b\r\n1;2") == Rec{{"a", "b"}, {"1", "2"}});
    // A comma anywhere outside quotes in the header line: commas, and ';' is text.
    CHECK(records("a;b,c\n1;2,3\n") == Rec{{"a;b", "c"}, {"1;2", "3"}});
    CHECK(records("\"a;b\"\n1;2\n") == Rec{{"a;b"}, {"1;2"}});
    CHECK(records("a\n1;2\n") == Rec{{"a"}, {"1;2"}});
    std::string text = "a;b\n";
    CsvReader semicolons(text, "s.csv");
    CHECK(semicolons.separator() == ';');
    CHECK(semicolons.separator_notice() ==
          "s.csv: reading the file as semicolon-separated: its header line has semicolons and no comma (numbers are "
          "still written with a decimal point)");
    std::string commas = "a,b\n";
    CHECK(CsvReader(commas, "c.csv").separator() == ',');
    CHECK(CsvReader(commas, "c.csv").separator_notice().empty());
    // After a closing quote the separator, not a comma, is expected.
    CHECK(contains(reader_error("a;b\n\"1\",2\n").what(), "unexpected ','"));
}

TEST_CASE("load: a semicolon-separated file is read, with a notice; a decimal comma gets its own message") {
    const auto g = make_graph({{"y"}, {"x", ir::VariableKind::covariate}});
    LoadNotes notes;
    const Dataset d = load(g, "y;x\n1;0.5\n0;-2\n", &notes);
    CHECK(d.rows == 2);
    CHECK(d.real_value(1, 0) == -2);
    REQUIRE(notes.notices.size() == 1);
    CHECK(contains(notes.notices[0], "data.csv: reading the file as semicolon-separated"));
    const std::string m = load_error(g, "y;x\n1;0,5\n").what();
    CHECK(contains(m, "data.csv:2:2: column 'x': '0,5' is not a number as vbn reads them: numbers are written with a "
                      "decimal point"));
}

TEST_CASE("csv: a UTF-8 byte order mark at the start is ignored") {
    CHECK(records("\xEF\xBB\xBFy,x\n1,2\n") == Rec{{"y", "x"}, {"1", "2"}});
    CHECK(records("\xEF\xBB\xBF\"y\",x\n") == Rec{{"y", "x"}});
}

TEST_CASE("csv: an unterminated quote is an error at the line and column where it opens") {
    const Error e = reader_error("a,b\n1,\"open\n2,3\n4,5\n");
    CHECK(e.kind() == ErrorKind::data);
    CHECK(e.line() == 2);
    CHECK(e.column() == 2);
    CHECK(contains(e.what(), "t.csv:2:2: unterminated quoted field"));
}

TEST_CASE("csv: text after a closing quote is an error") {
    const Error e = reader_error("a,b\n\"x\"y,2\n");
    CHECK(e.line() == 2);
    CHECK(e.column() == 1);
    CHECK(contains(e.what(), "t.csv:2:1: unexpected 'y' after the closing quote"));
}

TEST_CASE("csv: NUL and other control bytes mean the file is not a text CSV file") {
    for (const std::string& text : {std::string("a,b\n1,\0\n", 8), std::string("a,b\n1,\"x\x01\"\n"),
                                   std::string("\x1F\x8B\x08\x00", 4), std::string("a\x1A,b\n")}) {
        const Error e = reader_error(text);
        CHECK(e.kind() == ErrorKind::data);
        CHECK(contains(e.what(), "does not look like a text CSV file"));
    }
    const Error e = reader_error(std::string("a,b\n1,2\n3,\0\n", 12));
    CHECK(e.line() == 3);
    CHECK(e.column() == 2);
    CHECK(contains(e.what(), "t.csv:3:2:"));
    CHECK(contains(e.what(), "0x00"));
}

TEST_CASE("csv: UTF-16 text is recognised and refused") {
    const Error e = reader_error(std::string("\xFF\xFEy\0,\0x\0", 8));
    CHECK(contains(e.what(), "UTF-16"));
}

TEST_CASE("csv: a 10 MB line is read in one pass") {
    const std::size_t n = 10u << 20;
    std::string wide(n, 'a');
    CHECK(records("h\n" + wide + "\n")[1][0].size() == n);
    std::string commas(n, ',');
    CHECK(records(commas)[0].size() == n + 1);
    const Error e = reader_error("a\n\"" + wide);
    CHECK(e.line() == 2);
}

// --- load_csv against a model ---------------------------------------------------------

TEST_CASE("load: columns by name in any order, v[k] or v.k, values coded") {
    LoadNotes notes;
    const Dataset d = load(model(), "x,v.2,y,v[1],v[3]\n0.5,1,yes,-1,NA\n-2,no,0,true,?\n", &notes);
    CHECK(notes.notices.empty());
    CHECK(d.name == "data.csv");
    CHECK(d.rows == 2);
    REQUIRE(d.patterns == 2);
    CHECK(d.binary_names == std::vector<std::string>{"y", "v[1]", "v[2]", "v[3]"});
    CHECK(d.real_names == std::vector<std::string>{"x"});
    CHECK(d.column_of == std::vector<int>{-1, 0, 1, 2, 3, 0});
    // y, v[1], v[2], v[3]
    CHECK(d.value(0, 0) == 1);
    CHECK(d.value(0, 1) == -1);
    CHECK(d.value(0, 2) == 1);
    CHECK(d.value(0, 3) == 0);
    CHECK(d.real_value(0, 0) == 0.5);
    CHECK(d.value(1, 0) == -1);
    CHECK(d.value(1, 1) == 1);
    CHECK(d.value(1, 2) == -1);
    CHECK(d.value(1, 3) == 0);
    CHECK(d.real_value(1, 0) == -2);
    CHECK(d.missing == std::vector<long>{0, 0, 0, 2});
    CHECK(d.first_line == std::vector<long>{2, 3});
}

TEST_CASE("load: every binary and missing spelling, quoted or not, in any case") {
    const auto g = make_graph({{"y"}});
    // Spellings of either coding, and those of -1 that belong to one coding only (a column may
    // not mix the two, so each is loaded with the common ones on its own).
    const std::vector<std::pair<std::string, int>> common = {
        {"1", 1},      {"true", 1},  {"TRUE", 1},   {"False", -1},   {"yes", 1},    {"YES", 1},
        {"No", -1},    {"y", 1},     {"N", -1},     {"T", 1},        {"t", 1},      {"F", -1},
        {"f", -1},     {"\"Y\"", 1}, {"\"n\"", -1}, {"1.0", 1},      {"+1", 1},     {"1.", 1},
        {"1e0", 1},    {"1.000000000000000000e+00", 1},               {"", 0},       {"NA", 0},
        {"na", 0},     {"NaN", 0},   {"nan", 0},    {"?", 0},        {"\"\"", 0},   {"\"NA\"", 0},
        {"N/A", 0},    {"n/a", 0},   {"#N/A", 0},   {"NULL", 0},     {"null", 0},   {"None", 0},
        {"NONE", 0},   {" yes ", 1},
    };
    const std::vector<std::pair<std::string, int>> zeros = {{"0", -1}, {"0.0", -1}, {"0.", -1}, {"0e0", -1},
                                                            {"0.000000000000000000e+00", -1}};
    const std::vector<std::pair<std::string, int>> minus_ones = {{"-1", -1}, {"\t-1\t", -1}, {"-1.0", -1},
                                                                 {"-1.000000000000000000e+00", -1}};
    for (const auto* coding : {&zeros, &minus_ones}) {
        auto cells = common;
        cells.insert(cells.end(), coding->begin(), coding->end());
        std::string text = "y\n";
        for (const auto& [cell, code] : cells) text += (cell.empty() ? std::string("\"\"") : cell) + "\n";
        const Dataset d = load(g, text);
        CHECK(d.rows == static_cast<long>(cells.size()));
        REQUIRE(d.patterns == 3);
        long plus = 0, minus = 0, missing = 0;
        for (const auto& [cell, code] : cells) (code > 0 ? plus : code < 0 ? minus : missing) += 1;
        for (int p = 0; p < 3; ++p) {
            const auto n = static_cast<long>(d.count[static_cast<std::size_t>(p)]);
            CHECK(n == (d.value(p, 0) > 0 ? plus : d.value(p, 0) < 0 ? minus : missing));
        }
        CHECK(d.missing[0] == missing);
    }
}

TEST_CASE("load: the file pandas writes for a column with a missing value (1.0, 0.0 and an empty field)") {
    const auto g = make_graph({{"a"}, {"b"}, {"x", ir::VariableKind::covariate}});
    const Dataset d = load(g, ",a,b,x\n0,1.0,0.0,0.5\n1,0.0,,1.0\n2,1.0,1.0,2\n");
    CHECK(d.rows == 3);
    CHECK(d.patterns == 3);
    CHECK(d.value(0, 0) == 1);
    CHECK(d.value(0, 1) == -1);
    CHECK(d.value(1, 0) == -1);
    CHECK(d.value(1, 1) == 0);
    CHECK(d.value(2, 1) == 1);
    CHECK(d.missing == std::vector<long>{0, 1});
}

TEST_CASE("load: a column mixing the 1/0 and 1/-1 codings is an error naming it and the first of each") {
    const auto g = make_graph({{"a"}, {"b"}});
    // b: -1 at line 3, 0 at line 5 (written 0.0); a holds only one coding.
    check_data_error(load_error(g, "a,b\n1,1\n0,-1\n0,no\n1,0.0\n0,-1\n"), 5, 2,
          "data.csv:5:2: column 'b' mixes the 1/0 and 1/-1 codings: its 0s (the first at data.csv:5:2) and its -1s "
          "(the first at data.csv:3:2) would both be read as -1, and the two codings cannot be mixed in one column; if 0 "
          "marks a missing value, write it as NA or leave the cell empty");
    // As plain 0 and -1, in either order, with more of both after.
    const Error plain = load_error(g, "a,b\n1,0\n1,1\n0,-1\n0,0\n0,-1\n");
    CHECK(plain.line() == 4);
    CHECK(contains(plain.what(), "data.csv:4:2: column 'b' mixes the 1/0 and 1/-1 codings: its 0s (the first at "
                                 "data.csv:2:2) and its -1s (the first at data.csv:4:2)"));
    CHECK(!contains(plain.what(), "column 'a'"));
    // Each column its own coding, and the words beside either: fine.
    const Dataset d = load(g, "a,b\n0,-1\nno,false\n1,1\n");
    CHECK(d.rows == 3);
}

TEST_CASE("load: with a covariate, an empty field is missing for binary columns only") {
    const auto g = make_graph({{"y"}, {"x", ir::VariableKind::covariate}});
    const Dataset d = load(g, "y,x\n,1.5\n1,2\n");
    CHECK(d.missing[0] == 1);
    CHECK(d.rows == 2);
}

TEST_CASE("load: CRLF, a BOM and a multi-line quoted extra column") {
    LoadNotes notes;
    const Dataset d = load(model(), "\xEF\xBB\xBFy,v[1],v[2],v[3],x,comment\r\n1,1,1,1,0,\"two\r\nlines\"\r\n-1,1,1,1,0,ok",
                           &notes);
    CHECK(d.rows == 2);
    CHECK(d.first_line == std::vector<long>{2, 4});
    REQUIRE(notes.notices.size() == 1);
}

TEST_CASE("load: a 1-row file is one pattern; identical rows compress, in order of first appearance") {
    const auto g = make_graph({{"a"}, {"b"}});
    const Dataset one = load(g, "a,b\n1,0\n");
    CHECK(one.rows == 1);
    CHECK(one.patterns == 1);
    CHECK(one.count == std::vector<double>{1});
    const Dataset d = load(g, "a,b\n1,0\n0,1\nyes,no\n1,NA\nno,yes\ntrue,false\n");
    CHECK(d.rows == 6);
    REQUIRE(d.patterns == 3);
    CHECK(d.count == std::vector<double>{3, 2, 1});
    CHECK(d.first_line == std::vector<long>{2, 3, 5});
    CHECK(d.missing == std::vector<long>{0, 1});
}

TEST_CASE("load: extra columns are ignored with one notice naming them, whatever they hold") {
    LoadNotes notes;
    const auto g = make_graph({{"y"}});
    const Dataset d = load(g, "id,y,note,v[9]\n17,1,maybe,?\n18,0,,\n", &notes);
    CHECK(d.rows == 2);
    REQUIRE(notes.notices.size() == 1);
    const std::string& n = notes.notices[0];
    CHECK(contains(n, "ignoring 3 columns"));
    CHECK(contains(n, "'id' (column 1)"));
    CHECK(contains(n, "'note' (column 3)"));
    CHECK(contains(n, "'v[9]' (column 4)"));
    CHECK_NOTHROW(load(g, "id,y\n1,1\n"));  // no notes object: fine
}

TEST_CASE("load: all missing columns are reported in one error") {
    const Error e = load_error(model(), "v[1],v.3,extra\n1,1,1\n");
    CHECK(e.kind() == ErrorKind::data);
    CHECK(e.line() == 1);
    const std::string m = e.what();
    CHECK(contains(m, "data.csv:1: missing columns for y, v[2], x"));
    CHECK(std::count(m.begin(), m.end(), '\n') == 0);
}

TEST_CASE("load: a missing column hints at a whole-array name or a case slip") {
    const std::string m = load_error(model(), "v,Y,x\n1,1,1\n").what();
    CHECK(contains(m, "column 'v' names the whole array"));
    CHECK(contains(m, "column 'Y' differs from y only in case"));
}

TEST_CASE("load: a header column that is a likely typo of a missing one gets a did-you-mean") {
    const auto g = make_graph({{"smoker"}, {"cancer"}, {"v", ir::VariableKind::binary, false, 3}});
    const Error e = load_error(g, "smokr,cancer,v[1],v[2],vv.3,unrelated\n1,1,1,1,1,1\n");
    const std::string m = e.what();
    CHECK(e.line() == 1);
    CHECK(contains(m, "data.csv:1: missing columns for smoker, v[3]"));
    CHECK(contains(m, "column 'smokr' is not in the model; did you mean 'smoker'?"));
    CHECK(contains(m, "column 'vv.3' is not in the model; did you mean 'v[3]'?"));
    CHECK(!contains(m, "'unrelated' is not in the model"));
}

TEST_CASE("load: a column for a hidden node is an error naming it") {
    const Error e = load_error(model(), "y,v[1],v[2],v[3],x,h\n1,1,1,1,0,1\n");
    CHECK(e.line() == 1);
    CHECK(e.column() == 6);
    CHECK(contains(e.what(), "data.csv:1:6: column 'h' is for the hidden node h"));
}

TEST_CASE("load: duplicate columns, including v[3] and v.3, are errors") {
    const Error e = load_error(model(), "y,v[1],v[2],v[3],x,v.3,y\n1,1,1,1,0,1,1\n");
    const std::string m = e.what();
    CHECK(e.column() == 6);
    CHECK(contains(m, "data.csv:1:6: column 'v.3' duplicates column 4 ('v[3]')"));
    CHECK(contains(m, "data.csv:1:7: column 'y' duplicates column 1 ('y')"));
}

TEST_CASE("load: a bad binary value names file, line, column number and column name") {
    const Error e = load_error(model(), "y,v[1],v[2],v[3],x\n1,1,1,1,0\n1,1,maybe,1,0\n");
    CHECK(e.kind() == ErrorKind::data);
    CHECK(e.line() == 3);
    CHECK(e.column() == 3);
    CHECK(std::string(e.what()) ==
          "data.csv:3:3: column 'v[2]': 'maybe' is not a binary value; expected 1/-1 or 1/0 (also written as "
          "decimals: 1.0, -1.0, 0.0), true/false, t/f, yes/no or y/n (in any case), or a missing value (empty, NA, "
          "N/A, NaN, NULL, None, ?)");
}

TEST_CASE("load: every bad cell is listed, up to 20, each with its place, column name and a hint") {
    const auto g = make_graph({{"a"}, {"b"}, {"x", ir::VariableKind::covariate}});
    const Error e = load_error(g, "a,b,x\n2,-0,1\n0.5,1,NA\n1,1,\"1,5\"\nmaybe,1,1\n");
    const std::string m = e.what();
    CHECK(e.line() == 2);
    CHECK(e.column() == 1);
    CHECK(contains(m, "data.csv:2:1: column 'a': '2' is a number other than 1, 0 and -1, not a binary value; expected 1/-1 or 1/0"));
    // The accepted spellings are listed once, in the first such message.
    CHECK(contains(m, "\ndata.csv:2:2: column 'b': '-0' is a zero with a sign, which neither the 1/0 nor the 1/-1 coding "
                      "writes; expected a binary or missing value as listed above\n"));
    CHECK(contains(m, "\ndata.csv:3:1: column 'a': '0.5' is a number other than 1, 0 and -1, not a binary value; expected "
                      "a binary or missing value as listed above\n"));
    CHECK(contains(m, "\ndata.csv:3:3: column 'x': covariate values may not be missing (found 'NA'); expected a finite real number"));
    CHECK(contains(m, "\ndata.csv:4:3: column 'x': '1,5' is not a number as vbn reads them: numbers are written with a "
                      "decimal point and without thousands separators"));
    CHECK(contains(m, "\ndata.csv:5:1: column 'a': 'maybe' is not a binary value; expected a binary or missing value as "
                      "listed above"));
    CHECK(std::count(m.begin(), m.end(), '?') == 1);  // the list of missing spellings ends with '?', once
    CHECK(std::count(m.begin(), m.end(), '\n') == 5);
}

TEST_CASE("load: after a multi-line quoted field, errors name the line where the record starts") {
    const auto g = make_graph({{"y"}});
    const Error e = load_error(g, "note,y\n\"a\nb\nc\",1\n\"d\ne\",2\n");
    CHECK(e.line() == 5);
    CHECK(e.column() == 2);
    CHECK(contains(e.what(), "data.csv:5:2: column 'y': '2' is a number other than 1, 0 and -1"));
}

TEST_CASE("load: covariates must be finite numbers and never missing") {
    const auto g = make_graph({{"x", ir::VariableKind::covariate}, {"y"}});
    const Error e = load_error(g, "x,y\n0.5,1\nNA,1\n,1\nabc,1\ninf,1\n1e999,1\n");
    const std::string m = e.what();
    CHECK(e.line() == 3);
    CHECK(e.column() == 1);
    CHECK(contains(m, "data.csv:3:1: column 'x': covariate values may not be missing (found 'NA')"));
    CHECK(contains(m, "data.csv:4:1: column 'x': covariate values may not be missing (found an empty field)"));
    CHECK(contains(m, "data.csv:5:1: column 'x': 'abc' is not a finite real number"));
    CHECK(contains(m, "data.csv:6:1: column 'x': 'inf' is not a finite real number"));
    CHECK(contains(m, "data.csv:7:1: column 'x': '1e999' is not a finite real number"));
}

TEST_CASE("load: a row with the wrong number of fields names the line and both counts") {
    const auto g = make_graph({{"a"}, {"b"}});
    const Error e = load_error(g, "a,b\n1,1\n1\n1,1,1\n");
    const std::string m = e.what();
    CHECK(e.line() == 3);
    CHECK(e.column() == 2);
    CHECK(contains(m, "data.csv:3:2: this row has 1 field but the header has 2"));
    CHECK(contains(m, "data.csv:4:3: this row has 3 fields but the header has 2"));
}

TEST_CASE("load: up to 20 errors in full, then how many more, at the place of the first") {
    const auto g = make_graph({{"y"}});
    std::string text = "y\n1\n";
    for (int i = 0; i < 30; ++i) text += "bad\n";
    const Error e = load_error(g, text);
    const std::string m = e.what();
    CHECK(e.line() == 3);
    CHECK(e.column() == 1);
    CHECK(contains(m, "data.csv:22:1:"));
    CHECK(!contains(m, "data.csv:23:1:"));
    CHECK(contains(m, "\n... and 10 more errors"));
    CHECK(std::count(m.begin(), m.end(), '\n') == 20);
}

TEST_CASE("load: a broken record after bad values is reported after them") {
    const auto g = make_graph({{"y"}});
    const Error e = load_error(g, "y\nbad\n1\n\"open\n1\n");
    const std::string m = e.what();
    CHECK(e.line() == 2);
    CHECK(contains(m, "data.csv:2:1: column 'y': 'bad'"));
    CHECK(contains(m, "data.csv:4:1: unterminated quoted field"));
}

TEST_CASE("load: empty input, blank lines only and a header alone are errors") {
    const auto g = make_graph({{"y"}});
    CHECK(contains(load_error(g, "").what(), "data.csv: the file is empty"));
    CHECK(contains(load_error(g, "\n\n \r\n").what(), "data.csv: the file is empty"));
    CHECK(contains(load_error(g, "\xEF\xBB\xBF").what(), "data.csv: the file is empty"));
    const Error e = load_error(g, "y\n");
    CHECK(e.kind() == ErrorKind::data);
    CHECK(e.line() == 1);
    CHECK(contains(e.what(), "data.csv:1: no data rows"));
    CHECK(contains(load_error(g, "y").what(), "no data rows"));
    CHECK(contains(load_error(g, "y\n\n\n").what(), "no data rows"));
}

TEST_CASE("load: binary garbage is refused, not parsed") {
    const auto g = make_graph({{"y"}});
    const Error e = load_error(g, std::string("\x89PNG\r\n\x1A\n\0\0\0\rIHDR", 16));
    CHECK(e.kind() == ErrorKind::data);
    CHECK(contains(e.what(), "does not look like a text CSV file"));
}

TEST_CASE("load: 10 MB names and values are cut short in messages") {
    const auto g = make_graph({{"y"}});
    const std::string big(10u << 20, 'z');
    LoadNotes notes;
    CHECK_NOTHROW(load(g, big + ",y\n1,1\n", &notes));
    REQUIRE(notes.notices.size() == 1);
    CHECK(notes.notices[0].size() < 200);
    const Error e = load_error(g, "y\n" + big + "\n");
    CHECK(e.line() == 2);
    CHECK(std::string(e.what()).size() < 400);
    const Error wide = load_error(g, "y\n" + std::string(10u << 20, ',') + "\n");
    CHECK(contains(wide.what(), "but the header has 1"));
}

TEST_CASE("load from a path: the data, and io errors for unreadable paths") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("vbn_test_csv_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path file = dir / "d.csv";
    {
        std::ofstream(file, std::ios::binary) << "y\n1\n0\n1\n";
    }
    const auto g = make_graph({{"y"}});
    const Dataset d = load_csv(g, file.string());
    CHECK(d.name == file.string());
    CHECK(d.rows == 3);
    CHECK(d.count == std::vector<double>{2, 1});
    {
        std::ofstream(file, std::ios::binary) << "y\n1\nbad\n";
    }
    try {
        (void)load_csv(g, file.string());
        FAIL("no throw");
    } catch (const Error& e) {
        CHECK(contains(e.what(), file.string() + ":3:1: column 'y'"));
    }
    for (const fs::path& p : {dir / "absent.csv", dir}) {
        try {
            (void)load_csv(g, p.string());
            FAIL("no throw");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::io);
            CHECK(contains(e.what(), p.string()));
        }
    }
    fs::remove_all(dir);
}

TEST_CASE("load: random text never crashes; it loads consistently or fails with a data error") {
    const auto g = make_graph({{"y"}, {"x", ir::VariableKind::covariate}});
    // Mostly the characters CSV structure is made of, now and then a control byte.
    const std::string alphabet = ",,,\"\"\r\n\n\n  1-10yNA?.e5x\t";
    inference::Rng rng(99);
    int loaded = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        std::string text = trial % 2 ? "y,x\n" : "x,y\n";
        const auto n = rng.below(60);
        for (std::uint64_t i = 0; i < n; ++i)
            text += rng.uniform() < 0.01 ? static_cast<char>(rng.below(32)) : alphabet[rng.below(alphabet.size())];
        try {
            const Dataset d = load(g, text);
            ++loaded;
            double total = 0;
            for (double c : d.count) total += c;
            CHECK(total == static_cast<double>(d.rows));
            CHECK(d.patterns <= d.rows);
            CHECK(d.rows >= 1);
            CHECK(d.missing[0] <= d.rows);
            for (double v : d.real) CHECK(std::isfinite(v));
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::data);
            CHECK(contains(e.what(), "data.csv"));
        }
    }
    CHECK(loaded > 0);  // the generator does produce valid files too
}

namespace {
// Every record with its line, or the error's message, line and column: from memory, or from a
// stream read `chunk` bytes at a time.
std::string transcript(const std::string& text, std::size_t chunk) {
    std::string out;
    std::string copy = text;
    std::istringstream in(text);
    try {
        std::unique_ptr<CsvReader> r =
            chunk == 0 ? std::make_unique<CsvReader>(copy, "t.csv") : std::make_unique<CsvReader>(in, "t.csv", chunk);
        while (r->next()) {
            out += std::to_string(r->line()) + ":";
            for (std::string_view f : r->fields()) out += "[" + std::string(f) + "]";
            out += "\n";
        }
    } catch (const Error& e) {
        out += fmt::format("error {}:{} {}\n", e.line(), e.column(), e.what());
    }
    return out;
}
}  // namespace

TEST_CASE("csv: read from a stream in chunks of any size, records, lines and errors are those read from memory") {
    // Records crossing a chunk's end everywhere: inside quotes, on "" and on a CR LF pair.
    std::vector<std::string> texts = {
        "a,b\n1,2\n",
        "\xEF\xBB\xBF" "a , b\r\n\"x,\"\"y\"\"\r\nz\" , 2\r\n\r\n\"\"\r\n3,4",
        "a\r\rb\r\n\nc",
        "a,\"b\"\"\"\"\",c\n\"\"\"\",d\n",
        "a,\"open\nnever closed",
        "a,\"x\" y\n",
        "a,b\n1,\x01\n",
        "\xFF\xFE" "a\0b\0",
        "h\n" + std::string(300, 'x') + "\n\"" + std::string(200, '"') + "\"\n",
        "a;\"b,c\"\r\n1;\"2\n;3\"\n",
        "\n \n\"x;\"\"\";y\n1;2",
    };
    const std::string alphabet = ",,,;\"\"\r\n\n\n  1-10yNA?x\t";
    inference::Rng rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        std::string text;
        const auto n = rng.below(80);
        for (std::uint64_t i = 0; i < n; ++i)
            text += rng.uniform() < 0.01 ? static_cast<char>(rng.below(32)) : alphabet[rng.below(alphabet.size())];
        texts.push_back(std::move(text));
    }
    int mismatches = 0;
    for (const std::string& text : texts) {
        const std::string expected = transcript(text, 0);
        for (std::size_t chunk : {1, 2, 3, 5, 8, 13, 64, 1 << 20}) {
            const std::string got = transcript(text, chunk);
            if (got != expected && ++mismatches <= 5)
                FAIL_CHECK("chunk " << chunk << " of " << doctest::toString(text) << ":\n" << got << "vs\n" << expected);
        }
    }
    CHECK(mismatches == 0);
}

TEST_CASE("load: the front end's element names are the columns v[k] and v.k") {
    lang::Source src{"m.vbn",
                     "covariate d;\n"
                     "node h[2] hidden ~ bernoulli(0.5);\n"
                     "node v[3] ~ logistic(b + W * h);\n"
                     "node s ~ logistic(c * d);\n"
                     "b, W, c ~ normal(0, 1);\n"};
    lang::Diagnostics diag{src};
    const auto g = lang::compile(src, diag);
    REQUIRE_MESSAGE(g.has_value(), diag.format());
    const Dataset d = load(*g, "v.1,v[2],v.3,s,d\n1,0,NA,yes,0.25\n");
    CHECK(d.binary_names == std::vector<std::string>{"v[1]", "v[2]", "v[3]", "s"});
    CHECK(d.real_names == std::vector<std::string>{"d"});
    CHECK(d.value(0, 1) == -1);
    CHECK(d.value(0, 2) == 0);
    CHECK(d.real_value(0, 0) == 0.25);
    const Error e = load_error(*g, "v.1,v[2],v.3,s,d,h.2\n1,0,NA,yes,0.25,1\n");
    CHECK(e.column() == 6);
    CHECK(contains(e.what(), "column 'h.2' is for the hidden node h"));
}
