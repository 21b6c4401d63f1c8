// tests/model/cuda/on_cpu/xent_rows.cpp: src/model/cuda/xent_rows.cu compiled for the CPU (cuda_on_cpu.h).
#include "model/cuda/cuda_on_cpu.h"
#include "model/cuda/xent_rows.cu"
