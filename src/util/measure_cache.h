// util/measure_cache.h: the measurement cache: what a machine measured once and later runs read
// back (GEMM peaks, the precision probe, compute profiles), in JSON files under cache_dir()
// (util/cache_dir.h), each an object of key -> measured value, keyed by everything the number
// depends on (device, threads, build, runtime settings, shape). Best effort: an unreadable file is
// measured again, a failed write leaves the number measured for this run only.
// Owns: cached_measurement, store_measurement.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace slm {

// The value under `key` in cache_dir()/`file`, if there is one.
std::optional<nlohmann::json> cached_measurement(const std::string& file, const std::string& key);
// Adds `value` under `key` to the file as it is now (other processes of this machine may have
// added theirs since this one read it), written whole and renamed into place.
void store_measurement(const std::string& file, const std::string& key, const nlohmann::json& value);

}  // namespace slm
