// The registry of methods (runtime/sampling/methods.hpp) and what is written from it or
// checked against it: the "unknown method" error, --method's help, docs/methods.md's headings
// and the method list of include/vbn/vbn.hpp.
#include "runtime/error.hpp"
#include "runtime/sampling/kernels.hpp"
#include "runtime/sampling/methods.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <set>
#include <sstream>
#include <string>

using namespace vbn;

namespace {
std::string read_source(const std::string& path) {
    std::ifstream in(std::string(VBN_SOURCE_DIR) + "/" + path);
    REQUIRE(in);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}
}  // namespace

TEST_CASE("methods: one row per name, each built by its own function") {
    const auto& table = methods();
    REQUIRE(table.size() == method_names().size());
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < table.size(); ++i) {
        const MethodInfo& m = table[i];
        CAPTURE(m.name);
        CHECK(names.insert(m.name).second);
        CHECK(method_names()[i] == m.name);
        CHECK(&method_info(m.id) == &m);
        CHECK(&find_method(m.name) == &m);
        CHECK_FALSE(m.description.empty());
        CHECK(m.description.find('\n') == std::string_view::npos);
        // Every row but `auto`, which stands for another, builds a kernel.
        CHECK((m.build == nullptr) == (m.id == Method::auto_choice));
        // `when` reads with the figures choose_method and fit() give it.
        CHECK_NOTHROW((void)fmt::format(fmt::runtime(m.when), fmt::arg("max_block", 64), fmt::arg("largest_block", 65),
                                        fmt::arg("max_enumerated", 12), fmt::arg("max_mode_search", 10)));
        CHECK((m.when_modes.empty() || m.searches_modes));
    }
    CHECK(table.front().id == Method::auto_choice);
    CHECK(lookup_method("nope") == nullptr);
}

TEST_CASE("methods: the error and --method's help list every name") {
    CHECK(method_list(" or ") == "auto, rwm, varmh, varblock, varmix, regen, nuts or gibbs");
    CHECK_THROWS_WITH_AS(find_method("magic"),
                         "unknown method 'magic'; choose one of auto, rwm, varmh, varblock, varmix, regen, nuts, gibbs",
                         Error);
}

namespace {
// A line "## " or "### ", then the name (in backticks or not), then a space or the line's end.
bool has_heading(const std::string& doc, const std::string& name) {
    std::istringstream in(doc);
    for (std::string line; std::getline(in, line);) {
        std::size_t at = line.find_first_not_of('#');
        if (at < 2 || at > 3 || at >= line.size() || line[at] != ' ') continue;
        ++at;
        if (at < line.size() && line[at] == '`') ++at;
        if (line.compare(at, name.size(), name) != 0) continue;
        at += name.size();
        if (at < line.size() && line[at] == '`') ++at;
        if (at == line.size() || line[at] == ' ') return true;
    }
    return false;
}
}  // namespace

TEST_CASE("methods: docs/methods.md has a heading per method") {
    const std::string doc = read_source("docs/methods.md");
    for (const auto& name : method_names()) {
        CAPTURE(name);
        // "## name", "### `name`", "## `name` — ...": a heading whose first word is the name.
        CHECK(has_heading(doc, name));
    }
}

TEST_CASE("methods: include/vbn/vbn.hpp's FitOptions::method names every method") {
    const std::string header = read_source("include/vbn/vbn.hpp");
    const auto field = header.find("std::string method = \"auto\";");
    REQUIRE(field != std::string::npos);
    // The comment lines just above the field.
    std::string comment;
    for (auto end = header.rfind('\n', field); end != std::string::npos && end > 0;) {
        const auto start = header.rfind('\n', end - 1);
        const std::string line = header.substr(start + 1, end - start - 1);
        if (line.find("//") == std::string::npos) break;
        comment = line + "\n" + comment;
        if (start == std::string::npos) break;
        end = start;
    }
    for (const auto& name : method_names()) {
        CAPTURE(name);
        CHECK(comment.find("\"" + name + "\"") != std::string::npos);
    }
}
