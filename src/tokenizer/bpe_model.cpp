// tokenizer/bpe_model.cpp: see bpe_model.h.
#include "tokenizer/bpe_model.h"

#include <fmt/format.h>

#include "util/error.h"
#include "util/hash.h"

namespace slm::tokenizer {

int32_t BpeModel::special_id(const std::string& text) const {
  auto it = special_to_id.find(text);
  return it == special_to_id.end() ? -1 : it->second;
}

void index_model(BpeModel& m, const std::string& where) {
  const size_t n = m.id_to_bytes.size();
  m.is_special.resize(n, false);
  m.present.resize(n, true);
  m.bytes_to_id.clear();
  m.special_to_id.clear();
  m.merge_of.clear();
  m.byte_id.fill(-1);
  for (size_t id = 0; id < n; ++id) {
    if (!m.present[id]) continue;
    const std::string& t = m.id_to_bytes[id];
    if (m.is_special[id]) {
      m.special_to_id[t] = static_cast<int32_t>(id);
      continue;
    }
    if (!m.bytes_to_id.emplace(t, static_cast<int32_t>(id)).second)
      throw UserError(fmt::format("{}: token \"{}\" appears twice", where, t));
    if (t.size() == 1) m.byte_id[static_cast<unsigned char>(t[0])] = static_cast<int32_t>(id);
  }
  for (int b = 0; b < 256; ++b)
    if (m.byte_id[b] < 0)
      throw UserError(fmt::format("{}: no token for byte 0x{:02x}; not a byte-level BPE", where, b));
  for (size_t r = 0; r < m.merges.size(); ++r) {
    auto [a, b] = m.merges[r];
    auto it = m.bytes_to_id.find(m.id_to_bytes[a] + m.id_to_bytes[b]);
    if (it == m.bytes_to_id.end())
      throw UserError(fmt::format("{}: merge {} has no result token in the vocabulary", where, r));
    m.merge_of.emplace(BpeModel::key(a, b),
                       MergeInfo{static_cast<int32_t>(r), it->second});  // first rank wins
  }
}

std::string model_identity(const BpeModel& m) {
  std::string canon;
  for (size_t id = 0; id < m.id_to_bytes.size(); ++id) {
    if (!m.present[id]) continue;
    canon += fmt::format("{}:{}:{}:", id, m.is_special[id] ? 's' : 't', m.id_to_bytes[id].size());
    canon += m.id_to_bytes[id];
  }
  for (auto [a, b] : m.merges) canon += fmt::format("m{},{}", a, b);
  return hash_hex(canon);
}

std::string decode(const BpeModel& m, const uint32_t* ids, size_t n) {
  std::string out;
  out.reserve(n * 4);
  for (size_t i = 0; i < n; ++i) {
    uint32_t id = ids[i];
    if (id >= m.id_to_bytes.size() || !m.present[id])
      throw UserError(fmt::format("token id {} is not in the vocabulary (size {})", id,
                                  m.id_to_bytes.size()));
    out += m.id_to_bytes[id];
  }
  return out;
}

}  // namespace slm::tokenizer
