#include "gpubench/runner/resolve_here.hpp"

#include <algorithm>

#include "gpubench/core/build_info.hpp"
#include "gpubench/data/image_folder.hpp"
#include "gpubench/data/loader.hpp"
#include "gpubench/engine/engine.hpp"

namespace gpubench {

namespace {

/// `data: folder`: an ImageFolder with readable JPEGs, at most the model's classes, and at least one batch (of
/// batch_size x grad_accumulation) per rank in an epoch.
void check_folder(const Scenario& s, int world) {
  const data::ImageFolder folder = data::scan_image_folder(s.data_path);
  data::probe_folder(folder);
  const int64_t classes = s.option<int64_t>("num_classes").value_or(INT64_MAX);
  data::images_per_epoch(folder, s.is_set("dataset_size") ? std::optional<int64_t>(s.dataset_size) : std::nullopt,
                         s.batch_size.value_or(1) * s.grad_accumulation, world, classes, s.model);
}

}  // namespace

void load_backend_library_of(const Scenario& s) {
  if (s.backend_library.empty()) return;
  try {
    load_backend_library(s.backend_library);
  } catch (const BackendLibraryError& e) {
    const auto it = s.origins.find("backend_library");
    throw ScenarioError(it != s.origins.end() ? it->second : Origin{"scenario", 0, 0}, "backend_library", e.what());
  }
}

ResolvedScenario resolve_here(const Scenario& requested, const RankInfo& rank, int world_size, int repeats,
                              bool check_data, ResolveFor purpose) {
  load_backend_library_of(requested);
  ResolveOptions options;
  options.refuse_memory = purpose == ResolveFor::kThisRun;
  options.refuse_unsupported = purpose != ResolveFor::kCheckOnly;
  options.cuda_module = build_info().cuda_module;
  options.world_size = std::max(1, world_size);
  options.repeats = std::max(1, repeats);
  if (check_data) options.check_data = check_folder;
  return resolve_scenario(requested, available_models(), probe_device(requested.device, rank), options);
}

ResolvedScenario resolve_here(const ScenarioInputs& inputs, const RankInfo& rank, int world_size, int repeats,
                              bool check_data, ResolveFor purpose) {
  return resolve_here(load_scenario(inputs, model_options()), rank, world_size, repeats, check_data, purpose);
}

}  // namespace gpubench
