#pragma once
// Problems shown inside the window instead of crashing it: profile files that do not load (with their
// file:line:col diagnostics), impossible deployments (naming the field), a bad calibration or timeline.
// Hidden when there is nothing to say.
#include <QFrame>
#include <QLabel>
#include <QPlainTextEdit>
#include <QStringList>

namespace kvcap::gui {

class ErrorPanel : public QFrame {
  Q_OBJECT
 public:
  explicit ErrorPanel(QWidget* parent = nullptr);
  void set_errors(const QStringList& errors);
  QString text() const { return text_->toPlainText(); }
  qsizetype count() const { return count_; }

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  /// Tall enough for every wrapped line, up to 6 (then it scrolls).
  void fit_height();

  QLabel* heading_;
  QPlainTextEdit* text_;
  QStringList lines_;
  qsizetype count_ = 0;
};

}  // namespace kvcap::gui
