// SPDX-License-Identifier: Apache-2.0
// safetensors writer: validate everything, build the header, then stream the data through a
// buffer into a temporary file that is fsynced and renamed over the destination.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <system_error>
#include <unordered_set>

#include "core/checked.h"
#include "core/text.h"
#include "io/json.h"
#include "io/safetensors.h"

namespace wharf::io {
namespace {

std::string errno_text(int err) { return std::generic_category().message(err); }

// Buffers small writes (the header, small tensors, element-by-element gathers) and passes large
// contiguous tensors straight to write(2).
class FileWriter {
 public:
  explicit FileWriter(int fd) : fd_(fd), buf_(kBufferBytes) {}

  bool append(const void* p, size_t n) {
    if (n > kBufferBytes - used_ && !flush()) return false;
    if (n >= kBufferBytes) return write_all(static_cast<const uint8_t*>(p), n);
    std::memcpy(buf_.data() + used_, p, n);
    used_ += n;
    return true;
  }

  bool flush() {
    const size_t n = used_;
    used_ = 0;
    return write_all(buf_.data(), n);
  }

  int error() const { return error_; }

 private:
  static constexpr size_t kBufferBytes = size_t(1) << 20;

  bool write_all(const uint8_t* p, size_t n) {
    while (n > 0) {
      // Linux transfers at most ~2 GiB per call; ask for 1 GiB at a time.
      const ssize_t w = ::write(fd_, p, std::min(n, size_t(1) << 30));
      if (w < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      if (w == 0) {  // no progress and no error: do not spin
        error_ = EIO;
        return false;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  int fd_;
  std::vector<uint8_t> buf_;
  size_t used_ = 0;
  int error_ = 0;
};

// Appends the elements of a non-contiguous view in row-major order. Rows whose last dimension
// has stride 1 are copied whole; otherwise element by element (dtype size bytes each). The
// caller has validated the meta, so offsets cannot overflow and stay within extent_bytes().
bool write_gathered(FileWriter* w, const TensorMeta& m, const uint8_t* src) {
  if (m.numel() == 0) return true;
  const size_t es = dtype_size(m.dtype);
  const size_t nd = m.shape.size();  // >= 1: a scalar has no strides and is always contiguous
  const uint64_t inner = static_cast<uint64_t>(m.shape[nd - 1]);
  const uint64_t inner_stride = static_cast<uint64_t>(m.strides[nd - 1]);
  std::vector<int64_t> idx(nd, 0);  // odometer over the outer nd - 1 dimensions
  for (;;) {
    uint64_t base = 0;
    for (size_t d = 0; d + 1 < nd; ++d) base += static_cast<uint64_t>(idx[d]) * static_cast<uint64_t>(m.strides[d]);
    if (inner_stride == 1) {
      if (!w->append(src + base * es, inner * es)) return false;
    } else {
      for (uint64_t j = 0; j < inner; ++j)
        if (!w->append(src + (base + j * inner_stride) * es, es)) return false;
    }
    // Advance the odometer; when every outer dimension has wrapped, all rows are written.
    size_t d = nd - 1;
    for (;;) {
      if (d == 0) return true;
      --d;
      if (++idx[d] < m.shape[d]) break;
      idx[d] = 0;
    }
  }
}

std::string tensor_what(const TensorToWrite& t) { return "tensor " + quote_name(t.name); }

Status validate_inputs(const std::vector<TensorToWrite>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata, std::vector<uint64_t>* sizes) {
  std::unordered_set<std::string_view> keys;
  for (const auto& kv : metadata) {
    const std::string what = "metadata key " + quote_name(kv.first);
    // The reader refuses NUL in metadata (it would cut a C string short), so never write one.
    if (kv.first.find('\0') != std::string::npos) return InvalidArgument(what + " contains a NUL byte");
    if (kv.second.find('\0') != std::string::npos) return InvalidArgument(what + ": value contains a NUL byte");
    if (!valid_utf8(kv.first)) return InvalidArgument(what + " is not valid UTF-8");
    if (!valid_utf8(kv.second)) return InvalidArgument(what + ": value is not valid UTF-8");
    if (!keys.insert(kv.first).second) return InvalidArgument(what + " appears twice");
  }

  std::unordered_set<std::string_view> names;
  sizes->reserve(tensors.size());
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorToWrite& t = tensors[i];
    if (t.name.empty()) return InvalidArgument("tensor #" + std::to_string(i) + " has an empty name");
    const std::string what = tensor_what(t);
    // Each of these would make a file the reader rejects (or reads differently).
    if (t.name == "__metadata__") return InvalidArgument(what + ": the name is reserved for metadata");
    WHARF_RETURN_IF_ERROR(check_fqn("tensor", t.name));  // NUL, UTF-8
    if (!names.insert(t.name).second) return InvalidArgument(what + ": name appears twice");
    WHARF_RETURN_IF_ERROR(t.meta.validate(what));
    if (t.meta.device_type != DeviceType::kCpu)
      return InvalidArgument(what + ": data is on a device (device_type " +
                             std::to_string(static_cast<int>(t.meta.device_type)) +
                             "); only CPU tensors can be written");
    const uint64_t nbytes = t.meta.nbytes();
    if (t.data == nullptr && nbytes > 0)
      return InvalidArgument(what + ": data is null but the tensor has " + std::to_string(nbytes) + " bytes");
    if (!checked_add(total, nbytes, &total)) return InvalidArgument(what + ": total data size overflows");
    sizes->push_back(nbytes);
  }
  return Status::Ok();
}

// The reference writer's order: by dtype alignment rank, descending (the 8-byte dtypes first,
// BOOL last), then by name (bytewise). Every tensor's size is a multiple of its dtype's
// alignment, so each tensor lands naturally aligned relative to the data section, which the
// header padding aligns to 8 bytes in the file.
std::vector<size_t> reference_order(const std::vector<TensorToWrite>& tensors) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int ra = dtype_safetensors_rank(tensors[a].meta.dtype), rb = dtype_safetensors_rank(tensors[b].meta.dtype);
    if (ra != rb) return ra > rb;
    return tensors[a].name < tensors[b].name;  // unique (validated); char_traits compares bytes unsigned
  });
  return order;
}

std::string build_header(const std::vector<TensorToWrite>& tensors,
                         const std::vector<std::pair<std::string, std::string>>& metadata,
                         const std::vector<uint64_t>& sizes, const std::vector<size_t>& order) {
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i) h += ',';
      json::append_quoted(&h, metadata[i].first);
      h += ':';
      json::append_quoted(&h, metadata[i].second);
    }
    h += '}';
  }
  uint64_t offset = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    if (k || !metadata.empty()) h += ',';
    json::append_quoted(&h, tensors[i].name);
    h += ":{\"dtype\":\"";
    h += dtype_name(tensors[i].meta.dtype);
    h += "\",\"shape\":[";  // compact, as serde_json writes it: the header is byte for byte the reference's
    for (size_t d = 0; d < tensors[i].meta.shape.size(); ++d) {
      if (d) h += ',';
      h += std::to_string(tensors[i].meta.shape[d]);
    }
    h += ']';
    h += ",\"data_offsets\":[" + std::to_string(offset) + ",";
    offset += sizes[i];
    h += std::to_string(offset) + "]}";
  }
  h += '}';
  // Pad with spaces (allowed by the format) so the data section starts 8-byte aligned in the
  // file and hence in a page-aligned mapping of it.
  h.append((8 - h.size() % 8) % 8, ' ');
  return h;
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Owns the temporary file until it is renamed; removes it on every early return.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  int* fd() { return &fd_; }
  void closed() { fd_ = -1; }
  void committed() { committed_ = true; }  // renamed, or never created: leave the path alone
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

Status write_impl(const std::string& path, const std::vector<TensorToWrite>& tensors,
                  const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::vector<uint64_t> sizes;
  WHARF_RETURN_IF_ERROR(validate_inputs(tensors, metadata, &sizes));
  const std::vector<size_t> order = reference_order(tensors);
  const std::string header = build_header(tensors, metadata, sizes, order);
  if (header.size() > kMaxSafetensorsHeaderBytes)
    return InvalidArgument("writing " + quote_path(path) + ": the header would be " + std::to_string(header.size()) +
                           " bytes, more than the " + std::to_string(kMaxSafetensorsHeaderBytes) + " a reader accepts");

  // pid + a process-wide counter: concurrent writers of one path, in this process or another,
  // never share a temporary file. A stale one left by a crashed process is simply truncated.
  static std::atomic<uint64_t> counter{0};
  TempFile tmp(path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++));
  const auto fail = [&](const char* what, int err) {
    return IoError("writing " + quote_path(path) + ": " + what + " " + quote_path(tmp.path()) + ": " + errno_text(err));
  };

  // Whatever already sits at the temporary name must not make the open block or redirect the
  // write: O_NONBLOCK makes a FIFO fail (ENXIO) or open at once instead of waiting for a reader,
  // O_NOFOLLOW refuses a symbolic link, and fstat refuses anything but a regular file.
  do {
    *tmp.fd() =
        ::open(tmp.path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY, 0644);
  } while (*tmp.fd() < 0 && errno == EINTR);
  if (*tmp.fd() < 0) {
    const int err = errno;
    tmp.committed();  // nothing was created; a file of that name, if any, is not ours
    return fail("cannot create", err);
  }
  struct stat st;
  if (::fstat(*tmp.fd(), &st) != 0) return fail("cannot stat", errno);
  if (!S_ISREG(st.st_mode)) {
    tmp.committed();  // not a file we created: leave it alone
    return IoError("writing " + quote_path(path) + ": the temporary " + quote_path(tmp.path()) +
                   " exists and is not a regular file");
  }
  const int flags = ::fcntl(*tmp.fd(), F_GETFL);
  if (flags < 0 || ::fcntl(*tmp.fd(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    return fail("cannot clear O_NONBLOCK on", errno);

  FileWriter w(*tmp.fd());
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
  bool ok = w.append(len, sizeof len) && w.append(header.data(), header.size());
  for (size_t k = 0; ok && k < order.size(); ++k) {
    const size_t i = order[k];
    const TensorMeta& m = tensors[i].meta;
    const auto* src = static_cast<const uint8_t*>(tensors[i].data);
    ok = m.contiguous() ? (sizes[i] == 0 || w.append(src, sizes[i])) : write_gathered(&w, m, src);
  }
  ok = ok && w.flush();
  if (!ok) return fail("cannot write", w.error());

  // fsync before rename: otherwise a crash can leave the new name pointing at a file whose data
  // never reached the disk.
  if (::fsync(*tmp.fd()) != 0) return fail("cannot fsync", errno);
  const int fd = *tmp.fd();
  tmp.closed();
  if (::close(fd) != 0) return fail("cannot close", errno);  // e.g. deferred NFS write errors
  if (::rename(tmp.path().c_str(), path.c_str()) != 0) {
    const int err = errno;
    return IoError("writing " + quote_path(path) + ": cannot rename " + quote_path(tmp.path()) +
                   " to it: " + errno_text(err));
  }
  tmp.committed();

  // Persist the directory entry too. Best effort: the file is already in place, and some file
  // systems refuse fsync on a directory; a failure here is not a failed write.
  const int dfd = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

}  // namespace

Status write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                         const std::vector<std::pair<std::string, std::string>>& metadata) {
  try {
    return write_impl(path, tensors, metadata);
  } catch (const std::bad_alloc&) {
    return OutOfMemory("writing " + quote_path(path) + ": out of host memory");
  } catch (const std::exception& e) {
    return Internal("writing " + quote_path(path) + ": " + e.what());
  }
}

}  // namespace wharf::io
