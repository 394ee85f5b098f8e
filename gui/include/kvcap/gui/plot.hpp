#pragma once
// Rendering the dashboard's main chart (maximum concurrency against context length, one curve per model)
// to a file, for `kvcap plot`. No Qt type appears here: the CLI includes this header without Qt; the
// implementation (gui/src/plot.cpp) builds the same ConcurrencyChart the dashboard shows.
#include <string>
#include <vector>

#include "kvcap/planner/deployment.hpp"
#include "kvcap/planner/sizing.hpp"

namespace kvcap::gui {

/// LLaMA, Mistral (sliding window) and DeepSeek (MLA): the dashboard's default selection.
inline std::vector<std::string> default_plot_models() {
  return {"llama-3.1-8b", "mistral-7b-v0.1", "deepseek-v2-lite"};
}

/// What to draw: several models on one deployment (GPU type and count, parallelism, dtypes, ...).
struct PlotRequest {
  std::vector<std::string> models = default_plot_models();  ///< built-in names, YAML profiles or config.json paths
  std::string gpu = "h100-sxm";                             ///< built-in name or YAML profile
  Deployment deployment;                                    ///< applied to every model
  std::string title;                                        ///< empty: a title naming the deployment
};

/// Renders the main chart to `out_path` (.png or .svg, by extension) at width_px x height_px.
/// Works without a display: creates an offscreen QApplication when none exists.
/// Throws profiles::ProfileError (bad or unknown profile, located), SpecError (impossible deployment,
/// naming the field), std::invalid_argument (bad extension or size) or std::runtime_error (write failed).
void render_main_chart(const PlotRequest& request, const std::string& out_path, int width_px, int height_px);

/// Renders `kvcap size`'s purchase chart (tokens/s per GPU against tokens/s per user for every deployment meeting the
/// targets, one colour per GPU type, the Pareto frontier drawn through its points) to `out_path` (.png or .svg).
/// `title`: empty for one naming the model, the targets and the load. Throws as render_main_chart.
void render_pareto_chart(const SizingRequest& q, const SizingResult& r, const std::string& out_path, int width_px,
                         int height_px, const std::string& title = {});

}  // namespace kvcap::gui
