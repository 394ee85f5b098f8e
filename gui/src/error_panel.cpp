#include "error_panel.hpp"

#include <QFontDatabase>
#include <QVBoxLayout>
#include <algorithm>

namespace kvcap::gui {

ErrorPanel::ErrorPanel(QWidget* parent) : QFrame(parent), heading_(new QLabel), text_(new QPlainTextEdit) {
  setObjectName(QStringLiteral("errorPanel"));
  setFrameShape(QFrame::StyledPanel);
  setStyleSheet(QStringLiteral("#errorPanel { background: #FFF4F2; border: 1px solid #D55E00; border-radius: 3px; }"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 4, 8, 6);
  layout->setSpacing(2);
  heading_->setStyleSheet(QStringLiteral("color: #A03000; font-weight: bold;"));
  text_->setReadOnly(true);
  text_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
  text_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  text_->setFrameShape(QFrame::NoFrame);
  text_->setStyleSheet(QStringLiteral("background: transparent;"));
  layout->addWidget(heading_);
  layout->addWidget(text_);
  setVisible(false);
}

void ErrorPanel::set_errors(const QStringList& errors) {
  // One problem per line: a profile error lists each of its located diagnostics on its own line.
  const QString text = errors.join(QLatin1Char('\n'));
  lines_ = text.isEmpty() ? QStringList{} : text.split(QLatin1Char('\n'));
  count_ = lines_.size();
  heading_->setText(count_ == 1 ? QStringLiteral("1 problem") : QStringLiteral("%1 problems").arg(count_));
  if (text != text_->toPlainText()) text_->setPlainText(text);
  fit_height();
  setVisible(!errors.isEmpty());
}

void ErrorPanel::resizeEvent(QResizeEvent* e) {
  QFrame::resizeEvent(e);
  fit_height();
}

void ErrorPanel::fit_height() {
  const QFontMetrics fm = text_->fontMetrics();
  const int width = std::max(50, text_->viewport()->width() - 8);
  qsizetype rows = 0;
  for (const QString& l : lines_) rows += std::max<qsizetype>(1, (fm.horizontalAdvance(l) + width - 1) / width);
  const int shown = int(std::clamp<qsizetype>(rows, 1, 6));
  const int h = shown * fm.lineSpacing() + 10;
  if (text_->height() != h) text_->setFixedHeight(h);
}

}  // namespace kvcap::gui
