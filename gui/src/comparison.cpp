#include "comparison.hpp"

#include <QHeaderView>
#include <algorithm>
#include <map>

#include "dashboard_model.hpp"
#include "style.hpp"

namespace kvcap::gui {

namespace {
// `kvcap plan`'s flags for a deployment (settings.hpp deployment_flags), as flag -> value ("" for a switch).
std::map<QString, QString> flag_map(const Deployment& d) {
  std::map<QString, QString> m;
  const auto flags = deployment_flags(d);
  for (std::size_t i = 0; i < flags.size(); ++i) {
    const QString flag = QString::fromStdString(flags[i]);
    const bool has_value = i + 1 < flags.size() && flags[i + 1].rfind("--", 0) != 0;
    m[flag] = has_value ? QString::fromStdString(flags[++i]) : QStringLiteral("on");
  }
  return m;
}

QString change_text(double before, double now) {
  if (!(before > 0)) return {};
  const double pct = (now / before - 1) * 100;
  return QStringLiteral("%1%2%").arg(pct >= 0 ? QStringLiteral("+") : QString()).arg(pct, 0, 'f', 1);
}

void add_number(std::vector<ComparisonRow>& rows, const QString& what, double before, double now, int decimals) {
  rows.push_back(
      {what, QString::number(before, 'f', decimals), QString::number(now, 'f', decimals), change_text(before, now)});
  if (decimals == 0) rows.back().baseline = grouped(std::llround(before)), rows.back().now = grouped(std::llround(now));
}

void add_model_rows(std::vector<ComparisonRow>& rows, const ModelResult& b, const ModelResult& r) {
  const QString who = QString::fromStdString(r.label) + QStringLiteral(": ");
  if (!b.plan || !r.plan) {
    rows.push_back({who + QStringLiteral("starts"),
                    b.plan && b.starts() ? QStringLiteral("yes") : QStringLiteral("no"),
                    r.plan && r.starts() ? QStringLiteral("yes") : QStringLiteral("no"),
                    {}});
    return;
  }
  add_number(rows, who + QStringLiteral("KV cache tokens, all replicas"),
             double(b.plan->kv_capacity_tokens) * double(b.plan->dep.replicas),
             double(r.plan->kv_capacity_tokens) * double(r.plan->dep.replicas), 0);
  add_number(rows, who + QStringLiteral("concurrency at max_model_len, as vLLM logs it"),
             b.plan->cluster_max_concurrency, r.plan->cluster_max_concurrency, 2);
  if (!b.decode.empty() && !r.decode.empty())
    add_number(rows, who + QStringLiteral("decode tokens/s per replica, largest batch"), b.decode.back().tokens_per_s,
               r.decode.back().tokens_per_s, 0);
}
}  // namespace

std::vector<ComparisonRow> comparison_rows(const DashboardModel& model) {
  std::vector<ComparisonRow> rows;
  const auto& base = model.baseline();
  if (!base) return rows;
  if (base->settings.gpu != model.settings().gpu)
    rows.push_back({QStringLiteral("GPU"),
                    QString::fromStdString(base->settings.gpu),
                    QString::fromStdString(model.settings().gpu),
                    {}});
  const auto before = flag_map(base->settings.deployment), now = flag_map(model.settings().deployment);
  std::map<QString, bool> flags;
  for (const auto& [f, v] : before) flags[f] = true;
  for (const auto& [f, v] : now) flags[f] = true;
  for (const auto& [f, unused] : flags) {
    const QString a = before.count(f) ? before.at(f) : QStringLiteral("default");
    const QString b = now.count(f) ? now.at(f) : QStringLiteral("default");
    if (a != b) rows.push_back({f, a, b, {}});
  }
  for (const auto& r : model.results())
    if (const ModelResult* b = model.baseline_result(r.key)) add_model_rows(rows, *b, r);
  return rows;
}

ComparisonTable::ComparisonTable(QWidget* parent) : QTableWidget(parent) {
  setObjectName(QStringLiteral("comparison"));
  setColumnCount(4);
  setHorizontalHeaderLabels({QStringLiteral("against the baseline"), QStringLiteral("baseline"), QStringLiteral("now"),
                             QStringLiteral("change")});
  verticalHeader()->setVisible(false);
  horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  for (int c = 1; c < 4; ++c) horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setSelectionMode(QAbstractItemView::NoSelection);
  setFont(axis_label_font());
  setVisible(false);
}

void ComparisonTable::refresh(const DashboardModel& model) {
  const auto rows = comparison_rows(model);
  setRowCount(int(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ComparisonRow& r = rows[i];
    const QString cells[] = {r.what, r.baseline, r.now, r.change};
    for (int c = 0; c < 4; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (c == 3 && r.change.startsWith(QLatin1Char('-'))) item->setForeground(QColor(0xB00020));
      if (c == 3 && r.change.startsWith(QLatin1Char('+')) && r.change != QStringLiteral("+0.0%"))
        item->setForeground(QColor(0x007A3D));
      setItem(int(i), c, item);
    }
  }
  resizeRowsToContents();
  const int rows_shown = std::min<int>(int(rows.size()), 6);
  setFixedHeight(horizontalHeader()->height() + rows_shown * (rows.empty() ? 0 : rowHeight(0)) + 4);
  setVisible(model.baseline().has_value());
}

}  // namespace kvcap::gui
