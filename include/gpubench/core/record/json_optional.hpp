#pragma once
// std::optional <-> JSON null, so optional record fields serialise as null ("not measured") rather than 0.

#include <optional>

#include <nlohmann/json.hpp>

namespace nlohmann {
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& o) {
    if (o) {
      j = *o;
    } else {
      j = nullptr;
    }
  }
  static void from_json(const json& j, std::optional<T>& o) {
    if (j.is_null()) {
      o.reset();
    } else {
      o = j.get<T>();
    }
  }
};
}  // namespace nlohmann
