// libFuzzer target for the safetensors reader (built and run by tests/fuzz/run.sh).
//
// Properties checked beyond "no crash, no sanitizer report":
//  - a rejected input is always kDataCorrupt (parse never reports I/O or internal errors);
//  - an accepted input's tensors lie inside the input, fit their dtype and shape exactly, do
//    not overlap, and every byte of them can be read (ASan flags a read past the buffer, which
//    the harness allocates to the input's exact size);
//  - accepted names pass check_fqn, metadata is UTF-8 without NUL, every accepted shape is a
//    valid TensorMeta whose contiguous strides are defined (UBSan checks the arithmetic);
//  - every message (rejections, quoted names) is valid UTF-8 without a control character.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/checked.h"
#include "core/tensor.h"
#include "core/text.h"
#include "io/json.h"
#include "io/safetensors.h"

namespace {

volatile uint64_t g_sink;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "safetensors_fuzz: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using wharf::io::SafetensorsFile;
  // Copy into an exact-size heap block so a read one byte past the input is an ASan error
  // (libFuzzer's own buffer may have slack behind it).
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size == 0 ? 1 : size]);
  if (size) std::memcpy(buf.get(), data, size);

  std::unique_ptr<SafetensorsFile> file;
  wharf::Status st = SafetensorsFile::parse(buf.get(), size, &file);
  if (!st.ok()) {
    if (st.code() != wharf::Code::kDataCorrupt) fail("rejection that is not kDataCorrupt");
    // Whatever the file holds, the message is valid UTF-8 without control characters.
    if (!wharf::valid_utf8(st.message())) fail("message is not valid UTF-8");
    for (char ch : st.message())
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F) fail("control character in a message");
    if (file != nullptr) fail("output set on failure");
    return 0;
  }

  const uint8_t* lo = buf.get() + 8 + file->header_size();
  const uint8_t* hi = buf.get() + size;
  if (8 + file->header_size() + file->data_size() != size) fail("sizes do not add up");
  uint64_t checksum = 0;
  for (const wharf::io::SafetensorsTensor& t : file->tensors()) {
    if (t.name.empty()) fail("empty name accepted");
    if (t.shape.size() > static_cast<size_t>(wharf::kMaxDims)) fail("too many dims accepted");
    // A zero dimension makes the count 0 wherever it stands; otherwise the product must fit.
    bool empty = false;
    for (int64_t d : t.shape) {
      if (d < 0) fail("negative dim accepted");
      empty = empty || d == 0;
    }
    uint64_t n = empty ? 0 : 1;
    for (int64_t d : t.shape)
      if (!empty && !wharf::checked_mul(n, static_cast<uint64_t>(d), &n)) fail("overflowing shape accepted");
    if (!wharf::check_fqn("tensor", t.name).ok()) fail("name that check_fqn refuses accepted");
    // Every shape the reader accepts is a valid tensor meta with defined contiguous strides
    // (UBSan checks the stride arithmetic).
    wharf::TensorMeta m;
    m.dtype = t.dtype;
    m.shape = t.shape;
    if (!m.validate("t").ok()) fail("accepted shape fails TensorMeta::validate");
    m.strides = m.contiguous_strides();
    if (!m.contiguous()) fail("contiguous strides are not contiguous");
    // Messages quoting the name never carry a control character.
    for (char ch : wharf::quote_name(t.name))
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F) fail("control character in a quoted name");
    uint64_t bytes;
    if (!wharf::checked_mul(n, wharf::dtype_size(t.dtype), &bytes) || bytes != t.end - t.begin)
      fail("size does not match shape");
    const auto* p = static_cast<const uint8_t*>(t.data);
    if (t.begin > t.end || p != lo + t.begin || p + (t.end - t.begin) > hi) fail("range outside data");
    if (file->find(t.name) != &t) fail("find() disagrees with tensors()");
    for (uint64_t i = 0; i < t.end - t.begin; ++i) checksum += p[i];  // touch every byte
  }
  // Non-empty ranges are pairwise disjoint (quadratic, but fuzz inputs hold few tensors).
  const auto& ts = file->tensors();
  for (size_t i = 0; i < ts.size(); ++i)
    for (size_t j = i + 1; j < ts.size(); ++j)
      if (ts[i].begin < ts[i].end && ts[j].begin < ts[j].end && ts[i].begin < ts[j].end &&
          ts[j].begin < ts[i].end)
        fail("overlapping ranges accepted");
  for (const auto& kv : file->metadata()) {
    if (kv.first.find('\0') != std::string::npos || kv.second.find('\0') != std::string::npos)
      fail("NUL in metadata accepted");
    if (!wharf::valid_utf8(kv.first) || !wharf::valid_utf8(kv.second)) fail("metadata not UTF-8 accepted");
    checksum += kv.first.size() + kv.second.size();
  }

  // Differential check: the reader walks the header with a Cursor; the tree parser must accept
  // the same header and see one member per tensor (plus __metadata__ when present).
  wharf::io::json::Value root;
  const std::string_view header(reinterpret_cast<const char*>(buf.get() + 8), file->header_size());
  if (!wharf::io::json::parse(header, &root).ok() || !root.is_object()) fail("tree parser rejects the header");
  const size_t has_meta = root.find("__metadata__") != nullptr ? 1 : 0;
  if (root.as_object().size() != ts.size() + has_meta) fail("tree parser sees other members");
  if (has_meta && root.find("__metadata__")->as_object().size() != file->metadata().size())
    fail("tree parser sees other metadata");
  g_sink = checksum;  // keeps the reads from being optimised away
  return 0;
}
