// Scenario YAML <-> plain Python values (dict, list, str, int, float, bool, None), so a
// scenario can be given as a dict and edited field by field, while every value is still
// read by the scenario readers (fleet/scenario.h) from YAML text, with their errors.
//
// The YAML reader tells a plain scalar (`8`, `true`, `10m`) from a quoted one (`"8"`): a
// quoted scalar is always a string, never a number or a boolean. The mapping keeps that:
//   YAML -> Python: a quoted or block scalar -> str; a plain scalar -> None for the null
//     spellings, bool for true/false, int for a decimal integer written canonically
//     (-12, 0, 7 — not 007 or +7), float for another finite number (0.5, 1e3), else str.
//   Python -> YAML: str -> a double-quoted scalar (so "8" stays a string, and readers of
//     numbers reject it, as they reject `"8"` in a file); int and bool -> plain; float ->
//     its shortest round-trip text (non-finite values as .inf / .nan, which readers
//     reject); None -> null; dict -> a block mapping (keys must be str); list or tuple ->
//     a block sequence; anything else is a TypeError naming the field path.
// Every reader that takes text (names, durations, sizes, rates) accepts quoted scalars,
// so a file read to Python values and written back reads the same. Block style puts each
// value on its own line, so the line and column of an error point into YAML that
// `Scenario.yaml` shows.
// Thread model: call with the GIL held.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

namespace fleetplan::python {

// REQUIRES: `text` is one YAML document (the scenario reader accepted it).
pybind11::object YamlToTree(const std::string& text);
// Raises TypeError for values that have no YAML form, naming their path.
std::string TreeToYaml(const pybind11::handle& tree);

}  // namespace fleetplan::python
