/* SPDX-License-Identifier: Apache-2.0 */
// The C boundary: turning internal Status values into wharf_status*, catching every
// exception before it reaches C, and reading and writing versioned structs.
#pragma once

// The API layer implements the experimental tier too.
#ifndef WHARF_EXPERIMENTAL
#define WHARF_EXPERIMENTAL 1
#endif

#include <cstddef>
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

// --- versioned structs ------------------------------------------------------------------
//
// Every struct that crosses the ABI carries struct_size, the size the caller compiled it
// with. The rules (wharf.h, "Structs"):
// - a size must end on a field boundary of the library's layout (the start or end of a
//   field, or the whole struct): a size that ends inside a field is refused
//   (INVALID_ARGUMENT), as is one below the smallest layout or above kMaxStructSize;
// - an input struct larger than the library's may have only zero bytes past the library's
//   size (the Linux copy_struct_from_user rule); a non-zero byte there is a field of a newer
//   header this library cannot honour (UNSUPPORTED, naming the struct and the offset);
// - fields the caller's size does not cover take their defaults.
// Every release's sizeof is a field boundary of the next because fields are appended
// starting at or after the previous release's sizeof (never in its tail padding): keep it so.

// Largest struct_size accepted (as Linux, a page): anything larger is a caller's bug, and
// reading that far past a small struct could fault.
constexpr size_t kMaxStructSize = 4096;

struct FieldInfo {
  const char* name;
  size_t offset;
  size_t size;
};

struct StructLayout {
  const char* name;         // "wharf_update_options"
  const FieldInfo* fields;  // the library's fields, in offset order (struct_size first)
  size_t num_fields;
  size_t size;      // sizeof the struct in this library
  size_t min_size;  // the smallest struct_size accepted
};

#define WHARF_FIELD(T, f) \
  ::wharf::api::FieldInfo { #f, offsetof(T, f), sizeof(static_cast <T*>(nullptr)->f) }

// The layout of each versioned struct (defined in convert.cpp).
const StructLayout& layout_of(const wharf_runtime_options*);
const StructLayout& layout_of(const wharf_update_options*);
const StructLayout& layout_of(const wharf_session_options*);
const StructLayout& layout_of(const wharf_container_options*);
const StructLayout& layout_of(const wharf_tensor_view*);
const StructLayout& layout_of(const wharf_constant_decl*);
const StructLayout& layout_of(const wharf_state_decl*);
const StructLayout& layout_of(const wharf_device_info*);
const StructLayout& layout_of(const wharf_memory_stats*);
const StructLayout& layout_of(const wharf_constant_info*);
const StructLayout& layout_of(const wharf_state_info*);
const StructLayout& layout_of(const wharf_weight_store_stats*);
const StructLayout& layout_of(const struct wharf_model_options*);              // experimental (model_api.cpp)
const StructLayout& layout_of(const struct wharf_model_package_options*);      // experimental (model_package_api.cpp)
const StructLayout& layout_of(const struct wharf_model_package_tensor_info*);  // experimental (model_package_api.cpp)
const StructLayout& layout_of(const struct wharf_graph_options*);              // experimental (model_api.cpp)
const StructLayout& layout_of(const struct wharf_graph_stats*);                // experimental (model_api.cpp)
const StructLayout& layout_of(const struct wharf_graph_bucket_info*);          // experimental (model_api.cpp)
const StructLayout& layout_of(const struct wharf_state_arena_stats*);          // experimental (convert.cpp)

// The struct_size stored in the caller's struct at `p` (its first four bytes).
uint32_t stated_size(const void* p);
// Checks a caller's non-zero struct_size `size` for a struct
// the library reads at `p` (`what` names it in messages, e.g. "wharf_update_options" or
// "constant declaration 3"): field boundary, bounds, and zero bytes past the library's size.
Status check_input_size(const void* p, size_t size, const StructLayout& L, const std::string& what);
// Checks the struct_size of an output struct; returns how many bytes to write.
Status check_output_size(size_t size, const StructLayout& L, const std::string& what, size_t* n);

// Copies the caller's struct over `defaults`, reading only the bytes its struct_size covers
// (older headers take defaults for the rest); refuses what check_input_size refuses. For
// structs that begin with struct_size; NULL `in` leaves the defaults.
template <class T>
Status read_options(const T* in, T* defaults, const char* what) {
  if (!in) return Status::Ok();
  const StructLayout& L = layout_of(in);
  const uint32_t size = stated_size(in);
  if (size < L.min_size)
    return InvalidArgument(std::string(what) + ": struct_size " + std::to_string(size) + " is too small; call " + what +
                           "_init first");
  WHARF_RETURN_IF_ERROR(check_input_size(in, size, L, what));
  const size_t n = size < sizeof(T) ? size : sizeof(T);
  std::memcpy(static_cast<void*>(defaults), in, n);
  defaults->struct_size = sizeof(T);
  return Status::Ok();
}

// Reads one input struct (a tensor view, a declaration): zero-filled `*out`, then the
// caller's bytes as far as its struct_size, which must be set (check_input_size's rules).
// `name()` names the struct in the error; it is called only when the check fails (hot paths
// read a struct per tensor per call and need no string then).
template <class T, class Name>
Status read_struct_named(const T* in, T* out, Name&& name) {
  std::memset(static_cast<void*>(out), 0, sizeof(T));
  const StructLayout& L = layout_of(in);
  const size_t size = stated_size(in);
  if (!check_input_size(in, size, L, std::string()).ok()) return check_input_size(in, size, L, name());
  std::memcpy(static_cast<void*>(out), in, size < sizeof(T) ? size : sizeof(T));
  out->struct_size = sizeof(T);
  return Status::Ok();
}
template <class T>
Status read_struct(const T* in, T* out, const std::string& what) {
  return read_struct_named(in, out, [&what] { return what; });
}

// An array of input structs: element i lives at base + i * stride, the stride being element
// 0's struct_size (a caller built against another header has other sizes), and every
// element must state the same.
template <class T>
class StructArray {
 public:
  Status init(const T* base, size_t count, const char* what) {
    base_ = reinterpret_cast<const unsigned char*>(base);
    count_ = count;
    if (count == 0) return Status::Ok();
    stride_ = stated_size(base);
    // Named only when the check fails (the same check again, with the name).
    if (check_input_size(base, stride_, layout_of(base), std::string()).ok()) return Status::Ok();
    return check_input_size(base, stride_, layout_of(base), std::string(what) + " 0");
  }
  // Reads element i into *out (zero-filled past the caller's size).
  Status get(size_t i, T* out, const char* what) const {
    const T* p = reinterpret_cast<const T*>(base_ + i * stride_);
    const uint32_t s = stated_size(p);
    if (s != stride_)
      return InvalidArgument(std::string(what) + " " + std::to_string(i) + ": struct_size " + std::to_string(s) +
                             " differs from element 0's " + std::to_string(stride_) +
                             " (every element of one array states the same size)");
    return read_struct_named(p, out, [what, i] { return std::string(what) + " " + std::to_string(i); });
  }

 private:
  const unsigned char* base_ = nullptr;
  size_t count_ = 0;
  uint32_t stride_ = 0;
};

// The body of every wharf_X_options_init_sized: writes `defaults` (with struct_size set to
// what is written) into the caller's struct of `struct_size` bytes, never past it. NULL or a
// size below 4 is a no-op.
template <class T>
void init_sized(T* opts, size_t struct_size, T defaults) noexcept {
  if (!opts || struct_size < sizeof(uint32_t)) return;
  const size_t n = struct_size < sizeof(T) ? struct_size : sizeof(T);
  defaults.struct_size = uint32_t(n);
  std::memcpy(static_cast<void*>(opts), &defaults, n);
}

// Writes `full` into the caller's output struct (which begins with struct_size), up to the
// caller's struct_size.
template <class T>
Status write_output(const T& full, T* out, const char* what) {
  if (!out) return InvalidArgument(std::string(what) + ": output pointer is NULL");
  const uint32_t size = out->struct_size;
  if (size < sizeof(uint32_t))
    return InvalidArgument(std::string(what) + ": output struct_size " + std::to_string(size) +
                           " is too small; set it to sizeof the struct");
  size_t n = 0;
  WHARF_RETURN_IF_ERROR(check_output_size(size, layout_of(out), what, &n));
  std::memcpy(static_cast<void*>(out), &full, n);
  out->struct_size = size;
  return Status::Ok();
}

// The size an output view's caller states: 0, garbage from an uninitialised struct (any size
// below the 0.3 layout, above kMaxStructSize or not a multiple of the view's alignment), or a
// size cutting a field gives the 0.3 layout (every caller has at least that much). Garbage
// that looks like a newer header's larger view (64, 72, ...) cannot be told from one: an
// array of output views must state its elements' size.
size_t output_view_size(const wharf_tensor_view* out) noexcept;

// An array of output views the library fills, walked at the element size its first element
// states (see output_view_size), so a caller built against another header's view is written
// at its own stride. The stride is read once, before any element is written (writing one
// sets its struct_size to the bytes written).
class OutputViewArray {
 public:
  explicit OutputViewArray(wharf_tensor_view* base) noexcept
      : base_(reinterpret_cast<unsigned char*>(base)), stride_(base ? output_view_size(base) : 0) {}
  wharf_tensor_view* at(size_t i) const noexcept { return reinterpret_cast<wharf_tensor_view*>(base_ + i * stride_); }

 private:
  unsigned char* base_;
  size_t stride_;
};

// Writes an output tensor view as far as the caller's struct_size covers it (the 0.3 layout
// for a value output_view_size takes for garbage: every caller has at least that much); on return
// struct_size says how many bytes were written.
void write_view(const wharf_tensor_view& full, wharf_tensor_view* out) noexcept;

#define WHARF_API_REQUIRE(cond, what)                   \
  do {                                                  \
    if (!(cond)) return ::wharf::InvalidArgument(what); \
  } while (0)

}  // namespace api
}  // namespace wharf
