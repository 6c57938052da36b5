// fmt's compiled part, built into the vbn executable when VBN_STATIC_TOOL is on (see
// tools/vbn/CMakeLists.txt). Debian ships fmt's compiled part only as a shared library, and
// that library needs the shared libstdc++, which is what the executable leaves out to start
// sooner. Everything else of fmt is in its headers; what libfmt.so would otherwise supply is
// fmt's out-of-line functions (format-inl.h, compiled here once, not inline) and the few
// templates the headers declare extern, instantiated for char, the only character type vbn
// formats.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view, basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);
}  // namespace detail
FMT_END_NAMESPACE
