// host/host_name.h: this machine's host name, which names its ranks' shared pools (cores, memory)
// and its files (TensorBoard events). No torch: in slm_core.
#pragma once
#include <string>

namespace slm::host {

// gethostname(2); "localhost" where it cannot be read.
std::string host_name();

}  // namespace slm::host
