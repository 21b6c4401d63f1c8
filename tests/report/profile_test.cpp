// tests/report/profile_test.cpp: the sums of a profiler trace (report/profile.h): GPU kernels by
// kind, from slm's names and PyTorch's; the GPU's busy time as the union of its activities; the CPU
// operators' self time; the trace's step count; bad files in one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "report/profile.h"
#include "util/error.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace slm::report;

namespace {
json span(const std::string& cat, const std::string& name, double ts, double dur, int tid = 1) {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"ts", ts}, {"dur", dur}, {"pid", 0}, {"tid", tid}};
}

const ProfileRow* row(const std::vector<ProfileRow>& rows, const std::string& name) {
  for (const ProfileRow& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}
}  // namespace

TEST(StepProfile, KernelKindsFromTheirNames) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "matmul"},
      {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "matmul"},
      {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", "matmul"},
      {"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>",
       "attention"},  // cutlass in its arguments, attention first
      {"fmha_cutlassB_bf16_aligned_64x64_k64_sm80", "attention"},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x64x128", "attention"},
      {"void slm::model::cuda::(anonymous namespace)::add_layer_norm_backward_kernel<float, __nv_bfloat16, 24>", "layer norm"},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>", "layer norm"},
      {"void at::native::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>", "layer norm"},
      {"void slm::model::cuda::(anonymous namespace)::bias_gelu_forward_kernel<__nv_bfloat16>", "gelu"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&)", "gelu"},
      {"void slm::model::cuda::(anonymous namespace)::xent_rows_kernel<__nv_bfloat16, 8>", "softmax / cross-entropy"},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::LogSoftMaxForwardEpilogue>",
       "softmax / cross-entropy"},
      {"void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor<float, 4, (ADAM_MODE)1, false>>",
       "optimizer"},
      {"void at::native::lpnorm_cleanup<float, (at::native::NormType)1, float>", "gradient norm"},
      {"void at::native::embedding_backward_feature_kernel<c10::BFloat16, float, long>", "embedding"},
      {"void slm::model::cuda::column_sums_kernel(float const*, long, long, float*)", "reduction"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float>>>", "reduction"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "copy / cast / fill"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>", "elementwise"},
      {"triton_poi_fused_add_native_layer_norm_0", "layer norm"},
      {"triton_per_fused__to_copy_sum_3", "fused (triton)"},
      {"something_new", "other"}};
  for (const auto& [name, kind] : cases) EXPECT_EQ(kernel_kind("kernel", name), kind) << name;
  EXPECT_EQ(kernel_kind("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"), "copy / cast / fill");
  EXPECT_EQ(kernel_kind("gpu_memset", "Memset (Device)"), "copy / cast / fill");
}

TEST(StepProfile, GpuBusyIsTheUnionOfItsActivitiesAndKindsSumTheirTimes) {
  json t = {{"traceEvents", json::array()}, {"slm_profile", {{"source", "slm rank 0, steps 4-5"}, {"steps", 2}}}};
  auto& ev = t["traceEvents"];
  ev.push_back(span("cpu_op", "aten::mm", 0, 1000));                 // the host's span: 0..1000 us
  ev.push_back(span("kernel", "sm90_xmma_gemm_bf16", 100, 300, 7));  // 100..400
  ev.push_back(span("kernel", "gemv_kernel", 120, 60, 9));           // 120..180, inside the first
  ev.push_back(span("kernel", "nvjet_tst_64x8", 350, 150, 8));       // 350..500, overlaps: busy 100..500
  ev.push_back(span("kernel", "flash_fwd_kernel<x>", 600, 100, 7));  // 600..700
  ev.push_back(span("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 800, 50, 9));
  ev.push_back(span("gpu_user_annotation", "ProfilerStep#4", 0, 1000, 7));  // not a GPU activity
  ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", "CPU"}}}});
  const ProfileSummary s = summarize_profile(t, "unused");
  EXPECT_EQ(s.source, "slm rank 0, steps 4-5");
  EXPECT_EQ(s.steps, 2);
  EXPECT_TRUE(s.gpu);
  EXPECT_DOUBLE_EQ(s.wall_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.gpu_busy_ms, 0.4 + 0.1 + 0.05);
  ASSERT_NE(row(s.kinds, "matmul"), nullptr);
  EXPECT_DOUBLE_EQ(row(s.kinds, "matmul")->ms, 0.51);
  EXPECT_EQ(row(s.kinds, "matmul")->count, 3);
  EXPECT_EQ(s.kinds[0].name, "matmul");  // largest first
  EXPECT_DOUBLE_EQ(row(s.kinds, "attention")->ms, 0.1);
  EXPECT_DOUBLE_EQ(row(s.kinds, "copy / cast / fill")->ms, 0.05);
  EXPECT_EQ(row(s.kinds, "other"), nullptr);
  ASSERT_NE(row(s.top, "flash_fwd_kernel"), nullptr);  // without its template arguments
  const std::string table = profile_table(s);
  EXPECT_NE(table.find("2 steps, 0.50 ms per step, GPU busy 0.28 ms per step (55.0%)"), std::string::npos) << table;
  EXPECT_NE(table.find("| matmul | 0.255 | 77.3% | 2 |"), std::string::npos) << table;  // of 0.66 ms of kernels
  EXPECT_NE(profile_line(s).find("; matmul 77.3%, attention 15.2%, copy / cast / fill 7.6%"), std::string::npos)
      << profile_line(s);
}

TEST(StepProfile, CpuOperatorsBySelfTimePerThread) {
  json t = {{"traceEvents", json::array()}};
  auto& ev = t["traceEvents"];
  ev.push_back(span("cpu_op", "aten::linear", 0, 100));   // children: addmm 0..80 (with t inside)
  ev.push_back(span("cpu_op", "aten::addmm", 0, 80));     // starts with its parent
  ev.push_back(span("cpu_op", "aten::t", 10, 5));
  ev.push_back(span("cpu_op", "aten::gelu", 120, 30));
  ev.push_back(span("cpu_op", "aten::addmm", 50, 40, 2));  // another thread, overlapping in time
  ev.push_back(span("cuda_runtime", "cudaLaunchKernel", 20, 2));  // not an operator
  const ProfileSummary s = summarize_profile(t, "PyTorch eager");
  EXPECT_EQ(s.source, "PyTorch eager");
  EXPECT_EQ(s.steps, 1);
  EXPECT_FALSE(s.gpu);
  EXPECT_DOUBLE_EQ(s.wall_ms, 0.15);
  EXPECT_DOUBLE_EQ(row(s.kinds, "aten::linear")->ms, 0.02);
  EXPECT_DOUBLE_EQ(row(s.kinds, "aten::addmm")->ms, 0.075 + 0.04);
  EXPECT_EQ(row(s.kinds, "aten::addmm")->count, 2);
  EXPECT_DOUBLE_EQ(row(s.kinds, "aten::t")->ms, 0.005);
  EXPECT_DOUBLE_EQ(row(s.kinds, "aten::gelu")->ms, 0.03);
  EXPECT_EQ(row(s.kinds, "cudaLaunchKernel"), nullptr);
  EXPECT_NE(profile_table(s).find("no GPU kernels recorded"), std::string::npos);
}

TEST(StepProfile, FilesOfARunAndBadTracesInOneLine) {
  const fs::path run = fs::temp_directory_path() / ("slm_profile_" + std::to_string(::getpid()));
  fs::create_directories(run / "profile");
  std::ofstream(run / "profile" / "rank_1.json") << json{{"traceEvents", json::array()}}.dump();
  std::ofstream(run / "profile" / "rank_0.json") << json{{"traceEvents", json::array({span("cpu_op", "aten::mm", 0, 5)})}}.dump();
  std::ofstream(run / "profile" / "notes.txt") << "x";
  const std::vector<std::string> files = profile_files(run.string());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(fs::path(files[0]).filename(), "rank_0.json");
  EXPECT_DOUBLE_EQ(read_profile(files[0]).wall_ms, 0.005);
  EXPECT_EQ(read_profile(files[0]).source, "rank_0.json");
  EXPECT_TRUE(profile_files((run / "none").string()).empty());
  std::ofstream(run / "bad.json") << "{\"traceEvents\": 3}";
  EXPECT_THROW(read_profile((run / "bad.json").string()), slm::UserError);
  std::ofstream(run / "text.json") << "not json";
  try {
    read_profile((run / "text.json").string());
    FAIL() << "no error";
  } catch (const slm::UserError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a profiler trace"), std::string::npos);
  }
  fs::remove_all(run);
}

TEST(StepProfile, SideBySideInTheFirstProfilesOrderPerStep) {
  ProfileSummary a, b;
  a.source = "slm", a.steps = 2, a.gpu = true, a.wall_ms = 20, a.gpu_busy_ms = 18;
  a.kinds = {{"matmul", 12, 4}, {"attention", 4, 2}, {"layer norm", 2, 8}};
  b.source = "PyTorch eager", b.steps = 1, b.gpu = true, b.wall_ms = 14, b.gpu_busy_ms = 13;
  b.kinds = {{"matmul", 7, 2}, {"softmax / cross-entropy", 3, 2}, {"attention", 2, 1}};
  const std::string t = profile_comparison({a, b}, 3);
  EXPECT_NE(t.find("| GPU time by kind, ms per step | slm | PyTorch eager |\n|---|---:|---:|\n"), std::string::npos) << t;
  EXPECT_NE(t.find("| step (wall) | 10.000 | 14.000 |\n| GPU busy | 9.000 | 13.000 |\n| matmul | 6.000 | 7.000 |\n"
                   "| attention | 2.000 | 2.000 |\n| layer norm | 1.000 | 0.000 |\n| (the rest) | 0.000 | 3.000 |\n"),
            std::string::npos)
      << t;
}
