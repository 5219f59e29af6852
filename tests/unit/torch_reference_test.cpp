// SPDX-License-Identifier: Apache-2.0
// Reads tests/data/torch_reference.safetensors, written by PyTorch's `safetensors` package
// (tests/data/make_reference.py on the lent GPU machine), through the public API and checks
// every tensor's dtype, shape and bytes against what torch itself reported when it loaded
// the same file back (tests/data/torch_reference.json). A real client's files, not ours.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_paths.h"
#include "io/json.h"
#include "wharf/wharf.h"

namespace {

namespace json = wharf::io::json;

std::string data_path(const char* name) { return wharf_test::test_data(name); }

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string to_hex(const void* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s(2 * n, '0');
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = d[b[i] >> 4];
    s[2 * i + 1] = d[b[i] & 15];
  }
  return s;
}

// torch's dtype names (str(tensor.dtype) without "torch.") for each safetensors dtype.
const std::map<std::string, wharf_dtype>& torch_dtypes() {
  static const std::map<std::string, wharf_dtype> m = {{"float32", WHARF_DTYPE_F32},
                                                       {"float16", WHARF_DTYPE_F16},
                                                       {"bfloat16", WHARF_DTYPE_BF16},
                                                       {"float64", WHARF_DTYPE_F64},
                                                       {"float8_e4m3fn", WHARF_DTYPE_F8_E4M3},
                                                       {"float8_e5m2", WHARF_DTYPE_F8_E5M2},
                                                       {"int8", WHARF_DTYPE_I8},
                                                       {"uint8", WHARF_DTYPE_U8},
                                                       {"int16", WHARF_DTYPE_I16},
                                                       {"int32", WHARF_DTYPE_I32},
                                                       {"int64", WHARF_DTYPE_I64},
                                                       {"bool", WHARF_DTYPE_BOOL}};
  return m;
}

TEST(TorchReference, EveryTensorMatchesWhatTorchRead) {
  json::Value ref;
  const std::string text = read_text(data_path("torch_reference.json"));
  ASSERT_FALSE(text.empty()) << "missing " << data_path("torch_reference.json");
  wharf::Status st = json::parse(text, &ref);
  ASSERT_TRUE(st.ok()) << st.message();
  const json::Value* tensors = ref.find("tensors");
  ASSERT_NE(tensors, nullptr);
  ASSERT_GE(tensors->as_object().size(), 11u);

  wharf_constant_map* map = nullptr;
  wharf_status* s = wharf_constant_map_load_safetensors(data_path("torch_reference.safetensors").c_str(), &map);
  ASSERT_EQ(s, nullptr) << wharf_status_message(s);
  EXPECT_EQ(wharf_constant_map_num_entries(map), tensors->as_object().size());

  for (const auto& [name, want] : tensors->as_object()) {
    SCOPED_TRACE(name);
    wharf_tensor_view v{};
    std::memset(&v, 0, sizeof v);
    s = wharf_constant_map_find(map, name.c_str(), &v);
    ASSERT_EQ(s, nullptr) << wharf_status_message(s);
    const std::string& torch_dtype = want.find("dtype")->as_string();
    auto it = torch_dtypes().find(torch_dtype);
    ASSERT_NE(it, torch_dtypes().end()) << "torch dtype " << torch_dtype << " has no Wharf dtype";
    EXPECT_EQ(v.dtype, it->second) << wharf_dtype_name(v.dtype) << " vs torch " << torch_dtype;
    EXPECT_EQ(v.device_type, WHARF_DEVICE_CPU);
    EXPECT_EQ(v.strides, nullptr);
    const auto& shape = want.find("shape")->as_array();
    ASSERT_EQ(size_t(v.ndim), shape.size());
    uint64_t numel = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      EXPECT_EQ(uint64_t(v.shape[d]), shape[d].as_uint64().value_or(~0ull)) << "dim " << d;
      numel *= uint64_t(v.shape[d]);
    }
    const std::string& hex = want.find("hex")->as_string();
    const uint64_t nbytes = numel * wharf_dtype_size(v.dtype);
    ASSERT_EQ(hex.size(), 2 * nbytes);
    if (nbytes) {
      EXPECT_EQ(to_hex(v.data, nbytes), hex);
    }
  }
  wharf_constant_map_free(map);
}

}  // namespace
