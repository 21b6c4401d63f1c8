// tests/model/cuda/on_cpu/bias_gelu.cpp: src/model/cuda/bias_gelu.cu compiled for the CPU (cuda_on_cpu.h).
#include "model/cuda/cuda_on_cpu.h"
#include "model/cuda/bias_gelu.cu"
