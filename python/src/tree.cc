#include "tree.h"

#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "fleetplan/core/limits.h"

namespace py = pybind11;

namespace fleetplan::python {
namespace {

bool IsCanonicalInteger(std::string_view t) {
  if (!t.empty() && t.front() == '-') t.remove_prefix(1);
  if (t.empty() || (t.size() > 1 && t.front() == '0')) return false;
  for (const char c : t) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

bool IsFiniteNumber(std::string_view t) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return !t.empty() && ec == std::errc() && ptr == t.data() + t.size() && std::isfinite(v);
}

py::object PlainScalar(const std::string& t) {
  if (t == "true") return py::bool_(true);
  if (t == "false") return py::bool_(false);
  if (IsCanonicalInteger(t)) return py::reinterpret_steal<py::object>(PyLong_FromString(t.c_str(), nullptr, 10));
  if (IsFiniteNumber(t)) return py::float_(std::stod(t));
  return py::str(t);
}

py::object ToTree(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      py::dict out;
      for (const auto& kv : node) out[py::str(kv.first.Scalar())] = ToTree(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      py::list out;
      for (const auto& item : node) out.append(ToTree(item));
      return out;
    }
    case YAML::NodeType::Scalar:
      // yaml-cpp tags a quoted or block scalar "!" and a plain one "?".
      return node.Tag() == "!" ? py::str(node.Scalar()) : PlainScalar(node.Scalar());
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: break;
  }
  return py::none();
}

std::string Child(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string FloatText(const py::handle& v) {
  const double d = v.cast<double>();
  if (std::isnan(d)) return ".nan";
  if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  return py::repr(v).cast<std::string>();  // shortest round-trip form
}

void Emit(YAML::Emitter& out, const py::handle& v, const std::string& path, int depth) {
  if (depth > kMaxNestingDepth) {
    // A dict that contains itself would recurse for ever; any tree this deep is no scenario.
    throw py::value_error(fmt::format("{}...: a scenario is nested more than {} levels deep (does a dict or list "
                                      "contain itself?)",
                                      path.substr(0, 120), kMaxNestingDepth));
  }
  if (v.is_none()) {
    out << YAML::Null;
  } else if (PyBool_Check(v.ptr())) {
    out << (v.cast<bool>() ? "true" : "false");
  } else if (PyUnicode_Check(v.ptr())) {
    out << YAML::DoubleQuoted << v.cast<std::string>();
  } else if (PyFloat_Check(v.ptr())) {
    out << FloatText(v);
  } else if (PyIndex_Check(v.ptr())) {  // int, and integer types such as numpy.int64
    out << py::str(py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr()))).cast<std::string>();
  } else if (PyDict_Check(v.ptr())) {
    out << YAML::BeginMap;
    for (const auto& [key, value] : v.cast<py::dict>()) {
      if (!PyUnicode_Check(key.ptr())) {
        throw py::type_error(fmt::format("{}: keys must be str, got {} ({})", path.empty() ? "scenario" : path,
                                         py::repr(key).cast<std::string>(),
                                         py::str(key.get_type().attr("__name__")).cast<std::string>()));
      }
      const std::string k = key.cast<std::string>();
      out << YAML::Key << k << YAML::Value;
      Emit(out, value, Child(path, k), depth + 1);
    }
    out << YAML::EndMap;
  } else if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    out << YAML::BeginSeq;
    size_t i = 0;
    for (const auto& item : v) Emit(out, item, fmt::format("{}[{}]", path, i++), depth + 1);
    out << YAML::EndSeq;
  } else {
    throw py::type_error(fmt::format("{}: no scenario value is a {} (use dict, list, str, int, float, bool or None)",
                                     path.empty() ? "scenario" : path,
                                     py::str(v.get_type().attr("__name__")).cast<std::string>()));
  }
}

}  // namespace

py::object YamlToTree(const std::string& text) { return ToTree(YAML::Load(text)); }

std::string TreeToYaml(const py::handle& tree) {
  if (!PyDict_Check(tree.ptr())) {
    throw py::type_error(fmt::format("a scenario is a dict, got {}",
                                     py::str(tree.get_type().attr("__name__")).cast<std::string>()));
  }
  YAML::Emitter out;
  Emit(out, tree, "", 0);
  std::string text = out.c_str();
  text += "\n";
  return text;
}

}  // namespace fleetplan::python
