// SPDX-License-Identifier: Apache-2.0
#include "core/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/sync.h"
#include "core/text.h"

namespace wharf {
namespace {

// Logging has no caller to fail: a value it does not know is said on stderr (directly, as
// the sink is being set up) and the default applies, rather than silently.
LogLevel level_from_env() {
  const char* v = std::getenv("WHARF_LOG_LEVEL");
  if (!v || !*v) return LogLevel::kWarn;
  if (!std::strcmp(v, "debug")) return LogLevel::kDebug;
  if (!std::strcmp(v, "info")) return LogLevel::kInfo;
  if (!std::strcmp(v, "warn")) return LogLevel::kWarn;
  if (!std::strcmp(v, "error")) return LogLevel::kError;
  if (!std::strcmp(v, "off")) return LogLevel::kOff;
  std::fprintf(stderr,
               "[wharf warn] WHARF_LOG_LEVEL=%s in the environment is not debug, info, warn, error or off; "
               "logging at warn\n",
               quote_name(v).c_str());
  return LogLevel::kWarn;
}

const char* level_name(int level) {
  static const char* names[] = {"debug", "info", "warn", "error", "off"};
  return level >= 0 && level <= 4 ? names[level] : "?";
}

void stderr_sink(int level, const char* message, void*) {
  std::fprintf(stderr, "[wharf %s] %s\n", level_name(level), message);
}

struct SinkState {
  Mutex mu;
  LogSink sink WHARF_GUARDED_BY(mu) = stderr_sink;
  void* user WHARF_GUARDED_BY(mu) = nullptr;
  // Read without the lock on every WHARF_LOG; written under mu with the sink.
  std::atomic<int> min_level{static_cast<int>(level_from_env())};
};

SinkState& state() {
  static SinkState* s = new SinkState();  // leaked on purpose: logging works during exit
  return *s;
}

}  // namespace

void set_log_sink(LogSink sink, LogLevel min_level, void* user) {
  SinkState& s = state();
  MutexLock lock(s.mu);
  if (sink) {
    s.sink = sink;
    s.user = user;
    s.min_level = static_cast<int>(min_level);
  } else {
    s.sink = stderr_sink;
    s.user = nullptr;
    s.min_level = static_cast<int>(level_from_env());
  }
}

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) >= state().min_level.load(std::memory_order_relaxed) && level != LogLevel::kOff;
}

void log_message(LogLevel level, const std::string& message) {
  SinkState& s = state();
  LogSink sink;
  void* user;
  {
    MutexLock lock(s.mu);
    sink = s.sink;
    user = s.user;
  }
  sink(static_cast<int>(level), message.c_str(), user);
}

}  // namespace wharf
