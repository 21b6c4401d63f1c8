// tests/util/error_test.cpp: LibTorch's messages of a failed allocation are told from a bug's
// (util/error.h: allocation_failure), in the words of its CPU allocator and of CUDA's.
#include "util/error.h"

#include <gtest/gtest.h>

TEST(Error, AllocationFailureFromLibTorchsMessages) {
  using slm::allocation_failure;
  EXPECT_EQ(allocation_failure("[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: "
                               "you tried to allocate 100663296 bytes. Error code 12 (Cannot allocate memory)"),
            "can't allocate memory: you tried to allocate 100663296 bytes. Error code 12 (Cannot allocate memory)");
  EXPECT_EQ(allocation_failure("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.10 GiB total capacity)\n"
                               "Exception raised from malloc at ../c10/cuda/CUDACachingAllocator.cpp:1096"),
            "CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 79.10 GiB total capacity)");
  EXPECT_EQ(allocation_failure("shape '[2, 3]' is invalid for input of size 5"), "");
  EXPECT_EQ(allocation_failure(""), "");
}
