// tests/model/cuda/on_cpu/add_layer_norm.cpp: src/model/cuda/add_layer_norm.cu compiled for the CPU (cuda_on_cpu.h).
#include "model/cuda/cuda_on_cpu.h"
#include "model/cuda/add_layer_norm.cu"
