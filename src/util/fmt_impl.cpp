// util/fmt_impl.cpp: the compiled half of the fmt that PyPI's LibTorch bundles (its headers shadow
// Debian's wherever the torch include path is seen, so the whole project uses them; see
// CMakeLists.txt). Built only in that configuration, in place of a libfmt: fmt's own format.cc
// is this include plus the explicit instantiations its headers declare extern.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
}  // namespace detail
FMT_END_NAMESPACE
