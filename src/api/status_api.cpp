// SPDX-License-Identifier: Apache-2.0
// Status, version, logging and dtype functions of wharf.h.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/boundary.h"
#include "core/dtype.h"
#include "core/logging.h"
#include "core/text.h"

using namespace wharf;

static_assert(int(WHARF_INTERNAL) == int(Code::kInternal), "wharf_code and Code must match");
static_assert(int(WHARF_CANCELLED) == int(kLastCode), "wharf_code and Code must match, up to the last code");
static_assert(int(WHARF_DATA_CORRUPT) == int(Code::kDataCorrupt), "wharf_code and Code must match");
static_assert(int(WHARF_BUSY) == int(Code::kBusy), "wharf_code and Code must match");
static_assert(int(WHARF_DTYPE_BOOL) == int(DType::kBool), "wharf_dtype and DType must match");
static_assert(int(WHARF_DTYPE_F8_E5M2) == int(DType::kF8E5M2), "wharf_dtype and DType must match");
static_assert(int(WHARF_DTYPE_U16) == int(DType::kU16) && int(WHARF_DTYPE_U32) == int(DType::kU32) &&
                  int(WHARF_DTYPE_U64) == int(DType::kU64) && int(WHARF_DTYPE_C64) == int(DType::kC64) &&
                  int(WHARF_DTYPE_F8_E8M0) == int(DType::kF8E8M0) &&
                  int(WHARF_DTYPE_F8_E4M3FNUZ) == int(DType::kF8E4M3Fnuz) &&
                  int(WHARF_DTYPE_F8_E5M2FNUZ) == int(DType::kF8E5M2Fnuz) && int(WHARF_DTYPE_F4) == int(DType::kF4) &&
                  int(WHARF_DTYPE_F6_E2M3) == int(DType::kF6E2M3) && int(WHARF_DTYPE_F6_E3M2) == int(DType::kF6E3M2),
              "wharf_dtype and DType must match");
static_assert(int(WHARF_DTYPE_F6_E3M2) + 1 == kNumDTypes, "every DType has a wharf_dtype");

namespace {
// Returned when a status cannot be allocated; never freed.
wharf_status* oom_status() noexcept {
  static wharf_status* s = [] {
    static wharf_status st{WHARF_OUT_OF_MEMORY, "host memory exhausted while reporting an error"};
    return &st;
  }();
  return s;
}
}  // namespace

namespace wharf {
namespace api {

wharf_status* make_status(Code code, const char* message) noexcept {
  try {
    return new wharf_status{static_cast<wharf_code>(code), message};
  } catch (...) {
    return oom_status();
  }
}

wharf_status* to_c(const Status& st) noexcept {
  if (st.ok()) return nullptr;
  return make_status(st.code(), st.message().c_str());
}

}  // namespace api
}  // namespace wharf

extern "C" {

WHARF_API wharf_status* wharf_status_create(wharf_code code, const char* message) {
  const int32_t c = api::enum_int(code);
  if (c == int32_t(WHARF_OK)) return nullptr;
  const char* m = message ? message : "";
  if (c < 0 || c > int32_t(WHARF_CANCELLED)) {
    try {
      return api::make_status(Code::kInternal,
                              ("wharf_status_create: unknown code " + std::to_string(c) + ": " + m).c_str());
    } catch (...) {
      return api::make_status(Code::kOutOfMemory, "host memory exhausted while creating a status");
    }
  }
  return api::make_status(static_cast<Code>(c), m);
}

WHARF_API wharf_code wharf_status_code(const wharf_status* status) { return status ? status->code : WHARF_OK; }

WHARF_API const char* wharf_status_message(const wharf_status* status) { return status ? status->message.c_str() : ""; }

WHARF_API void wharf_status_free(wharf_status* status) {
  if (status && status != oom_status()) delete status;
}

WHARF_API const char* wharf_code_name(wharf_code code) {
  const int32_t c = api::enum_int(code);
  if (c < 0 || c > int32_t(WHARF_CANCELLED)) return "UNKNOWN";
  return code_name(static_cast<Code>(c));
}

WHARF_API const char* wharf_version(void) {
#define WHARF_STR2(x) #x
#define WHARF_STR(x) WHARF_STR2(x)
  return WHARF_STR(WHARF_VERSION_MAJOR) "." WHARF_STR(WHARF_VERSION_MINOR) "." WHARF_STR(WHARF_VERSION_PATCH);
}

WHARF_API uint32_t wharf_version_number(void) { return WHARF_VERSION_NUMBER; }

WHARF_API uint32_t wharf_abi_version(void) { return WHARF_ABI_VERSION; }

WHARF_API void wharf_log_set_callback(wharf_log_fn fn, wharf_log_level min_level, void* user) {
  int lvl = api::enum_int(min_level);
  if (lvl < 0 || lvl > int(WHARF_LOG_OFF)) lvl = int(WHARF_LOG_WARN);
  if (!fn) {
    set_log_sink(nullptr, LogLevel::kWarn, nullptr);
    return;
  }
  // The C callback is reached through a trampoline (calling it through a pointer of another
  // type would be undefined). Each distinct (fn, user) record is kept, reachable, for the
  // process's life, so a thread still logging through a replaced callback never reads freed
  // memory; registering the same pair again reuses its record.
  struct CSink {
    wharf_log_fn fn;
    void* user;
  };
  static std::mutex records_mu;
  static std::vector<std::unique_ptr<CSink>> records;
  CSink* rec = nullptr;
  try {
    std::lock_guard<std::mutex> lock(records_mu);
    for (const auto& r : records)
      if (r->fn == fn && r->user == user) rec = r.get();
    if (!rec) {
      records.push_back(std::make_unique<CSink>(CSink{fn, user}));
      rec = records.back().get();
    }
  } catch (...) {
    return;  // out of host memory: the previous sink stays
  }
  set_log_sink(
      [](int level, const char* message, void* u) {
        auto* s = static_cast<CSink*>(u);
        s->fn(static_cast<wharf_log_level>(level), message, s->user);
      },
      static_cast<LogLevel>(lvl), rec);
}

WHARF_API size_t wharf_dtype_size(wharf_dtype dtype) { return dtype_size(static_cast<DType>(api::enum_int(dtype))); }

WHARF_API size_t wharf_dtype_bits(wharf_dtype dtype) { return dtype_bits(static_cast<DType>(api::enum_int(dtype))); }

WHARF_API const char* wharf_dtype_name(wharf_dtype dtype) {
  return dtype_name(static_cast<DType>(api::enum_int(dtype)));
}

WHARF_API wharf_status* wharf_dtype_from_name(const char* name, wharf_dtype* out) {
  return api::guarded(__func__, [&]() -> Status {
    WHARF_API_REQUIRE(name && out, "wharf_dtype_from_name: name and out must not be NULL");
    auto d = dtype_from_name(name);
    if (!d) return NotFound("unknown dtype name " + quote_name(name));
    *out = static_cast<wharf_dtype>(*d);
    return Status::Ok();
  });
}

}  // extern "C"
