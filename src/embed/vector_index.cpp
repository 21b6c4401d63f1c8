// embed/vector_index.cpp: see vector_index.h. Indexes are made by FAISS's index_factory from a
// description ("IDMap,Flat", "IDMap,HNSW32", "IVF64,SQfp16", ...), so FAISS owns its parts.
#include "embed/vector_index.h"

#include <faiss/IndexHNSW.h>
#include <faiss/IndexIDMap.h>
#include <faiss/IndexIVF.h>
#include <faiss/impl/FaissException.h>
#include <faiss/index_factory.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "util/error.h"
#include "util/files.h"

namespace slm::embed {
namespace {

std::string storage(const VectorIndexSpec& s) { return s.dtype == "fp16" ? "SQfp16" : "Flat"; }

// IVF needs its training data to pick the number of lists, so it is made on the first add().
std::unique_ptr<faiss::Index> make(const VectorIndexSpec& s, int64_t dim, int64_t n_train) {
  std::string desc;
  if (s.kind == "flat") desc = "IDMap," + storage(s);
  if (s.kind == "hnsw") desc = fmt::format("IDMap,HNSW{}{}", s.hnsw_m, s.dtype == "fp16" ? "_SQfp16" : "");
  if (s.kind == "ivf") {
    if (s.ivf_lists > n_train)  // faiss's k-means needs a point per cluster
      throw UserError(
          fmt::format("--ivf-lists {}: ivf needs at least one entry per cluster and has {} (lower it, or 0 "
                      "for about 4 sqrt(entries))",
                      s.ivf_lists, n_train));
    int64_t lists = s.ivf_lists > 0 ? s.ivf_lists
                                    : std::min<int64_t>(static_cast<int64_t>(4 * std::sqrt(double(n_train))), n_train / 39);
    desc = fmt::format("IVF{},{}", std::max<int64_t>(1, lists), storage(s));
  }
  return std::unique_ptr<faiss::Index>(faiss::index_factory(static_cast<int>(dim), desc.c_str(), faiss::METRIC_INNER_PRODUCT));
}

faiss::Index* inner(faiss::Index* ix) {
  auto* idmap = dynamic_cast<faiss::IndexIDMap*>(ix);
  return idmap ? idmap->index : ix;
}

}  // namespace

void validate(const VectorIndexSpec& s) {
  if (s.kind != "flat" && s.kind != "hnsw" && s.kind != "ivf")
    throw UserError(fmt::format("--index '{}' is not flat, hnsw or ivf", s.kind));
  if (s.dtype != "fp32" && s.dtype != "fp16") throw UserError(fmt::format("--dtype '{}' is not fp32 or fp16", s.dtype));
  if (s.hnsw_m < 4 || s.hnsw_m > 256) throw UserError(fmt::format("--hnsw-m {} is outside [4, 256]", s.hnsw_m));
  if (s.ivf_lists < 0) throw UserError(fmt::format("--ivf-lists {} is negative", s.ivf_lists));
}

VectorIndex::VectorIndex(const VectorIndexSpec& spec, int64_t dim) : spec_(spec), dim_(dim) {
  validate(spec);
  if (spec.kind != "ivf") index_ = make(spec, dim, 0);
}

VectorIndex::VectorIndex(std::unique_ptr<faiss::Index> index) : index_(std::move(index)), dim_(index_->d) {}
VectorIndex::VectorIndex(VectorIndex&&) noexcept = default;
VectorIndex::~VectorIndex() = default;

VectorIndex VectorIndex::read(const std::string& path) {
  if (!path_exists(path)) throw UserError(fmt::format("{}: not found", path));
  try {
    return VectorIndex(std::unique_ptr<faiss::Index>(faiss::read_index(path.c_str())));
  } catch (const faiss::FaissException&) {
    throw UserError(fmt::format("{}: not a FAISS index (corrupt or truncated)", path));
  }
}

void VectorIndex::add(const float* x, int64_t n, const int64_t* ids) {
  if (n == 0) return;
  if (!index_) index_ = make(spec_, dim_, n);  // ivf: made now, its lists sized by n
  if (!index_->is_trained) index_->train(n, x);  // ivf's clusters; a scalar quantizer's ranges
  index_->add_with_ids(n, x, ids);
}

void VectorIndex::write(const std::string& path) const {
  try {
    faiss::write_index(index_.get(), path.c_str());
  } catch (const faiss::FaissException&) {
    throw UserError(fmt::format("{}: cannot write the FAISS index", path));
  }
}

int64_t VectorIndex::size() const { return index_ ? index_->ntotal : 0; }
int64_t VectorIndex::dim() const { return dim_; }

SearchResult VectorIndex::search(const float* q, int64_t n, int64_t k, int64_t effort) const {
  SearchResult r;
  r.ids.assign(static_cast<size_t>(n * k), -1);
  r.scores.assign(static_cast<size_t>(n * k), 0.0f);
  if (!index_ || index_->ntotal == 0) return r;
  faiss::Index* ix = inner(index_.get());
  if (auto* h = dynamic_cast<faiss::IndexHNSW*>(ix)) h->hnsw.efSearch = static_cast<int>(effort > 0 ? effort : std::max<int64_t>(64, 2 * k));
  if (auto* v = dynamic_cast<faiss::IndexIVF*>(ix)) v->nprobe = static_cast<size_t>(effort > 0 ? effort : 16);
  index_->search(n, q, k, r.scores.data(), r.ids.data());
  return r;
}

}  // namespace slm::embed
