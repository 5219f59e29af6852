// SPDX-License-Identifier: Apache-2.0
#include "models/package.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "core/sync.h"
#include "core/text.h"
#include "io/fd.h"
#include "io/zip_archive.h"

namespace wharf {
namespace {

// std::generic_category().message is thread-safe, unlike strerror.
std::string errno_text(int err) { return std::generic_category().message(err); }

using io::Fd;

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "an unknown kind of file";
}

// Opens a model library file for reading. O_NONBLOCK: opening a FIFO waits for a writer
// (forever if none comes), and so would the dynamic loader's own open; with it the open
// returns at once and fstat refuses whatever is not a regular file before anything reads it.
// (The loader reopens the file through /proc/self/fd, a new open file description: the
// flag does not reach it.) O_NOCTTY: a terminal must not become the controlling terminal.
Status open_regular_file(const std::string& path, Fd* out) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    // ENOTDIR: a component of the path is a regular file, so the file does not exist either.
    if (err == ENOENT || err == ENOTDIR) return NotFound("no file " + quote_path(path));
    return IoError("cannot open " + quote_path(path) + ": " + errno_text(err));
  }
  Fd f(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError("cannot stat " + quote_path(path) + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    return IoError("cannot open " + quote_path(path) + ": not a regular file (" + file_type_name(st.st_mode) + ")");
  *out = std::move(f);
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

// Reads the package's model library into an anonymous memory file (*fd), sealed so its
// bytes cannot change once loaded, and names the library's entry in *entry.
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
    return InvalidArgument(what + " holds " + std::to_string(libs.size()) +
                           " model libraries and none is the default "
                           "'model': " +
                           names);
  }
  const uint8_t* bytes = nullptr;
  uint64_t n = 0;
  WHARF_RETURN_IF_ERROR(z->read(*libs[0], &bytes, &n));
  Fd mem(::memfd_create("wharf-model", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (mem.fd < 0) return IoError(what + ": memfd_create failed: " + errno_text(errno));
  for (uint64_t off = 0; off < n;) {
    const ssize_t w = ::write(mem.fd, bytes + off, size_t(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return IoError(what + ": writing its model library to a memory file failed: " + errno_text(errno));
    off += uint64_t(w);
  }
  if (::fcntl(mem.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return IoError(what + ": sealing its model library's memory file failed: " + errno_text(errno));
  *fd = std::move(mem);
  *entry = libs[0]->name;
  return Status::Ok();
}

// --- the names the dynamic loader knows model libraries by ----------------------------------
//
// glibc's dlopen returns an already-loaded object when the name it is given equals that
// object's name (or one of the names it was opened by), and otherwise when the file it opens
// has the object's (st_dev, st_ino). A library opened as "/proc/self/fd/<n>" keeps that name
// after n is closed, so a later library opened through a descriptor of the same number would
// be handed the first one. Wharf therefore holds the descriptor of every library it opened
// while any loaded object may answer to its name, and opens a file that is already loaded
// through that same descriptor, so one file has one name and one name means one file.

using FileKey = std::pair<unsigned long long, unsigned long long>;  // st_dev, st_ino

std::string loader_name(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// The object that answers to `fd`'s name, by that name or by the file behind `fd`, or null.
// RTLD_NOLOAD loads nothing (a hit is one more reference: dlclose it). The descriptor is a
// regular file or a memory file of Wharf's, so the loader's open of it cannot block.
void* loaded_as(int fd) {
  void* h = dlopen(loader_name(fd).c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!h) dlerror();  // clear the refusal so that the next dlerror() reports its own call
  return h;
}

// A descriptor some library was opened through, and the ModelLibrary objects using it.
// `aliases`: other descriptors of the same file whose names the loader attached to the
// library while Wharf probed them (avoid_taken_names); they live and die with `fd`'s name.
struct Held {
  Fd fd;
  std::vector<Fd> aliases;
  size_t users = 0;
};

struct Registry {
  Mutex mu;
  std::map<FileKey, Held> held WHARF_GUARDED_BY(mu);
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: models may be freed during exit
  return *r;
}

// Closes the descriptors nobody uses whose libraries the loader has unloaded. AOTInductor
// libraries define STB_GNU_UNIQUE symbols, which make glibc keep them loaded until exit:
// their descriptors stay (one per library file, whatever the number of loads).
void sweep(Registry& r) WHARF_REQUIRES(r.mu) {
  for (auto it = r.held.begin(); it != r.held.end();) {
    void* h = it->second.users ? nullptr : loaded_as(it->second.fd.fd);
    if (h) dlclose(h);
    if (it->second.users == 0 && !h)
      it = r.held.erase(it);
    else
      ++it;
  }
}

// Moves *fd (a file not yet in the registry) to a number whose name no other object answers
// to. One does when code outside Wharf opened a library as /proc/self/fd/<n> and closed n
// while the library stayed loaded. Such a number is kept open meanwhile, so the next dup
// cannot return it. A name answered by the same object as the next number's is the file
// itself, already loaded under some other name: dlopen returns that object, rightly. A probe
// that finds an object by its file gives it the probed name as well, so every number whose
// name now belongs to the file's object is kept in *aliases, never left to be reused.
Status avoid_taken_names(Fd* fd, std::vector<Fd>* aliases, const std::string& what) {
  std::vector<std::pair<Fd, void*>> taken;  // numbers whose names answer for some object, and it
  void* ours = nullptr;                     // the object the file itself is loaded as, if any
  void* p = loaded_as(fd->fd);
  while (p) {
    Fd next(::fcntl(fd->fd, F_DUPFD_CLOEXEC, 0));
    if (next.fd < 0) {
      const int err = errno;
      dlclose(p);
      return IoError(what + ": duplicating its descriptor failed: " + errno_text(err));
    }
    void* q = loaded_as(next.fd);
    dlclose(p);  // still loaded (someone else holds it); p stays a valid identity below
    if (q == p) {
      dlclose(q);
      ours = p;
      aliases->push_back(std::move(next));
      break;
    }
    taken.emplace_back(std::move(*fd), p);
    *fd = std::move(next);
    p = q;
  }
  for (auto& t : taken)
    if (ours && t.second == ours) aliases->push_back(std::move(t.first));
  return Status::Ok();
}

// The loader's message without the descriptor's name it starts with (the caller names the file).
std::string without_name(const std::string& e, const std::string& name) {
  const std::string prefix = name + ": ";
  return e.compare(0, prefix.size(), prefix) == 0 ? e.substr(prefix.size()) : e;
}

}  // namespace

bool is_model_package(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".pt2") == 0;
}

size_t model_library_descriptors() {
  Registry& r = registry();
  MutexLock lock(r.mu);
  sweep(r);
  return r.held.size();
}

Status open_model_library(const std::string& path, int flags, std::unique_ptr<ModelLibrary>* out,
                          std::string* dl_error) {
  out->reset();
  dl_error->clear();
  Fd file;
  std::string context;  // which entry of a package the loader's refusal is about
  if (is_model_package(path)) {
    std::string entry;
    WHARF_RETURN_IF_ERROR(extract_model_library(path, &file, &entry));
    context = "entry " + quote_name(entry) + ": ";
  } else {
    WHARF_RETURN_IF_ERROR(open_regular_file(path, &file));
  }
  struct stat st;
  if (::fstat(file.fd, &st) != 0) return IoError("cannot stat " + quote_path(path) + ": " + errno_text(errno));
  const FileKey key{static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino)};
  // Allocated before the library is opened, so that nothing can fail between dlopen and its owner.
  std::unique_ptr<ModelLibrary> lib(new ModelLibrary(nullptr, key.first, key.second));

  Registry& r = registry();
  MutexLock lock(r.mu);
  auto it = r.held.find(key);
  if (it == r.held.end()) {
    std::vector<Fd> aliases;
    WHARF_RETURN_IF_ERROR(avoid_taken_names(&file, &aliases, "model library " + quote_path(path)));
    it = r.held.emplace(key, Held{std::move(file), std::move(aliases), 0}).first;
  }
  // Otherwise the file is held already (loaded, or kept by the loader): its one name finds it,
  // and `file` is closed.
  const std::string name = loader_name(it->second.fd.fd);
  void* h = dlopen(name.c_str(), flags);
  if (!h) {
    const char* e = dlerror();
    *dl_error = context + without_name(e ? e : "unknown error", name);
    sweep(r);
    return Status::Ok();
  }
  ++it->second.users;
  lib->handle_ = h;
  *out = std::move(lib);
  return Status::Ok();
}

ModelLibrary::~ModelLibrary() {
  if (!handle_) return;
  Registry& r = registry();
  MutexLock lock(r.mu);
  dlclose(handle_);
  auto it = r.held.find({dev_, ino_});
  WHARF_DCHECK(it != r.held.end() && it->second.users > 0, "a loaded model library's descriptor is held");
  if (it != r.held.end()) --it->second.users;
  sweep(r);
}

}  // namespace wharf
