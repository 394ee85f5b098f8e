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
  count_ = text.isEmpty() ? 0 : text.count(QLatin1Char('\n')) + 1;
  heading_->setText(count_ == 1 ? QStringLiteral("1 problem") : QStringLiteral("%1 problems").arg(count_));
  text_->setPlainText(text);
  const int lines = int(std::min<qsizetype>(count_, 6));
  text_->setFixedHeight(lines * text_->fontMetrics().lineSpacing() + 10);
  setVisible(!errors.isEmpty());
}

}  // namespace kvcap::gui
