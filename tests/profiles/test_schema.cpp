// The JSON Schemas under profiles/schema/ stay in sync with the loader:
//  1. key sets: every mapping the loader reads (model_keys, gpu_keys, deployment_keys, requirements_keys,
//     workload_keys) has exactly the schema's properties, and every object with properties in the schema is
//     a mapping the loader reads (both directions);
//  2. every shipped profile is valid under the schema (with the small draft-07 validator below, which
//     implements exactly the keywords the schemas use: type, properties, additionalProperties, required,
//     enum, const, minimum, maximum, exclusiveMinimum, minItems, minLength, items, pattern, anyOf, oneOf,
//     allOf, not, if/then/else, $ref to #/definitions; an unknown keyword fails the test);
//  3. types, ranges and required keys agree: each shipped profile is mutated key by key (key removed, value
//     replaced by a list, by a non-numeric string, by -1) and the loader and the schema must both accept or
//     both reject every mutant.
// What is not checked: semantic rules the schema cannot express (divisibility of heads by TP, references
// between files) — those are the loader's and `kvcap validate`'s alone.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "kvcap/profiles/deployment.hpp"
#include "kvcap/profiles/profiles.hpp"
#include "kvcap/profiles/requirements.hpp"

using namespace kvcap;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {
const fs::path kRoot = fs::path(KVCAP_SOURCE_DIR) / "profiles";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json schema_of(const std::string& kind) { return json::parse(slurp(kRoot / "schema" / (kind + ".schema.json"))); }

// YAML 1.2 core schema for plain scalars (what editors' YAML servers use); quoted scalars are strings.
json to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json j = json::object();
      for (const auto& kv : n) j[kv.first.Scalar()] = to_json(kv.second);
      return j;
    }
    case YAML::NodeType::Sequence: {
      json j = json::array();
      for (const auto& e : n) j.push_back(to_json(e));
      return j;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;
      static const std::regex integer(R"([-+]?[0-9]+)"), real(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
      if (s == "true" || s == "True" || s == "TRUE") return true;
      if (s == "false" || s == "False" || s == "FALSE") return false;
      if (s == "null" || s == "~" || s == "Null" || s == "NULL" || s.empty()) return nullptr;
      if (std::regex_match(s, integer)) return std::stoll(s);
      if (std::regex_match(s, real)) return std::stod(s);
      return s;
    }
    default: return nullptr;
  }
}

// ---- a draft-07 validator for the keywords the schemas use ----
struct Validator {
  json root;
  std::vector<std::string> errors;

  const json& deref(const json& s) const {
    if (s.is_object() && s.contains("$ref")) {
      const std::string ref = s["$ref"];
      REQUIRE(ref.rfind("#/definitions/", 0) == 0);
      return root["definitions"][ref.substr(14)];
    }
    return s;
  }
  static bool type_ok(const json& v, const std::string& t) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    if (t == "number") return v.is_number();
    if (t == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == std::floor(v.get<double>()));
    FAIL("unknown type " << t);
    return false;
  }
  bool valid(const json& v, const json& s) {
    Validator sub{root, {}};
    sub.check(v, s, "");
    return sub.errors.empty();
  }
  void check(const json& v, const json& schema, const std::string& at) {
    const json& s = deref(schema);
    static const std::set<std::string> known = {
        "$schema", "title", "description", "type", "properties", "additionalProperties", "required", "enum", "const",
        "minimum", "maximum", "exclusiveMinimum", "minItems", "minLength", "items", "pattern", "anyOf", "oneOf", "allOf",
        "not", "if", "then", "else", "definitions", "$ref"};
    for (auto it = s.begin(); it != s.end(); ++it) {
      INFO("schema keyword " << it.key() << " at " << at);
      REQUIRE(known.count(it.key()) == 1);
    }
    auto err = [&](const std::string& m) { errors.push_back(at + ": " + m); };
    if (s.contains("type") && !type_ok(v, s["type"])) return err("expected " + s["type"].get<std::string>() + ", got " + v.dump());
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end()) err("not in enum: " + v.dump());
    if (s.contains("const") && v != s["const"]) err("expected " + s["const"].dump());
    if (v.is_number()) {
      const double d = v.get<double>();
      if (s.contains("minimum") && d < s["minimum"].get<double>()) err("below minimum");
      if (s.contains("maximum") && d > s["maximum"].get<double>()) err("above maximum");
      if (s.contains("exclusiveMinimum") && !(d > s["exclusiveMinimum"].get<double>())) err("not above exclusiveMinimum");
    }
    if (v.is_string()) {
      if (s.contains("minLength") && v.get<std::string>().size() < s["minLength"].get<std::size_t>()) err("too short");
      if (s.contains("pattern") && !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
        err("does not match " + s["pattern"].get<std::string>());
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) err("too few items");
      if (s.contains("items"))
        for (std::size_t i = 0; i < v.size(); ++i) check(v[i], s["items"], at + "[" + std::to_string(i) + "]");
    }
    if (v.is_object()) {
      if (s.contains("required"))
        for (const auto& k : s["required"])
          if (!v.contains(k.get<std::string>())) err("missing required " + k.get<std::string>());
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (s.contains("properties") && s["properties"].contains(it.key())) check(it.value(), s["properties"][it.key()], at + "." + it.key());
        else if (s.contains("additionalProperties")) {
          const json& ap = s["additionalProperties"];
          if (ap.is_boolean()) {
            if (!ap.get<bool>()) err("unknown key " + it.key());
          } else {
            check(it.value(), ap, at + "." + it.key());
          }
        }
      }
    }
    if (s.contains("allOf"))
      for (const auto& sub : s["allOf"]) check(v, sub, at);
    if (s.contains("anyOf")) {
      bool any = false;
      for (const auto& sub : s["anyOf"]) any = any || valid(v, sub);
      if (!any) err("matches none of anyOf");
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const auto& sub : s["oneOf"]) n += valid(v, sub);
      if (n != 1) err("matches " + std::to_string(n) + " of oneOf");
    }
    if (s.contains("not") && valid(v, s["not"])) err("matches not");
    if (s.contains("if")) {
      if (valid(v, s["if"])) {
        if (s.contains("then")) check(v, s["then"], at);
      } else if (s.contains("else")) {
        check(v, s["else"], at);
      }
    }
  }
};

std::vector<std::string> schema_errors(const json& schema, const json& doc) {
  Validator v{schema, {}};
  v.check(doc, schema, "");
  return v.errors;
}

using KeyTable = std::map<std::string, std::vector<std::string>>;
struct Kind {
  std::string name;
  const KeyTable& keys;
  std::function<void(const std::string&)> load;  // throws ProfileError when the loader rejects the text
};
const std::vector<Kind>& kinds() {
  static const std::vector<Kind> k = {
      {"model", profiles::model_keys(), [](const std::string& t) { (void)profiles::parse_model(t, "x.yaml"); }},
      {"gpu", profiles::gpu_keys(), [](const std::string& t) { (void)profiles::parse_gpu(t, "x.yaml"); }},
      {"deployment", profiles::deployment_keys(), [](const std::string& t) { (void)profiles::parse_deployment(t, "x.yaml"); }},
      {"requirements", profiles::requirements_keys(), [](const std::string& t) { (void)profiles::parse_requirements(t, "x.yaml"); }},
      {"workload", profiles::workload_keys(), [](const std::string& t) { (void)profiles::parse_workload(t, "x.yaml"); }},
  };
  return k;
}

// The schema object for a key-table path: "" root, "a.b" nested properties, "x.*" additionalProperties,
// "x[]" array items; anyOf alternatives are searched for the object one.
const json* object_at(const Validator& v, const std::string& path) {
  const json* s = &v.deref(v.root);
  if (path.empty()) return s;
  std::stringstream ss(path);
  std::string part;
  auto as_object = [&](const json* n) -> const json* {
    n = &v.deref(*n);
    if (n->contains("properties")) return n;
    if (n->contains("anyOf"))
      for (const auto& alt : (*n)["anyOf"])
        if (v.deref(alt).contains("properties")) return &v.deref(alt);
    return n;
  };
  while (std::getline(ss, part, '.')) {
    if (part == "*") {
      s = as_object(&(*s)["additionalProperties"]);
      continue;
    }
    const bool items = part.size() > 2 && part.ends_with("[]");
    if (items) part.resize(part.size() - 2);
    if (!s->contains("properties") || !(*s)["properties"].contains(part)) return nullptr;
    s = &(*s)["properties"][part];
    s = items ? as_object(&v.deref(*s)["items"]) : as_object(s);
  }
  return s;
}

// Every path of an object-with-properties in the schema, in key-table spelling.
void object_paths(const Validator& v, const json& node, const std::string& path, std::set<std::string>& out, int depth = 0) {
  REQUIRE(depth < 10);
  const json& s = v.deref(node);
  if (s.contains("anyOf"))
    for (const auto& alt : s["anyOf"]) object_paths(v, alt, path, out, depth + 1);
  if (s.contains("items")) object_paths(v, s["items"], path + "[]", out, depth + 1);
  if (s.contains("additionalProperties") && s["additionalProperties"].is_object())
    object_paths(v, s["additionalProperties"], path.empty() ? "*" : path + ".*", out, depth + 1);
  if (!s.contains("properties")) return;
  out.insert(path);
  for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it)
    object_paths(v, it.value(), path.empty() ? it.key() : path + "." + it.key(), out, depth + 1);
}

// The schema node that governs the value at `ptr` (nullptr when none).
const json* schema_at(const Validator& v, const json::json_pointer& ptr) {
  const json* s = &v.deref(v.root);
  std::vector<std::string> parts;
  for (json::json_pointer p = ptr; !p.empty(); p = p.parent_pointer()) parts.insert(parts.begin(), p.back());
  for (const auto& part : parts) {
    s = &v.deref(*s);
    if (s->contains("anyOf") && !s->contains("properties") && !s->contains("items"))
      for (const auto& alt : (*s)["anyOf"])
        if (v.deref(alt).contains("properties") || v.deref(alt).contains("items")) s = &v.deref(alt);
    if (s->contains("properties") && (*s)["properties"].contains(part)) s = &(*s)["properties"][part];
    else if (s->contains("items")) s = &(*s)["items"];
    else if (s->contains("additionalProperties") && (*s)["additionalProperties"].is_object()) s = &(*s)["additionalProperties"];
    else return nullptr;
  }
  return &v.deref(*s);
}

std::vector<fs::path> shipped(const std::string& kind) {
  std::vector<fs::path> r;
  for (const auto& e : fs::recursive_directory_iterator(kRoot)) {
    if (e.path().extension() != ".yaml") continue;
    const YAML::Node n = YAML::LoadFile(e.path().string());
    if (n.IsMap() && n["kind"] && n["kind"].Scalar() == kind) r.push_back(e.path());
  }
  std::sort(r.begin(), r.end());
  return r;
}

bool loader_accepts(const Kind& k, const std::string& text, std::string* why = nullptr) {
  try {
    k.load(text);
    return true;
  } catch (const profiles::ProfileError& e) {
    if (why) *why = e.what();
    return false;
  }
}
}  // namespace

TEST_CASE("schema files are draft-07 and name the loader's kind", "[profiles][schema]") {
  for (const auto& k : kinds()) {
    INFO(k.name);
    const json s = schema_of(k.name);
    CHECK(s["$schema"] == "http://json-schema.org/draft-07/schema#");  // what the VS Code YAML extension supports fully
    CHECK(s["properties"]["kind"]["const"] == k.name);
    CHECK(s["additionalProperties"] == false);
  }
}

TEST_CASE("schema property names equal the loader's key tables, both directions", "[profiles][schema]") {
  for (const auto& k : kinds()) {
    const Validator v{schema_of(k.name), {}};
    std::set<std::string> schema_objects;
    object_paths(v, v.root, "", schema_objects);
    for (const auto& [path, keys] : k.keys) {
      INFO(k.name << " mapping '" << path << "'");
      const json* obj = object_at(v, path);
      REQUIRE(obj != nullptr);
      REQUIRE(obj->contains("properties"));
      std::set<std::string> in_schema, in_loader(keys.begin(), keys.end());
      for (auto it = (*obj)["properties"].begin(); it != (*obj)["properties"].end(); ++it) in_schema.insert(it.key());
      CHECK(in_schema == in_loader);
      CHECK((*obj)["additionalProperties"] == false);  // unknown keys are errors in the loader too
      CHECK(schema_objects.count(path) == 1);
    }
    for (const auto& p : schema_objects) {
      INFO(k.name << ": schema object '" << p << "' has no key table in the loader");
      CHECK(k.keys.count(p) == 1);
    }
  }
}

TEST_CASE("dtype enums in the schemas are exactly what the loader accepts", "[profiles][schema]") {
  const json dep = schema_of("deployment");
  for (const auto& [key, accept] : std::vector<std::pair<std::string, bool (*)(const DTypeInfo&)>>{
           {"dtype", [](const DTypeInfo& i) { return i.activation_ok; }},
           {"quantization", [](const DTypeInfo& i) { return i.weights_ok; }},
           {"kv_cache_dtype", [](const DTypeInfo& i) { return i.kv_ok; }}}) {
    std::set<std::string> names;
    for (const auto& e : dep["properties"][key]["enum"]) {
      const std::string n = e;
      INFO(key << ": " << n);
      auto d = parse_dtype(n);
      REQUIRE(d);
      CHECK(accept(info(*d)));
      names.insert(std::string(name(*d)));
    }
    for (const auto& i : dtype_table())  // every canonical accepted name is offered
      if (accept(i)) CHECK(names.count(std::string(i.name)) == 1);
  }
  std::set<std::string> metrics;
  const json req = schema_of("requirements");
  for (const auto& m : req["definitions"]["promise"]["properties"]["metric"]["enum"]) metrics.insert(m);
  CHECK(metrics == std::set<std::string>(kvcap::metric_names().begin(), kvcap::metric_names().end()));
}

TEST_CASE("every shipped profile is valid under its schema and under the loader", "[profiles][schema]") {
  int n = 0;
  for (const auto& k : kinds()) {
    const json schema = schema_of(k.name);
    for (const auto& f : shipped(k.name)) {
      INFO(f.string());
      const std::string text = slurp(f);
      CHECK(schema_errors(schema, to_json(YAML::Load(text))).empty());
      std::string why;
      CHECK(loader_accepts(k, text, &why));
      INFO(why);
      // The editor hint the README documents (the workload example belongs to the simulator's issue).
      if (k.name != "workload") CHECK(text.rfind("# yaml-language-server: $schema=../schema/" + k.name + ".schema.json\n", 0) == 0);
      ++n;
    }
  }
  CHECK(n >= 39);  // 25 models, 11 GPUs, a deployment, requirements, a workload
}

TEST_CASE("loader and schema agree on every single-key mutation of the shipped profiles", "[profiles][schema]") {
  std::size_t mutants = 0;
  std::vector<std::string> disagreements;
  for (const auto& k : kinds()) {
    const json schema = schema_of(k.name);
    for (const auto& f : shipped(k.name)) {
      const json base = to_json(YAML::Load(slurp(f)));
      // Every key path of a mapping value (nested mappings and list items included).
      std::vector<json::json_pointer> leaves;
      std::function<void(const json&, const json::json_pointer&)> walk = [&](const json& j, const json::json_pointer& p) {
        if (j.is_object())
          for (auto it = j.begin(); it != j.end(); ++it) leaves.push_back(p / it.key()), walk(it.value(), p / it.key());
        else if (j.is_array())
          for (std::size_t i = 0; i < j.size(); ++i) walk(j[i], p / i);
      };
      walk(base, json::json_pointer());
      for (const auto& ptr : leaves) {
        std::vector<std::pair<std::string, json>> muts;
        json removed = base;
        removed[ptr.parent_pointer()].erase(ptr.back());
        muts.emplace_back("removed", removed);
        // Known, intended leniency: where the schema wants a plain string (name, source, ...) the loader takes
        // any scalar (YAML `name: 1` is the name "1"), so a number there is not a disagreement worth testing.
        const Validator sv{schema, {}};
        const json* at = schema_at(sv, ptr);
        bool plain_string = at && at->contains("type") && (*at)["type"] == "string";
        if (at && at->contains("anyOf"))
          for (const auto& alt : (*at)["anyOf"])
            plain_string = plain_string || (alt.contains("type") && alt["type"] == "string" && !alt.contains("pattern"));
        for (const json& value : {json::array({json::array({1})}), json("x-not-a-number"), json(-1)}) {
          if (plain_string && value.is_number()) continue;
          json m = base;
          m[ptr] = value;
          muts.emplace_back("set to " + value.dump(), m);
        }
        for (const auto& [what, doc] : muts) {
          ++mutants;
          const bool by_schema = schema_errors(schema, doc).empty();
          std::string why;
          const bool by_loader = loader_accepts(k, doc.dump(), &why);  // JSON is YAML
          if (by_schema != by_loader)
            disagreements.push_back(f.filename().string() + " " + ptr.to_string() + " " + what + ": schema " +
                                    (by_schema ? "accepts" : "rejects") + ", loader " + (by_loader ? "accepts" : "rejects: " + why));
        }
      }
    }
  }
  INFO(mutants << " mutants");
  for (const auto& d : disagreements) UNSCOPED_INFO(d);
  CHECK(disagreements.empty());
  CHECK(mutants > 1000);
}
