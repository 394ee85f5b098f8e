#include "model_legend.hpp"

#include <QFontMetrics>
#include <algorithm>

#include "dashboard_model.hpp"
#include "style.hpp"

namespace kvcap::gui {

QString elide_middle(const QString& s, int max_chars) {
  if (s.size() <= max_chars || max_chars < 3) return s;
  const qsizetype keep = max_chars - 1, tail = keep / 2, head = keep - tail;
  return s.left(head) + QChar(0x2026) + s.right(tail);
}

QString elide_middle_px(const QString& s, const QFont& font, int px) {
  const QFontMetrics fm(font);
  if (fm.horizontalAdvance(s) <= px) return s;
  for (int n = int(s.size()) - 1; n > 3; --n) {
    QString e = elide_middle(s, n);
    if (fm.horizontalAdvance(e) <= px) return e;
  }
  return elide_middle(s, 3);
}

int vertical_axis_label_px(int chart_px) {
  return std::max(40, int(0.4 * chart_px) - 10);
}

ModelLegend::ModelLegend(QWidget* parent) : QLabel(parent) {
  setObjectName(QStringLiteral("modelLegend"));
  setWordWrap(true);
  setTextFormat(Qt::RichText);
  setFont(axis_label_font());
  setContentsMargins(4, 0, 4, 0);
  setToolTip(QStringLiteral("Click a model to hide it in every chart (again to show it)"));
  connect(this, &QLabel::linkActivated, this, [this](const QString& link) {
    if (link.startsWith(QLatin1String("toggle:"))) emit toggled(link.mid(7).toStdString());
  });
}

namespace {
// The profile's display name ("Meta Llama 3.1 8B"); the id until the profile loads.
QString display_name(const ModelResult& r) {
  return r.model && !r.model->display_name.empty() ? display_text(r.model->display_name)
                                                   : QString::fromStdString(r.label);
}
}  // namespace

void ModelLegend::refresh(const DashboardModel& model) {
  entries_.clear();
  QStringList items;
  for (const ModelResult& r : model.results()) {
    // The profile's display name ("Meta Llama 3.1 8B"), its id after it; the id alone until it loads.
    QString name = display_name(r);
    for (const ModelResult& o : model.results())
      if (&o != &r && display_name(o) == name) name += QStringLiteral(" (") + QString::fromStdString(r.label) + ")";
    const QString shown = elide_middle(name, kMaxChars);
    entries_.push_back(shown);
    const bool off = model.is_hidden(r.key);
    const QColor c = model_colour(r.colour_index);
    const QString stroke = model_pen_style(r.colour_index) == Qt::SolidLine ? QStringLiteral("\u2501\u2501")
                                                                            : QStringLiteral("\u2505\u2505");
    QString status;
    if (!r.error.empty())
      status = QStringLiteral(" \u2014 error");
    else if (r.fit)
      status = QStringLiteral(" \u2014 does not fit");
    // Non-breaking spaces inside an entry: the text wraps between entries only.
    QString item = QStringLiteral(
                       "<a href=\"toggle:%1\" style=\"text-decoration:none; color:%2\">%3</a>&nbsp;"
                       "<a href=\"toggle:%1\" style=\"text-decoration:none; color:%4\">%5%6</a>")
                       .arg(QString::fromStdString(r.key).toHtmlEscaped(), off ? QStringLiteral("#C0C0C0") : c.name(),
                            stroke, off ? QStringLiteral("#A0A0A0") : QStringLiteral("#202020"),
                            shown.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;")),
                            status.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
    if (off) item = QStringLiteral("<s>") + item + QStringLiteral("</s>");
    items << item;
  }
  QString text = items.join(QStringLiteral(" &nbsp;&nbsp; "));
  if (model.baseline())
    text += QStringLiteral(" &nbsp;&nbsp; <span style=\"color:#707070\">wide and faint: baseline %1</span>")
                .arg(model.baseline()->description.toHtmlEscaped());
  setText(text);
  QStringList ids;
  for (const ModelResult& r : model.results())
    ids << display_name(r).toHtmlEscaped() + QStringLiteral(": <tt>") + QString::fromStdString(r.key).toHtmlEscaped() +
               QStringLiteral("</tt>");
  setToolTip(QStringLiteral("Click a model to hide it in every chart (again to show it)<br>") +
             ids.join(QStringLiteral("<br>")));
  setVisible(!items.isEmpty());
}

}  // namespace kvcap::gui
