// SPDX-License-Identifier: Apache-2.0
#include "models/package.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "core/text.h"
#include "io/zip_archive.h"

namespace wharf {
namespace {

// A descriptor closed on every path.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "an unknown kind of file";
}

// Opens `path` without blocking (O_NONBLOCK: opening a FIFO otherwise waits for a writer,
// forever if none comes) and checks that it is a regular file.
Status check_regular_file(const std::string& path) {
  Fd f;
  do {
    f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (f.fd < 0 && errno == EINTR);
  if (f.fd < 0) {
    const int err = errno;
    // ENOTDIR: a component of the path is a regular file, so the file does not exist either.
    if (err == ENOENT || err == ENOTDIR) return NotFound("no file " + quote_path(path));
    return IoError("cannot open " + quote_path(path) + ": " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(f.fd, &st) != 0) return IoError("cannot stat " + quote_path(path) + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return IoError("cannot open " + quote_path(path) + ": not a regular file (" + file_type_name(st.st_mode) + ")");
  return Status::Ok();
}

// The model library entries of a package: `*/data/aotinductor/<model>/<file>.so`.
std::vector<const io::ZipEntry*> model_libraries(const io::ZipArchive& z) {
  std::vector<const io::ZipEntry*> out;
  for (const io::ZipEntry& e : z.entries()) {
    const size_t at = e.name.find("/data/aotinductor/");
    if (at == std::string::npos || e.name.size() < 3 || e.name.compare(e.name.size() - 3, 3, ".so") != 0) continue;
    const std::string rest = e.name.substr(at + 18);  // "<model>/<file>.so"
    const size_t slash = rest.find('/');
    if (slash == std::string::npos || slash == 0 || rest.find('/', slash + 1) != std::string::npos) continue;
    out.push_back(&e);
  }
  return out;
}

// Reads the package's model library into an anonymous memory file (*fd) and names the
// library's entry in *entry.
Status extract_model_library(const std::string& path, Fd* fd, std::string* entry) {
  const std::string what = "package " + quote_path(path);
  std::unique_ptr<io::ZipArchive> z;
  WHARF_RETURN_IF_ERROR(io::ZipArchive::open(path, &z));
  std::vector<const io::ZipEntry*> libs = model_libraries(*z);
  if (libs.size() > 1) {
    // Several models in one package: the default one is named "model".
    std::vector<const io::ZipEntry*> dflt;
    for (const io::ZipEntry* e : libs)
      if (e->name.find("/data/aotinductor/model/") != std::string::npos) dflt.push_back(e);
    if (dflt.size() == 1) libs = dflt;
  }
  if (libs.empty())
    return InvalidArgument(what + " holds no compiled model (no entry <archive>/data/aotinductor/<model>/<file>.so)");
  if (libs.size() > 1) {
    std::string names;
    for (const io::ZipEntry* e : libs) names += (names.empty() ? "" : ", ") + quote_name(e->name);
    return InvalidArgument(what + " holds " + std::to_string(libs.size()) + " model libraries and none is the default "
                           "'model': " + names);
  }
  const uint8_t* bytes = nullptr;
  uint64_t n = 0;
  WHARF_RETURN_IF_ERROR(z->read(*libs[0], &bytes, &n));
  fd->fd = ::memfd_create("wharf-model", MFD_CLOEXEC);
  if (fd->fd < 0) return IoError(what + ": memfd_create failed: " + std::strerror(errno));
  for (uint64_t off = 0; off < n;) {
    const ssize_t w = ::write(fd->fd, bytes + off, size_t(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return IoError(what + ": writing its model library to a memory file failed: " + std::strerror(errno));
    off += uint64_t(w);
  }
  *entry = libs[0]->name;
  return Status::Ok();
}

}  // namespace

bool is_model_package(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".pt2") == 0;
}

Status open_model_library(const std::string& path, int flags, void** handle, std::string* dl_error) {
  *handle = nullptr;
  dl_error->clear();
  std::string target = path, context;
  Fd mem;  // a package's memory file; the mapping dlopen makes outlives the descriptor
  if (is_model_package(path)) {
    std::string entry;
    WHARF_RETURN_IF_ERROR(extract_model_library(path, &mem, &entry));
    target = "/proc/self/fd/" + std::to_string(mem.fd);
    // The loader names the memory file in its errors; say which entry it was.
    context = "entry " + quote_name(entry) + ": ";
  } else if (path.find('/') != std::string::npos) {
    // A path (not a bare name the loader searches for) that names nothing is NOT_FOUND, as
    // for a package; one that is not a regular file is IO_ERROR, as for a package (dlopen
    // would wait forever for a FIFO's writer); the loader's own refusals are the caller's to word.
    WHARF_RETURN_IF_ERROR(check_regular_file(path));
  }
  *handle = dlopen(target.c_str(), flags);
  if (!*handle) {
    const char* e = dlerror();
    *dl_error = context + (e ? e : "unknown error");
  }
  return Status::Ok();
}

}  // namespace wharf
