// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the safetensors reader, the sharded-checkpoint index parser, the
// ZIP reader of `.pt2` packages and the model package manifest parser (built and run by
// tests/fuzz/run.sh). Every input goes to all four.
//
// Properties checked beyond "no crash, no sanitizer report":
//  - a rejected input is always kDataCorrupt or kUnsupported (parse never reports I/O or
//    internal errors; which of the two is the unit tests' business);
//  - an accepted input's tensors lie inside the input, fit their dtype and shape exactly (the
//    bit size a multiple of 8), tile the data section exactly as the reference requires
//    (sorted by offset: the first at 0, each where the previous ended, the last at the end:
//    no overlap, no hole, no trailing byte), and every byte of them can be read (ASan flags a
//    read past the buffer, which the harness allocates to the input's exact size);
//  - the element count of an accepted shape, folded left to right, never overflows;
//  - accepted names pass check_fqn, metadata is UTF-8 without NUL, every accepted shape is a
//    valid TensorMeta whose contiguous strides are defined (UBSan checks the arithmetic);
//  - every message (rejections, quoted names) is valid UTF-8 without a control character.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
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
#include "io/safetensors_index.h"
#include "io/zip_archive.h"
#include "models/manifest.h"

namespace {

volatile uint64_t g_sink;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "safetensors_fuzz: property violated: %s\n", what);
  std::abort();
}

void check_message(const std::string& m) {
  if (!wharf::valid_utf8(m)) fail("message is not valid UTF-8");
  for (char ch : m)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F) fail("control character in a message");
}

// The index parser: rejections are kDataCorrupt or kUnsupported with clean messages; an
// accepted index names only shards inside its directory, and every tensor once.
void fuzz_index(const uint8_t* data, size_t size) {
  wharf::io::SafetensorsIndex idx;
  const wharf::Status st =
      wharf::io::parse_safetensors_index(std::string_view(reinterpret_cast<const char*>(data), size), &idx);
  if (!st.ok()) {
    if (st.code() != wharf::Code::kDataCorrupt && st.code() != wharf::Code::kUnsupported)
      fail("index rejection that is not kDataCorrupt or kUnsupported");
    check_message(st.message());
    if (!idx.shards.empty() || !idx.weight_map.empty()) fail("index output set on failure");
    return;
  }
  for (const std::string& shard : idx.shards) {
    if (shard.empty() || shard[0] == '/' || shard.back() == '/') fail("shard name outside the directory accepted");
    if (shard == ".." || shard.rfind("../", 0) == 0 || shard.find("/../") != std::string::npos ||
        (shard.size() >= 3 && shard.compare(shard.size() - 3, 3, "/..") == 0))
      fail("shard name with '..' accepted");
    if (shard.find('\0') != std::string::npos) fail("shard name with NUL accepted");
  }
  std::vector<std::string> names;
  for (const auto& [name, s] : idx.weight_map) {
    if (s >= idx.shards.size()) fail("weight_map points past the shards");
    if (!wharf::check_fqn("tensor", name).ok()) fail("index tensor name that check_fqn refuses accepted");
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) fail("index lists a tensor twice");
  for (const auto& kv : idx.metadata)
    if (kv.first.find('\0') != std::string::npos || kv.second.find('\0') != std::string::npos)
      fail("NUL in index metadata accepted");
}

}  // namespace

// The ZIP reader behind `.pt2` packages: a rejection is kDataCorrupt or kUnsupported with a
// clean message; an accepted archive's entries read within the input (or are refused cleanly).
void fuzz_zip(const uint8_t* data, size_t size) {
  std::unique_ptr<wharf::io::ZipArchive> z;
  wharf::Status st = wharf::io::ZipArchive::from_bytes(data, size, "fuzz.pt2", &z);
  if (!st.ok()) {
    if (st.code() != wharf::Code::kDataCorrupt && st.code() != wharf::Code::kUnsupported)
      fail("zip: rejection that is not kDataCorrupt or kUnsupported");
    check_message(st.message());
    return;
  }
  for (const wharf::io::ZipEntry& e : z->entries()) {
    const uint8_t* d = nullptr;
    uint64_t n = 0;
    wharf::Status rs = z->read(e, &d, &n);
    if (!rs.ok()) {
      if (rs.code() != wharf::Code::kDataCorrupt && rs.code() != wharf::Code::kUnsupported)
        fail("zip: read refusal that is not kDataCorrupt or kUnsupported");
      check_message(rs.message());
      continue;
    }
    if (d < data || n > size || d + n > data + size) fail("zip: an entry outside the input");
  }
}

// A path the manifest parser accepted stays inside the package and is spelled one way:
// relative, no '..', '.' or empty component, no NUL.
bool inside_package(const std::string& p) {
  if (p.empty() || p[0] == '/' || p.find('\0') != std::string::npos) return false;
  size_t at = 0;
  for (;;) {
    const size_t slash = p.find('/', at);
    const size_t n = (slash == std::string::npos ? p.size() : slash) - at;
    if (n == 0 || (n == 1 && p[at] == '.') || (n == 2 && p.compare(at, 2, "..") == 0)) return false;
    if (slash == std::string::npos) return true;
    at = slash + 1;
  }
}

// The model package manifest (docs/model-package.md): a rejection is kInvalidArgument (or
// kUnsupported for a newer format_version) whose message begins with the `where` it was
// given, is clean, and leaves the output empty; an accepted manifest holds what the loader
// relies on without checking again.
void fuzz_manifest(const uint8_t* data, size_t size) {
  wharf::Manifest m;
  m.name = "stale";  // parse_manifest resets it, also when it refuses
  const wharf::Status st =
      wharf::parse_manifest(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", &m);
  if (!st.ok()) {
    if (st.code() != wharf::Code::kInvalidArgument && st.code() != wharf::Code::kUnsupported)
      fail("manifest: rejection that is not kInvalidArgument or kUnsupported");
    if (st.message().rfind("fuzz: ", 0) != 0) fail("manifest: message does not begin with its where");
    check_message(st.message());
    if (!m.name.empty() || !m.methods.empty() || !m.parameters.empty()) fail("manifest: output set on failure");
    return;
  }
  if (m.format_version < 1 || m.format_version > wharf::kModelPackageFormatVersion)
    fail("manifest: format_version out of range accepted");
  if (!wharf::check_fqn("name", m.name).ok()) fail("manifest: name that check_fqn refuses accepted");
  if (m.methods.empty()) fail("manifest: no method accepted");
  std::vector<std::string> names;
  for (const std::string& f : m.weight_files)
    if (!inside_package(f)) fail("manifest: weight file outside the package (or not normalised) accepted");
  std::vector<std::string> files = m.weight_files;
  std::sort(files.begin(), files.end());
  if (std::adjacent_find(files.begin(), files.end()) != files.end()) fail("manifest: a weight file listed twice");
  if (!m.state_file.empty() && !inside_package(m.state_file)) fail("manifest: state_file outside the package accepted");
  for (const wharf::PackageParameter& p : m.parameters) {
    if (!wharf::check_fqn("fqn", p.fqn).ok()) fail("manifest: parameter fqn that check_fqn refuses accepted");
    for (int64_t d : p.shape)
      if (d < 0) fail("manifest: negative parameter dimension accepted");
    names.push_back(p.fqn);
  }
  if (!m.parameters.empty() && m.weight_files.empty()) fail("manifest: parameters without weight files accepted");
  for (const wharf::PackageState& s : m.states) {
    if (!wharf::check_fqn("fqn", s.fqn).ok()) fail("manifest: state fqn that check_fqn refuses accepted");
    if (!s.initial_tensor.empty() && m.state_file.empty()) fail("manifest: state initial tensor without a state_file");
    names.push_back(s.fqn);
  }
  std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) fail("manifest: a parameter or state twice");
  for (const auto& [alias, target] : m.aliases) {
    if (!wharf::check_fqn("alias", alias).ok()) fail("manifest: alias that check_fqn refuses accepted");
    if (std::binary_search(names.begin(), names.end(), alias)) fail("manifest: alias that is itself a name accepted");
    bool found = false;
    for (const wharf::PackageParameter& p : m.parameters) found |= p.fqn == target;
    if (!found) fail("manifest: alias of an unknown parameter accepted");
  }
  std::vector<std::string> methods;
  for (const wharf::PackageMethod& pm : m.methods) {
    if (!wharf::check_fqn("name", pm.name).ok()) fail("manifest: method name that check_fqn refuses accepted");
    if (!inside_package(pm.file)) fail("manifest: method file outside the package accepted");
    methods.push_back(pm.name);
    if ((pm.session_capacity == 0) != (pm.slots_input < 0)) fail("manifest: slots input and capacity disagree");
    if (pm.slots_input >= 0) {
      if (size_t(pm.slots_input) >= pm.inputs.size()) fail("manifest: slots input out of range");
      const wharf::PackageTensor& sl = pm.inputs[size_t(pm.slots_input)];
      if (sl.name != "slots" || sl.dtype != wharf::DType::kI64 || sl.shape.size() != 1)
        fail("manifest: a slots input that is not int64 [N] accepted");
    }
    for (const std::string& r : pm.repeat_dims)
      if (!wharf::check_fqn("dimension", r).ok()) fail("manifest: a padded dimension with an invalid name accepted");
    for (const auto* list : {&pm.inputs, &pm.outputs})
      for (const wharf::PackageTensor& t : *list) {
        const size_t n = t.shape.size();
        if (n > size_t(wharf::kMaxDims)) fail("manifest: too many dimensions accepted");
        if (t.dim_names.size() != n || t.dim_min.size() != n || t.dim_max.size() != n || t.dim_name_c.size() != n)
          fail("manifest: a tensor's per-dimension lists differ in length");
        for (size_t d = 0; d < n; ++d) {
          const bool symbolic = t.shape[d] == -1;
          if (!symbolic && t.shape[d] < 0) fail("manifest: negative dimension accepted");
          if (symbolic == t.dim_names[d].empty()) fail("manifest: a dimension's name and size disagree");
          if (symbolic && !wharf::check_fqn("dimension", t.dim_names[d]).ok())
            fail("manifest: a symbolic dimension with an invalid name accepted");
          if ((t.dim_name_c[d] == nullptr) != t.dim_names[d].empty()) fail("manifest: dim_name_c disagrees");
          if (t.dim_max[d] >= 0 && t.dim_min[d] > t.dim_max[d]) fail("manifest: min > max accepted");
          if (!symbolic && (t.dim_min[d] != t.shape[d] || t.dim_max[d] != t.shape[d]))
            fail("manifest: a fixed dimension's min/max is not its size");
        }
      }
  }
  std::sort(methods.begin(), methods.end());
  if (std::adjacent_find(methods.begin(), methods.end()) != methods.end()) fail("manifest: a method name twice");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using wharf::io::SafetensorsFile;
  // Copy into an exact-size heap block so a read one byte past the input is an ASan error
  // (libFuzzer's own buffer may have slack behind it).
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size == 0 ? 1 : size]);
  if (size) std::memcpy(buf.get(), data, size);

  fuzz_index(buf.get(), size);
  fuzz_zip(buf.get(), size);
  fuzz_manifest(buf.get(), size);

  std::unique_ptr<SafetensorsFile> file;
  wharf::Status st = SafetensorsFile::parse(buf.get(), size, &file);
  if (!st.ok()) {
    if (st.code() != wharf::Code::kDataCorrupt && st.code() != wharf::Code::kUnsupported)
      fail("rejection that is not kDataCorrupt or kUnsupported");
    // Whatever the file holds, the message is valid UTF-8 without control characters.
    check_message(st.message());
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
    // The reference folds the count left to right and refuses the first overflow, even when a
    // later dimension is 0.
    uint64_t n = 1;
    for (int64_t d : t.shape) {
      if (d < 0) fail("negative dim accepted");
      if (!wharf::checked_mul(n, static_cast<uint64_t>(d), &n)) fail("overflowing shape accepted");
    }
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
    uint64_t bits;
    if (!wharf::checked_mul(n, wharf::dtype_bits(t.dtype), &bits) || bits % 8 != 0 || bits / 8 != t.end - t.begin)
      fail("size does not match shape");
    if (m.nbytes() != bits / 8) fail("TensorMeta sizes the tensor differently");
    const auto* p = static_cast<const uint8_t*>(t.data);
    if (t.begin > t.end || p != lo + t.begin || p + (t.end - t.begin) > hi) fail("range outside data");
    if (file->find(t.name) != &t) fail("find() disagrees with tensors()");
    for (uint64_t i = 0; i < t.end - t.begin; ++i) checksum += p[i];  // touch every byte
  }
  // Non-empty ranges are pairwise disjoint (quadratic, but fuzz inputs hold few tensors), a
  // zero-size tensor is never strictly inside another, and the ranges cover every byte.
  const auto& ts = file->tensors();
  uint64_t covered = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    covered += ts[i].end - ts[i].begin;
    for (size_t j = 0; j < ts.size(); ++j) {
      if (i == j) continue;
      if (ts[i].begin < ts[i].end && ts[j].begin < ts[j].end && ts[i].begin < ts[j].end && ts[j].begin < ts[i].end)
        fail("overlapping ranges accepted");
      if (ts[j].begin == ts[j].end && ts[i].begin < ts[j].begin && ts[j].begin < ts[i].end)
        fail("zero-size tensor inside another accepted");
    }
  }
  if (covered != file->data_size()) fail("data section not covered exactly (hole or trailing bytes accepted)");
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
