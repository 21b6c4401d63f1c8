// autoplan/profile_timing.h: how `slm profile` times work (autoplan/profile.cpp and
// profile_tp2.cpp): a wait for the device, one timing of two phases repeated until it spans a
// minimum, medians, and the model of a few blocks it times. Owns Clock, device_sync, time_split,
// median_of, median_time, model_on_device, kRowBlocks.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autoplan/profile.h"
#include "model/gpt2.h"

namespace slm::autoplan {

using Clock = std::chrono::steady_clock;

// Blocks timed in a row, distinct as a stage's (their weights out of cache): row_scale's, and the
// tp pairs' as a pipeline's stages (profile_tp2.cpp); at most the model's layers.
constexpr int64_t kRowBlocks = 8;

// Waits for the device's queued work (nothing on the CPU).
void device_sync(const std::string& device);

// One timing of first() then second(), each phase's mean over as many runs as span min_s (a
// forward and its backward see the same contention: timed apart, their difference was noise on
// shared cores).
template <class F, class G>
std::pair<double, double> time_split(const std::string& device, double min_s, F&& first, G&& second) {
  double ta = 0, tb = 0;
  int runs = 0;
  do {
    device_sync(device);
    const auto t0 = Clock::now();
    first();
    device_sync(device);
    const auto t1 = Clock::now();
    second();
    device_sync(device);
    ta += std::chrono::duration<double>(t1 - t0).count();
    tb += std::chrono::duration<double>(Clock::now() - t1).count();
    ++runs;
  } while (ta + tb < min_s);
  return {ta / runs, tb / runs};
}

// The median (the upper one of an even count).
double median_of(std::vector<double> v);

// Median of `repeats` timings of f (time_split's first phase, with nothing after it) after one
// warm-up.
template <class F>
double median_time(int repeats, const std::string& device, double min_s, F&& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) t.push_back(time_split(device, min_s, f, [] {}).first);
  return median_of(t);
}

// A model of `layers` blocks of the request's shape on its device (no dropout).
model::GPT2 model_on_device(const ProfileRequest& r, int64_t layers, uint64_t seed);

}  // namespace slm::autoplan
