// kvcap import-hf: a Hugging Face config.json -> the equivalent kvcap YAML model profile.
#include <fstream>
#include <iostream>

#include "common.hpp"
#include "kvcap/escape.hpp"
#include "kvcap/planner/params.hpp"
#include "kvcap/planner/text.hpp"
#include "kvcap/profiles/profiles.hpp"

namespace kvcap::cli {
namespace {
/// The help's description: the importer's own list of model types (profiles::supported_hf_model_types), wrapped.
std::string supported_types_text() {
  std::string text =
      "Reads a Hugging Face config.json and writes the equivalent kvcap model profile (YAML). A config is\n"
      "recognised by its model_type, else by its architectures entry as vLLM does (an unknown model_type\n"
      "with LlamaForCausalLM reads as llama); multimodal configs are read through text_config. Supported\n"
      "model_type values:";
  std::size_t column = text.size() - text.rfind('\n') - 1;
  const auto types = profiles::supported_hf_model_types();
  for (std::size_t i = 0; i < types.size(); ++i) {
    const std::string word = types[i] + (i + 1 < types.size() ? "," : ".");
    if (column + 1 + word.size() > 100) {
      text += "\n";
      column = 0;
    } else {
      text += " ";
      ++column;
    }
    text += word;
    column += word.size();
  }
  return text;
}
}  // namespace

int cmd_import_hf(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  // clang-format off
  desc.add_options()
    ("config", po::value<std::string>(), "path to config.json")
    ("name", po::value<std::string>(), "profile name (default: from the file name)")
    ("out,o", po::value<std::string>(), "write the profile here (default: standard output)")
    ("help,h", "show this help");
  // clang-format on
  po::positional_options_description pos;
  pos.add("config", 1);
  const auto vm = parse(args, desc, &pos);
  if (vm.count("help")) {
    print_help(
        "kvcap import-hf CONFIG.json [--name NAME] [--out FILE.yaml]", supported_types_text(), desc,
        "  kvcap import-hf Llama-3.1-8B/config.json --name llama-3.1-8b --out profiles/models/llama-3.1-8b.yaml");
    return 0;
  }
  if (!vm.count("config")) throw UsageError("give the path to a config.json");
  const std::string path = vm["config"].as<std::string>();
  ModelSpec m = profiles::load_model_file(path);
  if (vm.count("name")) {
    m.name = vm["name"].as<std::string>();
    if (m.name.find_first_not_of(" \t") == std::string::npos)
      throw UsageError("--name: must not be empty (it labels the profile in every report)");
  } else {
    std::string stem = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
    if (stem.size() > 5 && stem.ends_with(".json")) stem.resize(stem.size() - 5);
    stem = lowercase(stem);
    m.name = stem == "config" ? m.name : stem;
  }
  const auto pc = param_counts(m);
  const std::string header = "Imported by kvcap import-hf from " + path + "\nDerived: " + billions(static_cast<double>(pc.total)) +
                             " parameters, " + billions(static_cast<double>(pc.active)) + " active per token.";
  const std::string text = profiles::to_yaml(m, header);
  if (vm.count("out")) {
    const std::string out = vm["out"].as<std::string>();
    std::ofstream f(out);
    if (!f) throw std::runtime_error("cannot write " + out);
    f << text;
    std::cerr << "wrote " << escape::terminal_text(out) << "\n";
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace kvcap::cli
