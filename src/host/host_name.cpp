// host/host_name.cpp: see host_name.h.
#include "host/host_name.h"

#include <unistd.h>

namespace slm::host {

std::string host_name() {
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == 0) return "localhost";
  return name;
}

}  // namespace slm::host
