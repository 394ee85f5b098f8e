#include "export.hpp"

#include <QApplication>
#include <QChartView>
#include <QFile>
#include <QFileInfo>
#include <QPainter>
#include <QSvgGenerator>
#include <QTextDocumentFragment>
#include <stdexcept>

#include "kvcap/escape.hpp"

namespace kvcap::gui {

namespace {
int g_argc = 1;
char g_arg0[] = "kvcap";
char* g_argv[] = {g_arg0, nullptr};

// Qt's offscreen platform complains about the missing XDG runtime directory and font database
// propagation; neither matters for rendering a file, and the CLI's stderr is for the user's errors.
void quiet_handler(QtMsgType type, const QMessageLogContext&, const QString& msg) {
  if (type == QtFatalMsg || type == QtCriticalMsg) fprintf(stderr, "%s\n", qPrintable(msg));
}
}  // namespace

EnsureApplication::EnsureApplication() {
  if (QCoreApplication::instance()) {
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
      throw std::runtime_error("rendering charts needs a QApplication, but a non-widget Qt application is running");
    return;
  }
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  qInstallMessageHandler(quiet_handler);
  owned_ = std::make_unique<QApplication>(g_argc, g_argv);
}

EnsureApplication::~EnsureApplication() {
  if (owned_) {
    owned_.reset();
    qInstallMessageHandler(nullptr);
  }
}

void lay_out_at(QWidget* w, QSize size) {
  w->resize(size);
  if (!w->isVisible()) {
    w->setAttribute(Qt::WA_DontShowOnScreen, true);
    w->show();
  }
  QCoreApplication::processEvents();
  QCoreApplication::processEvents();
}

QImage render_image(QWidget* w, QSize size) {
  lay_out_at(w, size);
  QImage img(size, QImage::Format_ARGB32_Premultiplied);
  img.fill(Qt::white);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  p.setRenderHint(QPainter::TextAntialiasing);
  w->render(&p, QPoint(), QRegion(QRect(QPoint(0, 0), size)), QWidget::DrawChildren);
  p.end();
  return img;
}

void save_widget(QWidget* w, const QString& path, QSize size, const QString& title) {
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix != QLatin1String("png") && suffix != QLatin1String("svg"))
    throw std::invalid_argument(path.toStdString() + ": expected a .png or .svg file name");
  if (size.width() < 100 || size.height() < 100 || size.width() > 20000 || size.height() > 20000)
    throw std::invalid_argument("image size " + std::to_string(size.width()) + "x" + std::to_string(size.height()) +
                                ": expected between 100x100 and 20000x20000 pixels");
  if (suffix == QLatin1String("png")) {
    const QImage img = render_image(w, size);
    if (!img.save(path, "PNG")) throw std::runtime_error(path.toStdString() + ": cannot write the PNG file");
    return;
  }
  lay_out_at(w, size);
  {
    QFile probe(path);  // QSvgGenerator fails silently on an unwritable path
    if (!probe.open(QIODevice::WriteOnly)) throw std::runtime_error(path.toStdString() + ": cannot write the SVG file");
  }
  QSvgGenerator svg;
  svg.setFileName(path);
  svg.setSize(size);
  svg.setViewBox(QRect(QPoint(0, 0), size));
  // QSvgGenerator writes the title into <title> as given (no escaping): a title such as "<script>" or "a & b"
  // would make the file malformed XML, or active content. escape::xml_text makes it character data.
  svg.setTitle(QString::fromStdString(escape::xml_text(title.toStdString())));
  svg.setDescription(QStringLiteral("kvcap chart"));
  QPainter p(&svg);
  p.setRenderHint(QPainter::Antialiasing);
  w->render(&p, QPoint(), QRegion(QRect(QPoint(0, 0), size)), QWidget::DrawChildren);
  p.end();
  if (QFileInfo(path).size() == 0) throw std::runtime_error(path.toStdString() + ": the SVG file came out empty");
}

void save_chart(QChartView* view, const QString& path, QSize size) {
  // A file gets a white page around the chart, not the window's grey; restored afterwards.
  struct WhiteBackground {
    QChartView* v;
    QBrush old;
    explicit WhiteBackground(QChartView* view) : v(view), old(view->backgroundBrush()) {
      v->setBackgroundBrush(Qt::white);
    }
    ~WhiteBackground() { v->setBackgroundBrush(old); }
  } white(view);
  // The chart's title is HTML (names in it escaped): the file's title is its plain text.
  save_widget(view, path, size,
              view->chart() ? QTextDocumentFragment::fromHtml(view->chart()->title()).toPlainText() : QString());
}

void save_text(const QString& path, const QByteArray& text) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size())
    throw std::runtime_error(path.toStdString() + ": cannot write the file");
}

}  // namespace kvcap::gui
