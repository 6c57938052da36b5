#include "runtime/data/dataset_builder.hpp"

#include "lang/suggest.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace vbn {

namespace {

// `text` equals `lower` (lowercase ASCII) but for the case of letters. `c | 0x20` maps
// 'A'..'Z' onto 'a'..'z' and no other byte onto a letter; other bytes must match exactly.
bool equals_lower(std::string_view text, std::string_view lower) {
    if (text.size() != lower.size()) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char l = lower[i];
        if (text[i] != l && ((text[i] | 0x20) != l || l < 'a' || l > 'z')) return false;
    }
    return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A decimal number exactly equal to 1, 0 or -1 (the value of its digits, not of the nearest
// double): an optional sign, digits with an optional decimal point (at least one digit), an
// optional exponent. Returns that value, or 2 for anything else: other numbers, a zero with
// a sign, text.
int unit_number(std::string_view t) {
    constexpr int none = 2;
    const std::size_t n = t.size();
    std::size_t i = 0;
    int sign = 0;  // 0: none written
    if (i < n && (t[i] == '+' || t[i] == '-')) sign = t[i++] == '-' ? -1 : 1;
    const std::size_t int_begin = i;
    while (i < n && is_digit(t[i])) ++i;
    const std::size_t int_end = i;
    std::size_t frac_begin = i, frac_end = i;
    if (i < n && t[i] == '.') {
        frac_begin = ++i;
        while (i < n && is_digit(t[i])) ++i;
        frac_end = i;
    }
    if (int_end == int_begin && frac_end == frac_begin) return none;
    long long exponent = 0;
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        ++i;
        const bool negative = i < n && t[i] == '-';
        if (i < n && (t[i] == '+' || t[i] == '-')) ++i;
        const std::size_t exp_begin = i;
        // Capped: no decimal number a cell can hold is 1 with an exponent beyond that.
        for (; i < n && is_digit(t[i]); ++i)
            if (exponent < 1'000'000'000'000LL) exponent = exponent * 10 + (t[i] - '0');
        if (i == exp_begin) return none;
        if (negative) exponent = -exponent;
    }
    if (i != n) return none;
    // The value is ±1 exactly when one digit is not zero, it is a 1, and its power of ten
    // plus the exponent is 0.
    int nonzero = 0;
    bool one = false;
    long long power = 0;
    for (std::size_t k = int_begin; k < int_end; ++k)
        if (t[k] != '0') {
            ++nonzero;
            one = t[k] == '1';
            power = static_cast<long long>(int_end - 1 - k);
        }
    for (std::size_t k = frac_begin; k < frac_end; ++k)
        if (t[k] != '0') {
            ++nonzero;
            one = t[k] == '1';
            power = -static_cast<long long>(k - frac_begin + 1);
        }
    if (nonzero == 0) return sign == 0 ? 0 : none;
    if (nonzero > 1 || !one || power + exponent != 0) return none;
    return sign < 0 ? -1 : 1;
}

// A value as messages quote it: escaped line breaks, cut short when long.
std::string shown(std::string_view text) {
    constexpr std::size_t limit = 40;
    std::string out;
    for (char c : text.substr(0, limit)) {
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else out += c;
    }
    if (text.size() > limit) out += "...";
    return out;
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        out += items[i];
    }
    return out;
}

// "v.3", "v[ 3 ]" and "v[03]" all name the element "v[3]"; anything else is kept as it is.
std::string canonical_column_name(std::string_view name) {
    auto index = [](std::string_view digits, long& k) {
        while (!digits.empty() && digits.front() == ' ') digits.remove_prefix(1);
        while (!digits.empty() && digits.back() == ' ') digits.remove_suffix(1);
        if (digits.empty() || digits.size() > 9) return false;
        const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), k);
        return r.ec == std::errc() && r.ptr == digits.data() + digits.size() && digits.front() != '-' && digits.front() != '+';
    };
    long k = 0;
    if (!name.empty() && name.back() == ']') {
        const auto open = name.find('[');
        if (open != std::string_view::npos && open > 0 && index(name.substr(open + 1, name.size() - open - 2), k))
            return fmt::format("{}[{}]", name.substr(0, open), k);
    }
    const auto dot = name.rfind('.');
    if (dot != std::string_view::npos && dot > 0 && index(name.substr(dot + 1), k))
        return fmt::format("{}[{}]", name.substr(0, dot), k);
    return std::string(name);
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ULL;

// The pattern key's code of a one-character binary cell on the builder's fast path: "1" 1
// (+1), "0" 2 (-1), anything else 0 (the general case).
constexpr std::array<std::uint8_t, 256> kOneCharacterCode = [] {
    std::array<std::uint8_t, 256> t{};
    t['1'] = 1;
    t['0'] = 2;
    return t;
}();

// The accepted spellings, as the messages list them.
constexpr std::string_view kBinarySpellings =
    "expected 1/-1 or 1/0 (also written as decimals: 1.0, -1.0, 0.0), true/false, t/f, yes/no or y/n (in any "
    "case), or a missing value (empty, NA, N/A, NaN, NULL, None, ?)";

// Why a binary cell was refused, and what is accepted: in full the first time, then by
// reference to it (a file of bad cells would otherwise repeat the list twenty times).
std::string not_binary_hint(std::string_view text, bool first) {
    const std::string_view expected = first ? kBinarySpellings : "expected a binary or missing value as listed above";
    double x = 0;
    if (parse_real_value(text, x)) {
        if (x == 0)
            return fmt::format("'{}' is a zero with a sign, which neither the 1/0 nor the 1/-1 coding writes; {}",
                               shown(text), expected);
        return fmt::format("'{}' is a number other than 1, 0 and -1, not a binary value; {}", shown(text), expected);
    }
    return fmt::format("'{}' is not a binary value; {}", shown(text), expected);
}

// "0,5" as "0.5": a decimal comma (or a thousands separator), for its own message.
std::string comma_as_point(std::string_view text) {
    std::string out(text);
    std::replace(out.begin(), out.end(), ',', '.');
    return out;
}

}  // namespace

// --- values ---------------------------------------------------------------------------

bool is_missing_value(std::string_view t) {
    switch (t.size()) {
        case 0: return true;
        case 1: return t[0] == '?';
        case 2: return equals_lower(t, "na");
        case 3: return equals_lower(t, "nan") || equals_lower(t, "n/a");
        case 4: return equals_lower(t, "null") || equals_lower(t, "none") || equals_lower(t, "#n/a");
        default: return false;
    }
}

std::optional<std::int8_t> parse_binary_value(std::string_view t, BinaryNumber& number) {
    number = BinaryNumber::other;
    // By length first: this runs for every binary cell but "1" and "-1" (the builder reads
    // those itself).
    switch (t.size()) {
        case 0: return 0;
        case 1:
            switch (t[0]) {
                case '1': case 'y': case 'Y': case 't': case 'T': return 1;
                case '0': number = BinaryNumber::zero; return -1;
                case 'n': case 'N': case 'f': case 'F': return -1;
                case '?': return 0;
                default: return std::nullopt;
            }
        case 2:
            if (t[0] == '-' && t[1] == '1') {
                number = BinaryNumber::minus_one;
                return -1;
            }
            if (t[0] == '+' && t[1] == '1') return 1;
            if (equals_lower(t, "no")) return -1;
            if (equals_lower(t, "na")) return 0;
            break;
        case 3:
            if (equals_lower(t, "yes")) return 1;
            if (is_missing_value(t)) return 0;
            break;
        case 4:
            if (equals_lower(t, "true")) return 1;
            if (is_missing_value(t)) return 0;
            break;
        case 5:
            if (equals_lower(t, "false")) return -1;
            break;
        default: break;
    }
    // Other spellings of the numbers: 1.0, 0.0, -1.0 (pandas), 1.000000e+00 (numpy), ...
    switch (unit_number(t)) {
        case 1: return 1;
        case 0: number = BinaryNumber::zero; return -1;
        case -1: number = BinaryNumber::minus_one; return -1;
        default: return std::nullopt;
    }
}

std::optional<std::int8_t> parse_binary_value(std::string_view t) {
    BinaryNumber number;
    return parse_binary_value(t, number);
}

bool parse_real_value(std::string_view t, double& value) {
    const char* first = t.data();
    const char* last = t.data() + t.size();
    if (first != last && *first == '+') {
        ++first;  // from_chars takes no leading '+'
        if (first != last && *first == '-') return false;
    }
    if (first == last) return false;
    double x = 0;
    const auto r = std::from_chars(first, last, x);
    if (r.ec != std::errc() || r.ptr != last || !std::isfinite(x)) return false;
    value = x;
    return true;
}

// --- errors ---------------------------------------------------------------------------

std::string DataErrors::where(long line, long column) const {
    if (line <= 0) return name_;
    if (column <= 0) return fmt::format("{}:{}", name_, line);
    return fmt::format("{}:{}:{}", name_, line, column);
}

void DataErrors::add(long line, long column, std::string_view message) {
    if (messages_.size() < max_messages) {
        add_placed(line, column, fmt::format("{}: {}", where(line, column), message));
        return;
    }
    add_placed(line, column, {});
}

void DataErrors::add_placed(long line, long column, std::string message) {
    if (count_++ == 0) {
        first_line_ = line;
        first_column_ = column;
    }
    if (messages_.size() < max_messages) messages_.push_back(std::move(message));
}

void DataErrors::throw_if_any() const {
    if (count_ == 0) return;
    std::string text;
    for (const auto& m : messages_) {
        if (!text.empty()) text += '\n';
        text += m;
    }
    const long more = count_ - static_cast<long>(messages_.size());
    if (more > 0) text += fmt::format("\n... and {} more error{}", more, more == 1 ? "" : "s");
    throw Error(ErrorKind::data, text, first_line_, first_column_);
}

// --- pattern table --------------------------------------------------------------------

PatternTable::PatternTable(std::size_t words) : words_(words), keys_(words), slots_(64, 0) {}

std::uint64_t PatternTable::hash(const std::uint64_t* key) const {
    std::uint64_t h = words_ * kMul;
    for (std::size_t i = 0; i < words_; ++i) {
        h = (h ^ key[i]) * kMul;
        h ^= h >> 32;
    }
    // splitmix64's finaliser, so that the low bits used for the slot depend on every word
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

// A slot holds the pattern + 1 in its high half (0: empty) and the low half of the key's
// hash, so a probe rejects other keys without touching them, and growing needs no rehash
// while there are fewer than 2^32 slots.
std::pair<int, bool> PatternTable::insert(const std::uint64_t* key) {
    // Load factor at most 1/2 keeps linear probing short.
    if (2 * (static_cast<std::size_t>(size_) + 1) > slots_.size()) grow();
    const auto h = static_cast<std::uint32_t>(hash(key));
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = h & mask;
    while (const std::uint64_t s = slots_[i]) {
        if (static_cast<std::uint32_t>(s) == h) {
            const int p = static_cast<int>((s >> 32) - 1);
            // No words (a model without data columns): every row is the one empty pattern, and
            // memcmp may not be given the null pointer of an empty key table.
            if (words_ == 0 || std::memcmp(this->key(p), key, words_ * sizeof(std::uint64_t)) == 0) return {p, false};
        }
        i = (i + 1) & mask;
    }
    if (size_ == std::numeric_limits<int>::max()) throw Error(ErrorKind::limit, "more than 2^31 distinct rows");
    const int p = size_++;
    std::copy(key, key + words_, keys_.slot(static_cast<std::size_t>(p)));
    slots_[i] = (static_cast<std::uint64_t>(p) + 1) << 32 | h;
    return {p, true};
}

void PatternTable::grow() {
    if (slots_.size() >= (std::size_t{1} << 32))
        throw Error(ErrorKind::limit, "too many distinct rows for the pattern table");
    double_row_index(slots_);
}

void PatternTable::release() {
    keys_.clear();
    slots_ = std::vector<std::uint64_t>(64, 0);
    size_ = 0;
}

// --- builder --------------------------------------------------------------------------

namespace {
std::size_t binary_words_for(const ir::Graph& g) {
    std::size_t n = 0;
    for (const auto& el : g.elements) n += el.binary && !el.hidden;
    return (n + 31) / 32;  // 32 two-bit codes per word
}
std::size_t real_count(const ir::Graph& g) {
    std::size_t n = 0;
    for (const auto& el : g.elements) n += !el.binary;
    return n;
}
}  // namespace

DatasetBuilder::DatasetBuilder(const ir::Graph& graph, std::string name)
    : graph_(&graph), errors_(name), binary_words_(binary_words_for(graph)),
      table_(binary_words_for(graph) + real_count(graph)) {
    out_.name = std::move(name);
    out_.column_of.assign(graph.elements.size(), -1);
    for (std::size_t e = 0; e < graph.elements.size(); ++e) {
        const ir::Element& el = graph.elements[e];
        if (el.binary && el.hidden) continue;
        auto& names = el.binary ? out_.binary_names : out_.real_names;
        out_.column_of[e] = static_cast<int>(names.size());
        targets_.push_back({0, static_cast<int>(names.size()), el.binary, el.name});
        names.push_back(el.name);
    }
    // Default layout: binary columns, then real columns.
    std::stable_partition(targets_.begin(), targets_.end(), [](const Target& t) { return t.binary; });
    for (std::size_t i = 0; i < targets_.size(); ++i) targets_[i].source = i;
    source_columns_ = targets_.size();
    reset_pending();
    out_.missing.assign(out_.binary_names.size(), 0);
    key_.assign(table_.words(), 0);
}

void DatasetBuilder::note_number(Target& t, std::uint8_t number, long line) {
    if ((number & 1) && !(t.numbers_seen & 1)) t.first_zero = line;
    if ((number & 2) && !(t.numbers_seen & 2)) t.first_minus = line;
    t.numbers_seen |= number;
}

void DatasetBuilder::set_header(std::span<const std::string_view> names, long line, LoadNotes* notes) {
    if (out_.rows > 0 || errors_.count() > 0)
        throw Error(ErrorKind::usage, fmt::format("{}: the header must come before the rows", out_.name));
    const auto& elements = graph_->elements;
    std::unordered_map<std::string, int> element_of;
    for (std::size_t e = 0; e < elements.size(); ++e) element_of.emplace(elements[e].name, static_cast<int>(e));

    header_line_ = line;
    targets_.clear();
    std::vector<long> source_of(elements.size(), -1);
    std::vector<std::size_t> extras;
    for (std::size_t i = 0; i < names.size(); ++i) {
        const long column = static_cast<long>(i) + 1;
        const auto it = element_of.find(canonical_column_name(names[i]));
        if (it == element_of.end()) {
            extras.push_back(i);
            continue;
        }
        const auto e = static_cast<std::size_t>(it->second);
        const ir::Element& el = elements[e];
        const std::string& variable = graph_->variables[static_cast<std::size_t>(el.variable)].name;
        if (el.binary && el.hidden) {
            errors_.add(line, column,
                        fmt::format("column '{}' is for the hidden node {}, which is never observed; remove the "
                                    "column, or drop 'hidden' from the declaration of {}",
                                    shown(names[i]), variable, variable));
            continue;
        }
        if (source_of[e] >= 0) {
            const auto first = static_cast<std::size_t>(source_of[e]);
            errors_.add(line, column,
                        fmt::format("column '{}' duplicates column {} ('{}'): both hold {}; keep one of them",
                                    shown(names[i]), first + 1, shown(names[first]), el.name));
            continue;
        }
        source_of[e] = static_cast<long>(i);
        targets_.push_back({i, out_.column_of[e], el.binary, std::string(names[i])});
    }

    std::vector<std::string> missing;
    std::vector<std::string> hints;
    for (std::size_t e = 0; e < elements.size(); ++e) {
        const ir::Element& el = elements[e];
        if ((el.binary && el.hidden) || source_of[e] >= 0) continue;
        missing.push_back(el.name);
    }
    if (!missing.empty()) {
        // A column the model does not know that is a likely typo of a missing one (the first
        // few such columns: each is compared with every missing name).
        constexpr std::size_t guessed = 50;
        for (std::size_t k = 0; k < extras.size() && k < guessed; ++k) {
            const std::string column = canonical_column_name(names[extras[k]]);
            const std::string guess = lang::closest_name(column, missing);
            if (guess.empty()) continue;
            if (lowercase(column) == lowercase(guess))
                hints.push_back(fmt::format("column '{}' differs from {} only in case", shown(names[extras[k]]), guess));
            else
                hints.push_back(fmt::format("column '{}' is not in the model; did you mean '{}'?", shown(names[extras[k]]), guess));
        }
        for (std::size_t i : extras) {
            const int v = graph_->find_variable(std::string(names[i]));
            if (v < 0 || !graph_->variables[static_cast<std::size_t>(v)].is_array) continue;
            const ir::Variable& var = graph_->variables[static_cast<std::size_t>(v)];
            hints.push_back(fmt::format("column '{}' names the whole array; its elements are the columns {}[1] .. "
                                        "{}[{}] (or {}.1 .. {}.{})",
                                        var.name, var.name, var.name, var.size, var.name, var.name, var.size));
        }
        std::string message = fmt::format(
            "missing column{} for {}; every observed node element and every covariate needs a column (an array "
            "element is named like v[3] or v.3)",
            missing.size() == 1 ? "" : "s", join(missing));
        if (!hints.empty()) message += fmt::format(" ({})", fmt::join(hints, "; "));
        errors_.add(line, 0, message);
    }
    errors_.throw_if_any();

    if (!extras.empty() && notes) {
        constexpr std::size_t listed = 20;
        std::vector<std::string> items;
        for (std::size_t k = 0; k < extras.size() && k < listed; ++k)
            items.push_back(fmt::format("'{}' (column {})", shown(names[extras[k]]), extras[k] + 1));
        if (extras.size() > listed) items.push_back(fmt::format("and {} more", extras.size() - listed));
        notes->notices.push_back(fmt::format("{}: ignoring {} column{} that the model does not use: {}",
                                             errors_.where(line, 0), extras.size(), extras.size() == 1 ? "" : "s",
                                             join(items)));
    }
    source_columns_ = names.size();
    reset_pending();
}

void DatasetBuilder::set_real(int column, double value) {
    // Bit pattern, so that equal rows are exactly the rows that give equal likelihood terms.
    key_[binary_words_ + static_cast<std::size_t>(column)] = std::bit_cast<std::uint64_t>(value);
}

void DatasetBuilder::add_text_row(std::span<const std::string_view> fields, long line) {
    if (fields.size() != source_columns_) {
        const std::size_t first_bad = std::min(fields.size(), source_columns_) + 1;
        errors_.add(line, static_cast<long>(first_bad),
                    fmt::format("this row has {} field{} but the header has {}", fields.size(),
                                fields.size() == 1 ? "" : "s", source_columns_));
        return;
    }
    std::fill(key_.begin(), key_.end(), 0);
    bool ok = true;
    unsigned row_zero = 0, row_minus = 0;
    for (Target& t : targets_) {
        const std::string_view text = fields[t.source];
        const long column = static_cast<long>(t.source) + 1;
        if (t.binary) {
            const auto c = static_cast<std::size_t>(t.column);
            // The spellings a writer of ±1 or 1/0 data uses, before the general case, told
            // apart without a branch on which it is (as often one as another).
            const std::size_t n = text.size();
            // (Both loads are from valid addresses whatever n is: index selects, not branches.)
            const char* p = n > 0 ? text.data() : "";
            const char c0 = p[0], c1 = p[n > 1];
            // The key's two bits: 1 for +1, 2 for -1.
            // (Entry 0 is 0: the index selects, not a branch, which would be mispredicted.)
            const unsigned one = kOneCharacterCode[static_cast<unsigned char>(c0) & (0u - unsigned{n == 1})];
            const unsigned minus = (n == 2) & (c0 == '-') & (c1 == '1');
            const unsigned code2 = one | (minus << 1);
            if (code2 != 0) {
                key_[c / 32] |= std::uint64_t{code2} << (2 * (c % 32));
                // Whether the row holds a 0 or a -1, for the coding check after the row.
                row_zero |= one >> 1;
                row_minus |= minus;
                continue;
            }
            BinaryNumber number;
            const auto code = parse_binary_value(text, number);
            if (number != BinaryNumber::other) {
                const auto bit = static_cast<std::uint8_t>(number == BinaryNumber::zero ? 1 : 2);
                if (bit & ~t.numbers_seen) note_number(t, bit, line);
            }
            if (!code) {
                ok = false;
                errors_.add(line, column, fmt::format("column '{}': {}", shown(t.name), not_binary_hint(text, !listed_binary_)));
                listed_binary_ = true;
            } else if (*code == 0) {
                ++out_.missing[static_cast<std::size_t>(t.column)];
            } else {
                key_[c / 32] |= std::uint64_t{*code > 0 ? 1u : 2u} << (2 * (c % 32));
            }
            continue;
        }
        double x = 0;
        if (parse_real_value(text, x)) {
            set_real(t.column, x);
            continue;
        }
        ok = false;
        if (text.find(',') != std::string_view::npos && parse_real_value(comma_as_point(text), x))
            errors_.add(line, column,
                        fmt::format("column '{}': '{}' is not a number as vbn reads them: numbers are written with a "
                                    "decimal point and without thousands separators, such as 0.5, -3 or 1e-3",
                                    shown(t.name), shown(text)));
        else if (is_missing_value(text))
            errors_.add(line, column,
                        fmt::format("column '{}': covariate values may not be missing (found {}); expected a finite "
                                    "real number",
                                    shown(t.name), text.empty() ? "an empty field" : fmt::format("'{}'", shown(text))));
        else
            errors_.add(line, column,
                        fmt::format("column '{}': '{}' is not a finite real number; covariate columns hold numbers "
                                    "such as 0.5, -3 or 1e-3",
                                    shown(t.name), shown(text)));
    }
    // Columns that have not held a 0 (or a -1) yet are looked at only when the row holds one
    // somewhere: after the first rows, rarely, and then only those columns.
    if ((row_zero & !pending_zero_.empty()) | (row_minus & !pending_minus_.empty())) [[unlikely]]
        note_pending(fields, line);
    if (ok) commit(line);
}

void DatasetBuilder::note_pending(std::span<const std::string_view> fields, long line) {
    const auto scan = [&](std::vector<std::uint32_t>& pending, std::string_view spelling, std::uint8_t bit) {
        std::size_t kept = 0;
        for (const std::uint32_t k : pending) {
            Target& t = targets_[k];
            if (fields[t.source] == spelling) note_number(t, bit, line);
            if (!(t.numbers_seen & bit)) pending[kept++] = k;
        }
        pending.resize(kept);
    };
    scan(pending_zero_, "0", 1);
    scan(pending_minus_, "-1", 2);
}

void DatasetBuilder::reset_pending() {
    pending_zero_.clear();
    pending_minus_.clear();
    for (std::size_t k = 0; k < targets_.size(); ++k)
        if (targets_[k].binary) {
            pending_zero_.push_back(static_cast<std::uint32_t>(k));
            pending_minus_.push_back(static_cast<std::uint32_t>(k));
        }
}

void DatasetBuilder::add_coded_row(std::span<const std::int8_t> binary, std::span<const double> real, long line) {
    if (binary.size() != binary_columns() || real.size() != real_columns())
        throw Error(ErrorKind::usage, fmt::format("{}: a coded row needs {} binary and {} real values, got {} and {}",
                                                  out_.name, binary_columns(), real_columns(), binary.size(),
                                                  real.size()));
    ++coded_rows_;
    if (line <= 0) line = coded_rows_;
    std::fill(key_.begin(), key_.end(), 0);
    bool ok = true;
    for (std::size_t c = 0; c < binary.size(); ++c) {
        const std::int8_t v = binary[c];
        if (v == 0) {
            ++out_.missing[c];
        } else if (v == 1 || v == -1) {
            key_[c / 32] |= std::uint64_t{v > 0 ? 1u : 2u} << (2 * (c % 32));
        } else {
            ok = false;
            errors_.add(line, static_cast<long>(c) + 1,
                        fmt::format("column '{}': code {} is not +1, -1 or 0 (missing)", out_.binary_names[c], v));
        }
    }
    for (std::size_t c = 0; c < real.size(); ++c) {
        if (std::isfinite(real[c])) {
            set_real(static_cast<int>(c), real[c]);
            continue;
        }
        ok = false;
        errors_.add(line, static_cast<long>(binary.size() + c) + 1,
                    fmt::format("column '{}': {} is not a finite real number", out_.real_names[c], real[c]));
    }
    if (ok) commit(line);
}

void DatasetBuilder::commit(long line) {
    const auto [p, fresh] = table_.insert(key_.data());
    if (fresh) {
        out_.count.push_back(1);
        out_.first_line.push_back(line);
    } else {
        out_.count[static_cast<std::size_t>(p)] += 1;
    }
    if (keep_row_patterns_) out_.row_pattern.push_back(p);
    ++out_.rows;
}

void DatasetBuilder::check_codings() {
    for (const Target& t : targets_) {
        if (!t.binary) continue;
        if (t.numbers_seen != 3) continue;
        const long zero = t.first_zero, minus = t.first_minus;
        const long column = static_cast<long>(t.source) + 1;
        errors_.add(std::max(zero, minus), column,
                    fmt::format("column '{}' mixes the 1/0 and 1/-1 codings: its 0s (the first at {}) and its -1s (the "
                                "first at {}) would both be read as -1, and the two codings cannot be mixed in one "
                                "column; if 0 marks a missing value, write it as NA or leave the cell empty",
                                shown(t.name), errors_.where(zero, column), errors_.where(minus, column)));
    }
}

Dataset DatasetBuilder::finish() {
    check_codings();
    errors_.throw_if_any();
    if (out_.rows == 0)
        throw Error(ErrorKind::data, fmt::format("{}: no data rows; expected one row per observation", errors_.where(header_line_, 0)),
                    header_line_, 0);
    const std::size_t nb = binary_columns();
    const std::size_t nr = real_columns();
    out_.patterns = table_.size();
    const auto np = static_cast<std::size_t>(out_.patterns);
    out_.binary.assign(np * nb, 0);
    out_.real.assign(np * nr, 0.0);
    for (std::size_t p = 0; p < np; ++p) {
        const std::uint64_t* key = table_.key(static_cast<int>(p));
        std::int8_t* row = out_.binary.data() + p * nb;
        constexpr std::int8_t value_of[4] = {0, 1, -1, 0};
        for (std::size_t c = 0; c < nb; ++c) row[c] = value_of[(key[c / 32] >> (2 * (c % 32))) & 3u];
        for (std::size_t c = 0; c < nr; ++c) out_.real[p * nr + c] = std::bit_cast<double>(key[binary_words_ + c]);
    }
    table_.release();
    Dataset result = std::move(out_);
    out_ = Dataset{};
    return result;
}

}  // namespace vbn
