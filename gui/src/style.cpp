#include "style.hpp"

#include <QLocale>
#include <array>
#include <cmath>

#include "kvcap/escape.hpp"

namespace kvcap::gui {

QString display_text(std::string_view s) {
  return QString::fromStdString(escape::terminal_text(s));
}

namespace {
// Okabe-Ito: blue, vermillion, reddish purple, orange, sky blue, black, bluish green, yellow. Bluish green
// comes late because the memory breakdown uses it for the KV cache. Then four of Paul Tol's muted scheme (wine,
// teal, olive, indigo), so that twelve models get twelve colours before the line styles repeat them.
constexpr std::array<QRgb, 12> kOkabeIto = {0x0072B2, 0xD55E00, 0xCC79A7, 0xE69F00, 0x56B4E9, 0x000000,
                                            0x009E73, 0xF0E442, 0x882255, 0x44AA99, 0x999933, 0x332288};
}  // namespace

QColor model_colour(std::size_t i) {
  return QColor::fromRgb(kOkabeIto[i % kOkabeIto.size()]);
}

std::size_t palette_size() {
  return kOkabeIto.size();
}

Qt::PenStyle model_pen_style(std::size_t i) {
  // Not DashLine, which marks the curve beyond max_model_len, nor DotLine (one request) or DashDotLine (the
  // max_num_seqs cap).
  switch ((i / kOkabeIto.size()) % 2) {
    case 0:
      return Qt::SolidLine;
    default:
      return Qt::DashDotDotLine;
  }
}

namespace memory_colours {
QColor weights() {
  return QColor::fromRgb(0x4D4D4D);
}
QColor activation() {
  return QColor::fromRgb(0x9A9A9A);
}
QColor non_torch() {
  return QColor::fromRgb(0xC8C8C8);
}
QColor kv_cache() {
  return QColor::fromRgb(0x009E73);
}
QColor unused() {
  return QColor::fromRgb(0xF0F0F0);
}
}  // namespace memory_colours

QFont chart_title_font() {
  QFont f;
  f.setPointSizeF(10.5);
  f.setBold(true);
  return f;
}
QFont axis_title_font() {
  QFont f;
  f.setPointSizeF(9);
  return f;
}
QFont axis_label_font() {
  QFont f;
  f.setPointSizeF(8.5);
  return f;
}

QString tokens_label(std::int64_t t) {
  constexpr std::int64_t kMi = std::int64_t{1} << 20;
  if (t >= kMi && t % kMi == 0) return QString::number(t / kMi) + "M";
  if (t >= 1024 && t % 1024 == 0) return QString::number(t / 1024) + "K";
  return grouped(t);
}

QString grouped(std::int64_t v) {
  return QLocale(QLocale::English).toString(static_cast<qlonglong>(v));
}

QString gib_text(double bytes, int decimals) {
  return QString::number(bytes / 1073741824.0, 'f', decimals) + " GiB";
}

QString binary_bytes_text(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && u < 4) v /= 1024, ++u;
  if (u == 0) return QString::number(static_cast<qlonglong>(std::llround(v))) + " B";
  return QString::number(v, 'f', v >= 100 ? 1 : (v >= 10 ? 1 : 2)) + " " + units[u];
}

QString concurrency_text(double v) {
  if (v >= 100) return QString::number(v, 'f', 0);
  if (v >= 10) return QString::number(v, 'f', 1);
  return QString::number(v, 'f', 2);
}

}  // namespace kvcap::gui
