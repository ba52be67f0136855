#pragma once
// Scenario identity: what two runs must share to have measured the same work. One definition for everything that
// groups or pairs runs: compare, the results store's baselines and histories, change detection, the report's groups
// and export's identity columns. Two records with different identities are "not the same scenario", said with the
// keys that differ.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/core/record/run_record.hpp"
#include "gpubench/core/scenario/model_catalog.hpp"

namespace gpubench {

/// The identity of `r`: its resolved scenario without what does not change the work (output paths, the run's name,
/// telemetry and profiling settings, the device's index), plus what the run resolved to and where it ran:
///   precision_resolved   the precision as it ran (amp -> fp16 on GPUs)
///   world_size           ranks in the job (1 for a single process)
///   execution            eager | cuda_graph, as it ran (a requested graph that fell back ran eager)
///   data_files, data_bytes, data_listing   `data: folder`: what the data is (images, their bytes, the digest of
///                        the listing), wherever it lies; a record without the digest keeps data_path instead
///   device_type          cpu | cuda | rocm | mps
///   device_model         the device's name ("NVIDIA H200")
/// The scenario keys already hold the model and its own keys, mode, the requested precision, batch, kernel path
/// (kernels), data source and pipeline (data, decode as asked, data_only), optimizer and the rest of the recipe.
/// Not in it: where the data lies (data_path), its threads (data_workers) and what `decode: auto` chose: compare
/// lists those as conditions that differ (not like-for-like).
nlohmann::json scenario_identity(const RunRecord& r);

/// The identity keys whose values differ between `a` and `b`, dotted ("optimizer.lr"), in the order they appear.
std::vector<std::string> identity_differences(const nlohmann::json& a, const nlohmann::json& b);

/// The value at a dotted key of `identity` as text ("0.1", "fused", "none" when absent or null).
std::string identity_value(const nlohmann::json& identity, const std::string& key);

/// `key: a -> b` for each differing key, for messages ("world_size: 1 -> 2").
std::vector<std::string> describe_differences(const nlohmann::json& a, const nlohmann::json& b);

/// A short label for people: "resnet50 bs256 fp16 train eager, 2 GPUs, NVIDIA H200", from an identity's keys (model
/// and its keys set away from their defaults, "gpt2 (layers=2)", batch, precision as run and asked, mode, execution,
/// kernels, data pipeline, world size, device model, a memory cap). Different identities can share it: where more
/// than one scenario is shown, use scenario_labels.
std::string identity_label(const nlohmann::json& identity);
std::string identity_label(const RunRecord& r);

/// `labels[i]` made distinct: where different identities share a label, each gets the keys in which those identities
/// differ appended ("bert-base bs32 bf16 train eager, NVIDIA H200 [dataset_size=4096]"), so no two rows or bars of one
/// table or chart read the same. Equal identities keep equal labels.
std::vector<std::string> distinct_labels(const std::vector<nlohmann::json>& identities,
                                         const std::vector<std::string>& labels);

/// The one label function of every view that names scenarios side by side (compare, history, --detect, export,
/// JUnit, Markdown, the report): identity_label of each, made distinct among `identities` (distinct_labels).
std::vector<std::string> scenario_labels(const std::vector<nlohmann::json>& identities);

/// Every top-level key an identity can have, besides the model's own keys (compare --help's pairing keys).
std::vector<std::string> identity_keys();

/// The models' own keys and defaults that labels name when a run changed them. The binary hands the engine's catalog
/// over once at start (cli/main.cpp: core does not link the engine's models); until then labels name no model key.
void use_model_catalog_for_labels(const ModelCatalog& catalog);

/// A stable 16-hex-digit id of an identity (FNV-1a 64 of its canonical JSON): equal identities, equal ids, on any
/// machine. Export's `scenario_id` column, so a notebook groups runs by one column.
std::string identity_id(const nlohmann::json& identity);

/// FNV-1a 64 of `bytes` as 16 hex digits (identity_id's digest; mode: generate's digest of the generated tokens).
std::string fnv1a_hex(std::string_view bytes);

/// `identity` without `keys` (compare --ignore device_model: compare chips on purpose). Unknown keys are left alone.
nlohmann::json without_keys(nlohmann::json identity, const std::vector<std::string>& keys);

}  // namespace gpubench
