#pragma once
// Colours, pens and number formats shared by the dashboard's charts.
// Model series use the Okabe & Ito (2008) colour-blind-safe palette, ordered for contrast on white
// (yellow last), then four of Paul Tol's muted colours (12 in all); the memory breakdown uses greys plus the palette's
// green for KV, so a memory term never wears a model's colour.
#include <QColor>
#include <QFont>
#include <QString>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvcap::gui {

/// Text from a profile or a file name as charts, legends and exported SVG show it: control characters made
/// visible (\x1b, \n; kvcap::escape::terminal_text), so a name cannot break a legend line or the SVG file.
QString display_text(std::string_view s);

/// Colour of the i-th selected model (wraps after palette_size()).
QColor model_colour(std::size_t i);
/// Colours in the palette (8): past them, line styles and marker shapes tell series apart.
std::size_t palette_size();
/// Line style of the i-th model: solid for the first 8, dashed for the next 8, ...
Qt::PenStyle model_pen_style(std::size_t i);

namespace memory_colours {
QColor weights();
QColor activation();
QColor non_torch();
QColor kv_cache();
QColor unused();
}  // namespace memory_colours

QFont chart_title_font();
QFont axis_title_font();
QFont axis_label_font();

/// "1K", "16K", "1M" for whole multiples of 1024 (vLLM's K = 1024), else "12,288".
QString tokens_label(std::int64_t tokens);
/// "420,208"
QString grouped(std::int64_t v);
/// "14.96 GiB" (GiB = 2^30 bytes).
QString gib_text(double bytes, int decimals = 2);
/// "128.0 KiB", "2.00 GiB": binary units, three significant digits.
QString binary_bytes_text(double bytes);
/// Concurrency as vLLM prints it: "412", "25.7", "0.83".
QString concurrency_text(double v);

}  // namespace kvcap::gui
