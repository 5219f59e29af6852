// The C boundary: turning internal Status values into wharf_status*, catching every
// exception before it reaches C, and reading versioned option structs.
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "core/status.h"
#include "wharf/wharf.h"

struct wharf_status {
  wharf_code code;
  std::string message;
};

namespace wharf {
namespace api {

// The integer a caller stored in a C enum field or parameter. C lets any int sit in an enum
// object, but in C++ loading an unscoped enum outside its enumerators' range is undefined
// (UBSan reports it), so the API layer reads caller enums as their bytes and validates the
// integer.
template <class E>
int32_t enum_int(const E& e) noexcept {
  static_assert(std::is_enum<E>::value && sizeof(E) == sizeof(int32_t), "a 32-bit C enum");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// nullptr for OK. Never throws: if the status itself cannot be allocated, a static
// out-of-memory status is returned (wharf_status_free knows not to free it).
wharf_status* to_c(const Status& st) noexcept;
wharf_status* make_status(Code code, const char* message) noexcept;

// Runs f (returning Status) with every exception turned into a status naming `fn`.
template <class F>
wharf_status* guarded(const char* fn, F&& f) noexcept {
  try {
    return to_c(f());
  } catch (const std::bad_alloc&) {
    return make_status(Code::kOutOfMemory, "host memory exhausted");
  } catch (const std::exception& e) {
    try {
      return to_c(Internal(std::string(fn) + ": unexpected exception: " + e.what()));
    } catch (...) {
      return make_status(Code::kInternal, "unexpected exception");
    }
  } catch (...) {
    return make_status(Code::kInternal, "unexpected non-standard exception");
  }
}

// Copies the caller's options struct over `defaults`, reading only the bytes its
// struct_size covers (older headers) and ignoring trailing fields of newer headers.
template <class T>
Status read_options(const T* in, T* defaults, const char* what) {
  if (!in) return Status::Ok();
  if (in->struct_size < sizeof(uint32_t))
    return InvalidArgument(std::string(what) + ": struct_size " + std::to_string(in->struct_size) +
                           " is too small; call " + what + "_init first");
  size_t n = in->struct_size < sizeof(T) ? in->struct_size : sizeof(T);
  std::memcpy(static_cast<void*>(defaults), in, n);
  defaults->struct_size = sizeof(T);
  return Status::Ok();
}

// Writes `full` into the caller's output struct, up to the caller's struct_size.
template <class T>
Status write_output(const T& full, T* out, const char* what) {
  if (!out) return InvalidArgument(std::string(what) + ": output pointer is NULL");
  if (out->struct_size < sizeof(uint32_t))
    return InvalidArgument(std::string(what) + ": output struct_size " +
                           std::to_string(out->struct_size) + " is too small; set it to sizeof the struct");
  uint32_t size = out->struct_size;
  size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(static_cast<void*>(out), &full, n);
  out->struct_size = size;
  return Status::Ok();
}

#define WHARF_API_REQUIRE(cond, what) \
  do {                                \
    if (!(cond)) return ::wharf::InvalidArgument(what); \
  } while (0)

}  // namespace api
}  // namespace wharf
