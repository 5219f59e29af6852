/* SPDX-License-Identifier: Apache-2.0 */
// Status: the internal error value. Everything below the api layer returns Status; the api
// layer turns it into a wharf_status*. Messages say what was being done and name the
// object at fault.
#pragma once

#include <string>
#include <utility>

namespace wharf {

// Mirrors wharf_code value for value (checked by a static_assert in the api layer).
enum class Code : int {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kAlreadyExists = 3,
  kOutOfMemory = 4,
  kResourceExhausted = 5,
  kFailedPrecondition = 6,
  kBusy = 7,
  kUnsupported = 8,
  kDeviceError = 9,
  kIoError = 10,
  kDataCorrupt = 11,
  kInternal = 12,
  kCancelled = 13,
};
// The largest code (codes are only appended).
constexpr Code kLastCode = Code::kCancelled;

const char* code_name(Code code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes context: "loading 'x': " + message. Keeps the code.
  Status with_context(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message_);
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
inline Status OutOfMemory(std::string m) { return {Code::kOutOfMemory, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
inline Status Busy(std::string m) { return {Code::kBusy, std::move(m)}; }
inline Status Unsupported(std::string m) { return {Code::kUnsupported, std::move(m)}; }
inline Status DeviceError(std::string m) { return {Code::kDeviceError, std::move(m)}; }
inline Status IoError(std::string m) { return {Code::kIoError, std::move(m)}; }
inline Status DataCorrupt(std::string m) { return {Code::kDataCorrupt, std::move(m)}; }
inline Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status Cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }

}  // namespace wharf

#define WHARF_CONCAT_INNER(a, b) a##b
#define WHARF_CONCAT(a, b) WHARF_CONCAT_INNER(a, b)
#define WHARF_RETURN_IF_ERROR(expr)                                              \
  do {                                                                           \
    ::wharf::Status WHARF_CONCAT(_st_, __LINE__) = (expr);                       \
    if (!WHARF_CONCAT(_st_, __LINE__).ok()) return WHARF_CONCAT(_st_, __LINE__); \
  } while (0)
