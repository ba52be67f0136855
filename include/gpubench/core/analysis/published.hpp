#pragma once
// Published reference figures (configs/published/*.yaml, compiled in): what a review or a vendor reported, with
// its recipe and the sentence it comes from, so a reproduction can be set beside it and every recipe difference named.

#include <optional>
#include <string>
#include <vector>

#include "gpubench/core/record/run_record.hpp"

namespace gpubench {

struct PublishedReference {
  std::string id;                         ///< e.g. "seed000-rtx4090"
  std::string file;                       ///< configs/published/<file>
  std::string source;                     ///< the publication
  std::string device, model, precision;   ///< precision: fp32 | amp | int8 | ... as the publication means it
  std::string mode = "train";             ///< train | inference: what the published figure timed
  std::optional<int64_t> batch_size, dataset_size;
  std::string data_pipeline, framework, host, optimizer;
  std::optional<double> epoch_seconds;    ///< one epoch of dataset_size samples (s)
  std::optional<double> samples_per_s;    ///< or a throughput
  std::optional<double> steps_per_s;      ///< or iterations per second ("it/s")
  std::optional<double> power_w, temperature_c, price_cny;
  std::optional<double> price_performance;  ///< as published, in price_performance_unit
  std::string price_performance_unit;
  std::optional<double> scaling_2gpu;     ///< speed-up on two devices, as published
  std::string quote, notes;
  /// The runnable scenario that does the publication's recipe (a path in the repository,
  /// configs/published/recipes/...), extra flags for this entry, a command to run first (making the data set), and
  /// why the config is only the closest gpubench has (empty when it is the recipe itself).
  std::string config, config_flags, prepare, config_note;

  /// "gpubench run --config configs/published/recipes/X.yaml [flags]", or empty without a config.
  std::string recipe_command() const;

  /// Samples per second the figure implies (from epoch time and dataset size, a throughput, or it/s x batch).
  std::optional<double> implied_samples_per_s() const;
};

/// Parses one or more YAML documents (each with `source`, `recipe` and `entries`); recipe values fill what an entry
/// leaves out. Throws std::runtime_error naming the document and key.
std::vector<PublishedReference> parse_published(const std::string& yaml_text);
/// The compiled-in references.
const std::vector<PublishedReference>& published_references();
/// Looks up "seed000-rtx4090" or "published/seed000-rtx4090"; nullptr if unknown.
const PublishedReference* find_published(const std::string& id);

/// A reproduction set beside a published figure.
struct PublishedComparison {
  const PublishedReference* reference = nullptr;
  std::optional<double> published_samples_per_s, measured_samples_per_s;
  std::optional<double> published_steps_per_s, measured_steps_per_s;  ///< it/s, where the publication quotes it
  std::optional<double> percent_of_published;        ///< measured / published x 100, in percent_basis; only where
                                                     ///< model and mode are the publication's
  std::string no_percent_reason;                     ///< why there is no percentage though both figures exist
  std::string percent_basis = "samples/s";           ///< samples/s, or it/s for a sampler's figure (mode inference)
  std::optional<double> measured_epoch_seconds;      ///< for the publication's dataset size, at the measured rate
  std::vector<std::string> differences;              ///< every way the recipes differ ("batch size: 128 vs 256")
  /// The differences that change the work timed (mode, model, precision, batch, data pipeline, GPU count), a subset
  /// of `differences`. Device, framework, dataset size (the epoch is projected) and execution are not among them.
  std::vector<std::string> work_differences;
  bool same_work() const { return work_differences.empty(); }
  std::vector<std::string> same;                     ///< parts of the recipe both sides share ("data pipeline: ...")
  std::optional<double> published_price_performance; ///< as quoted
  std::optional<double> recomputed_price_performance; ///< from the publication's own epoch time and price
  std::optional<double> measured_price_performance;   ///< ours, if the device table has a CNY price for our device
  std::optional<double> published_joules_per_sample;  ///< power x epoch time / samples (an upper bound if power is)
  std::optional<double> measured_joules_per_sample;   ///< from our telemetry
  std::vector<std::string> remarks;                   ///< consistency problems found in the publication itself
};

PublishedComparison compare_with_published(const PublishedReference& ref, const RunRecord& run);

}  // namespace gpubench
