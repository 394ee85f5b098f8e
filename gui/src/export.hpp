#pragma once
// Rendering charts and windows to files: PNG (QImage) and SVG (QSvgGenerator), with or without a display.
#include <QImage>
#include <QSize>
#include <QString>
#include <memory>

class QApplication;
class QWidget;
class QChartView;

namespace kvcap::gui {

/// Makes sure a QApplication exists. When none does, creates one on the offscreen platform (unless
/// QT_QPA_PLATFORM says otherwise), so `kvcap plot` renders without a display; it lives as long as
/// this object. Throws std::runtime_error when a non-widget QCoreApplication is already running.
class EnsureApplication {
 public:
  EnsureApplication();
  ~EnsureApplication();
  EnsureApplication(const EnsureApplication&) = delete;
  EnsureApplication& operator=(const EnsureApplication&) = delete;

 private:
  std::unique_ptr<QApplication> owned_;
};

/// Lays `w` out at `size` (showing it off screen when it is not visible) and processes pending events.
void lay_out_at(QWidget* w, QSize size);
/// `w` rendered at `size` (white background).
QImage render_image(QWidget* w, QSize size);
/// Saves any widget (a chart, the whole dashboard) as .png or .svg (by the path's suffix) at `size`, laid out at that
/// size; `title` goes into the SVG's <title>, escaped. Throws as save_chart.
void save_widget(QWidget* w, const QString& path, QSize size, const QString& title);
/// Saves a chart view as .png or .svg (by the path's suffix) at `size`. Throws std::invalid_argument
/// for another suffix and std::runtime_error when the file cannot be written.
void save_chart(QChartView* view, const QString& path, QSize size);
/// Writes `text` to `path`; throws std::runtime_error naming the path when it cannot.
void save_text(const QString& path, const QByteArray& text);

}  // namespace kvcap::gui
