// util/measure_cache.cpp: see measure_cache.h.
#include "util/measure_cache.h"

#include <filesystem>

#include "util/cache_dir.h"
#include "util/files.h"

namespace slm {
namespace {

nlohmann::json read_whole(const std::string& path) {
  try {
    if (path_exists(path)) {
      nlohmann::json j = nlohmann::json::parse(read_file(path));
      if (j.is_object()) return j;
    }
  } catch (...) {  // an unreadable cache is measured again
  }
  return nlohmann::json::object();
}

}  // namespace

std::optional<nlohmann::json> cached_measurement(const std::string& file, const std::string& key) {
  const nlohmann::json j = read_whole(cache_dir() + "/" + file);
  if (!j.contains(key)) return std::nullopt;
  return j.at(key);
}

void store_measurement(const std::string& file, const std::string& key, const nlohmann::json& value) {
  const std::string path = cache_dir() + "/" + file;
  try {
    nlohmann::json j = read_whole(path);
    j[key] = value;
    std::filesystem::create_directories(cache_dir());
    write_file_atomic(path, j.dump(1) + "\n");
  } catch (...) {  // caching is best effort
  }
}

}  // namespace slm
