// model/recompute.cpp: see recompute.h. The autocast queries go through util/torch_compat.h.
#include "model/recompute.h"

#include <torch/torch.h>

#include "util/torch_compat.h"

namespace slm::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool cpu_autocast() { return compat::autocast_enabled(at::kCPU); }
void set_cpu_autocast(bool on) { compat::set_autocast_enabled(at::kCPU, on); }
bool gpu_autocast() { return compat::autocast_enabled(at::kCUDA); }
void set_gpu_autocast(bool on) { compat::set_autocast_enabled(at::kCUDA, on); }

GPT2Config shape_of(int64_t n_head, const at::Tensor& x) {
  GPT2Config c;
  c.n_head = n_head, c.n_embd = x.size(-1);
  return c;
}

struct RecomputeBlock : torch::autograd::Function<RecomputeBlock> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, at::TensorList params, int64_t n_head,
                            bool train, int64_t run, const std::vector<int64_t>& context) {
    ctx->saved_data["n_head"] = n_head;
    ctx->saved_data["train"] = train;
    ctx->saved_data["cpu_autocast"] = cpu_autocast();
    ctx->saved_data["gpu_autocast"] = gpu_autocast();
    ctx->saved_data["run"] = run;
    ctx->saved_data["context"] = context;
    std::vector<at::Tensor> saved{x};
    saved.insert(saved.end(), params.begin(), params.end());
    ctx->save_for_backward(saved);
    torch::NoGradGuard no_grad;
    return forward_block(block_of(params), x, shape_of(n_head, x), train, reinterpret_cast<BlockRun>(run), context);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    variable_list saved = ctx->get_saved_variables();
    variable_list inputs;
    for (const auto& s : saved) inputs.push_back(s.detach().requires_grad_(true));
    at::Tensor y = rerun_block(block_of(at::TensorList(inputs).slice(1)), inputs[0],
                               shape_of(ctx->saved_data["n_head"].toInt(), inputs[0]), ctx->saved_data["train"].toBool(),
                               {ctx->saved_data["cpu_autocast"].toBool(), ctx->saved_data["gpu_autocast"].toBool()},
                               reinterpret_cast<BlockRun>(ctx->saved_data["run"].toInt()),
                               ctx->saved_data["context"].toIntVector());
    variable_list grads = torch::autograd::grad({y}, inputs, {grad_out[0]}, false, false, true);
    grads.resize(grads.size() + 4);  // n_head, train, run, context
    return grads;
  }
};

}  // namespace

Block block_of(at::TensorList p) {  // the order of Block's members
  return {p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11]};
}

std::vector<at::Tensor> params_of(const Block& b) {
  return {b.ln_1_w, b.ln_1_b, b.c_attn_w, b.c_attn_b, b.attn_proj_w, b.attn_proj_b,
          b.ln_2_w, b.ln_2_b, b.c_fc_w,   b.c_fc_b,   b.mlp_proj_w,  b.mlp_proj_b};
}

at::Tensor forward_block(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train, BlockRun run,
                         const std::vector<int64_t>& context) {
  return run ? run(b, x, c, train, context) : block_forward(b, x, c, train);
}

AutocastState autocast_state() { return {cpu_autocast(), gpu_autocast()}; }
void set_autocast_state(AutocastState s) {
  set_cpu_autocast(s.cpu);
  set_gpu_autocast(s.gpu);
}

at::Tensor rerun_block(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train, AutocastState forward,
                       BlockRun run, const std::vector<int64_t>& context) {
  const AutocastState was = autocast_state();
  set_autocast_state(forward);
  torch::AutoGradMode grad_on(true);
  at::Tensor y = forward_block(b, x, c, train, run, context);
  set_autocast_state(was);
  return y;
}

at::Tensor block_forward_recompute(const Block& b, const at::Tensor& x, const GPT2Config& c, bool train, BlockRun run,
                                   const std::vector<int64_t>& context) {
  std::vector<at::Tensor> p = params_of(b);
  return RecomputeBlock::apply(x, at::TensorList(p), c.n_head, train, reinterpret_cast<int64_t>(run), context);
}

}  // namespace slm::model
