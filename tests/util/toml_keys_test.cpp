// tests/util/toml_keys_test.cpp: where two ranks' configurations first differ, named by setting.
#include "util/toml_keys.h"

#include <gtest/gtest.h>

namespace slm {
namespace {

TEST(TomlKeys, FirstDifferenceNamesTheSetting) {
  const std::string a = "[model]\nn_layer = 2\n\n[dist]\nbackend = \"gloo\"\nsecret_file = \"a\"\n";
  EXPECT_EQ(first_difference(a, a, 0), "");
  const std::string b = "[model]\nn_layer = 2\n\n[dist]\nbackend = \"gloo\"\nsecret_file = \"b\"\n";
  EXPECT_EQ(first_difference(b, a, 0), "dist.secret_file is \"b\" here, \"a\" on rank 0");
  EXPECT_EQ(first_difference("[model]\nn_layer = 4\n", a, 3), "model.n_layer is 4 here, 2 on rank 3");
  EXPECT_EQ(first_difference("[model]\n", "[model]\nn_layer = 2\n", 0), "line 2 is '(nothing)' here, 'n_layer = 2' on rank 0");
  const std::string long_value = "[data]\ndir = \"" + std::string(100, 'x') + "\"\n";
  EXPECT_EQ(first_difference(long_value, "[data]\ndir = \"y\"\n", 0),
            "data.dir is \"" + std::string(59, 'x') + "... here, \"y\" on rank 0");
}

}  // namespace
}  // namespace slm
