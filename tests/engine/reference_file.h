#pragma once
// Reading the reference exports made by tests/reference/*.py (torch.save of a dict), for the parity tests.

#include <torch/csrc/jit/serialization/pickle.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpubench::engine {

/// The dict saved in GPUBENCH_REFERENCE_DIR/`file` by the matching *_export test.
inline c10::Dict<c10::IValue, c10::IValue> load_reference(const std::string& file) {
  const std::string path = std::string(GPUBENCH_REFERENCE_DIR) + "/" + file;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing " + path + " (made by the matching *_export test)");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  return torch::jit::pickle_load(bytes).toGenericDict();
}

/// A list of strings from the reference.
inline std::vector<std::string> reference_names(const c10::Dict<c10::IValue, c10::IValue>& ref, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& v : ref.at(key).toListRef()) out.push_back(v.toStringRef());
  return out;
}

/// A list of shapes (lists of ints) from the reference.
inline std::vector<std::vector<int64_t>> reference_shapes(const c10::Dict<c10::IValue, c10::IValue>& ref,
                                                          const std::string& key) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& v : ref.at(key).toListRef()) {
    std::vector<int64_t> shape;
    for (const auto& d : v.toListRef()) shape.push_back(d.toInt());
    out.push_back(shape);
  }
  return out;
}

}  // namespace gpubench::engine
