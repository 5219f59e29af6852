// SPDX-License-Identifier: Apache-2.0
// Opens a compiled model's library: a `.so` as is, or the one inside a PyTorch `.pt2`
// package (torch._inductor.aoti_compile_and_package), read from the package's ZIP entry
// `<archive>/data/aotinductor/<model>/<hash>.so` into an anonymous memory file (memfd) and
// opened from there: no temporary file on disk, nothing left behind. The package's weights,
// if any, are not read: Wharf's model loader takes weights from the caller's map.
//
// Every library is opened through a descriptor Wharf holds, by the name
// `/proc/self/fd/<n>`, so each load gets the file it names: the dynamic loader matches an
// already-loaded object first by its name string, then by the file's (st_dev, st_ino)
// (docs/decisions.md, "Every model load gets the library it names").
#pragma once

#include <memory>
#include <string>

#include "core/status.h"

namespace wharf {

// A model library the dynamic loader opened; dlclose()d when destroyed. Safe to create and
// destroy from many threads.
class ModelLibrary {
 public:
  ~ModelLibrary();
  ModelLibrary(const ModelLibrary&) = delete;
  ModelLibrary& operator=(const ModelLibrary&) = delete;

  // The dlopen() handle (for dlsym).
  void* handle() const { return handle_; }

 private:
  friend Status open_model_library(const std::string&, int, std::unique_ptr<ModelLibrary>*, std::string*);
  ModelLibrary(void* handle, unsigned long long dev, unsigned long long ino) : handle_(handle), dev_(dev), ino_(ino) {}

  void* handle_;
  unsigned long long dev_, ino_;  // the file it was opened from (the key of its descriptor)
};

// dlopen()s the model at `path` (a file path; relative to the working directory) with
// `flags`. A missing file is NOT_FOUND; a path that is not a regular file (a FIFO, a
// directory, a device) is IO_ERROR naming it, refused before anything could block on it; a
// package that cannot be read or holds no single model library is an error status (naming
// the package and the entry). A library the dynamic loader refuses leaves *out null and
// sets *dl_error (the caller words it; it names the package's entry, never the descriptor).
// Two loads of one file (same device and inode) share one loaded object; a file replaced at
// the same path, and every package, is a library of its own.
Status open_model_library(const std::string& path, int flags, std::unique_ptr<ModelLibrary>* out,
                          std::string* dl_error);

// Whether `path` names a `.pt2` package (by its suffix).
bool is_model_package(const std::string& path);

// Descriptors Wharf holds for model libraries: of libraries in use, and of those the dynamic
// loader keeps after dlclose (AOTInductor libraries are never unloaded). For tests.
size_t model_library_descriptors();

}  // namespace wharf
