#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace wharf::io {
namespace {

// std::generic_category().message is thread-safe, unlike strerror.
std::string errno_text(int err) { return std::generic_category().message(err); }

Status errno_status(const std::string& what, const std::string& path, int err) {
  return IoError(what + " '" + path + "': " + errno_text(err));
}

}  // namespace

Status MappedFile::open(const std::string& path, std::unique_ptr<MappedFile>* out) {
  out->reset();
  // Allocate first: once the mapping exists nothing may throw before it has an owner.
  std::unique_ptr<MappedFile> file(new MappedFile(path, nullptr, 0));
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    // ENOTDIR: a component of the path is a regular file, so the file does not exist either.
    if (err == ENOENT || err == ENOTDIR)
      return NotFound("file '" + path + "' does not exist");
    return errno_status("cannot open", path, err);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_status("cannot stat", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("cannot map '" + path + "': not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* addr = nullptr;
  if (size > 0) {
    addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return errno_status("cannot mmap", path, err);
    }
  }
  ::close(fd);  // the mapping holds its own reference to the file
  file->data_ = static_cast<const uint8_t*>(addr);
  file->size_ = size;
  *out = std::move(file);
  return Status::Ok();
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace wharf::io
