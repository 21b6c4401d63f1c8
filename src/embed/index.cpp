// embed/index.cpp: see index.h.
#include "embed/index.h"

#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "embed/npy.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::embed {
namespace fs = std::filesystem;

const std::vector<std::string> kIdentityKeys = {"model_identity", "tokenizer_identity", "pooling", "window",
                                                "dim"};

namespace {

constexpr const char* kDb = "/index.sqlite";
constexpr const char* kVectors = "/vectors.faiss";
constexpr const char* kNpy = "/embeddings.npy";

std::string npy_bytes(const std::vector<float>& v, const std::string& dtype) {
  if (dtype == "fp32") return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  std::string out(v.size() * 2, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = fp16_bits(v[i]);
    std::memcpy(&out[2 * i], &h, 2);
  }
  return out;
}

// Entry ids follow the index's count, document numbers its largest; vectors go to all three files.
void add_batch(const std::string& dir, Store& store, VectorIndex& vectors, NpyArray& npy, NewEntries& b,
               const std::string& dtype) {
  const int64_t first_id = store.count(), first_doc = store.next_doc();
  std::vector<int64_t> ids;
  for (size_t i = 0; i < b.entries.size(); ++i) {
    b.entries[i].id = first_id + static_cast<int64_t>(i);
    b.entries[i].doc += first_doc;
    ids.push_back(b.entries[i].id);
  }
  store.add(b.entries);
  vectors.add(b.vectors.data(), static_cast<int64_t>(ids.size()), ids.data());
  vectors.write(dir + kVectors);
  npy.rows += static_cast<int64_t>(ids.size());
  npy.data += npy_bytes(b.vectors, dtype);
  write_npy(dir + kNpy, npy);
}

void check_batch(const NewEntries& b) {
  if (b.entries.empty()) throw UserError("nothing to index: the inputs hold no text");
  if (b.vectors.size() != b.entries.size() * static_cast<size_t>(b.dim))
    throw std::logic_error("NewEntries: vectors do not match entries x dim");
}

}  // namespace

uint16_t fp16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, e8 = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (e8 == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));  // inf, nan
  const int32_t e = static_cast<int32_t>(e8) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow: inf
  uint32_t h, rem, halfway;
  if (e <= 0) {  // subnormal half (or zero)
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    h = mant >> shift, rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
  } else {
    h = (static_cast<uint32_t>(e) << 10) | (mant >> 13), rem = mant & 0x1fffu, halfway = 0x1000u;
  }
  if (rem > halfway || (rem == halfway && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

void create_index(const std::string& dir, const Meta& meta, const VectorIndexSpec& spec, NewEntries batch,
                  bool force) {
  validate(spec);
  check_batch(batch);
  for (const std::string& k : kIdentityKeys)
    if (!meta.count(k)) throw std::logic_error("create_index: metadata lacks " + k);
  AtomicDir out(dir, force);
  Store store = Store::create(out.dir() + kDb);
  Meta m = meta;
  m["format"] = "slm-index 1";
  m["index"] = spec.kind, m["dtype"] = spec.dtype, m["hnsw_m"] = std::to_string(spec.hnsw_m);
  store.set_meta(m);
  VectorIndex vectors(spec, batch.dim);
  NpyArray npy{spec.dtype == "fp16" ? "<f2" : "<f4", 0, batch.dim, {}};
  add_batch(out.dir(), store, vectors, npy, batch, spec.dtype);
  out.commit();
}

int64_t append_index(const std::string& dir, const Meta& meta, NewEntries batch) {
  check_batch(batch);
  const Meta have = open_index(dir).meta;
  for (const std::string& k : kIdentityKeys) {
    const auto it = have.find(k);
    const std::string want = meta.count(k) ? meta.at(k) : "";
    if (it == have.end() || it->second != want)
      throw UserError(fmt::format("{}: built with another {} ({} there, {} now); embed into a new index",
                                  dir, k == "model_identity" ? "model" : k, it == have.end() ? "none" : it->second, want));
  }
  AtomicDir out(dir, true);
  for (const char* f : {kDb, kVectors, kNpy}) fs::copy_file(dir + f, out.dir() + f);
  Store store = Store::open(out.dir() + kDb, false);
  const int64_t before = store.count();
  VectorIndex vectors = VectorIndex::read(out.dir() + kVectors);
  NpyArray npy = read_npy(out.dir() + kNpy);
  add_batch(out.dir(), store, vectors, npy, batch, have.at("dtype"));
  out.commit();
  return before;
}

OpenIndex open_index(const std::string& dir) {
  if (!fs::is_directory(dir)) throw UserError(fmt::format("{}: no such index folder", dir));
  Store store = Store::open(dir + kDb, true);
  Meta meta = store.meta();
  if (meta["format"] != "slm-index 1") throw UserError(fmt::format("{}{}: not an slm index", dir, kDb));
  VectorIndex vectors = VectorIndex::read(dir + kVectors);
  const int64_t n = store.count();
  if (vectors.size() != n)
    throw UserError(fmt::format("{}: {} vectors but {} entries (the folder was changed by hand; build it again)", dir,
                                vectors.size(), n));
  return {std::move(store), std::move(vectors), std::move(meta)};
}

}  // namespace slm::embed
