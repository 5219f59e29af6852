/* SPDX-License-Identifier: Apache-2.0 */
// Process-wide logging with a replaceable sink (the api layer's wharf_log_set_callback).
#pragma once

#include <string>

namespace wharf {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

using LogSink = void (*)(int level, const char* message, void* user);

// sink == nullptr restores the default stderr sink (level from WHARF_LOG_LEVEL, default warn).
void set_log_sink(LogSink sink, LogLevel min_level, void* user);
bool log_enabled(LogLevel level);
void log_message(LogLevel level, const std::string& message);

}  // namespace wharf

#define WHARF_LOG(level, msg)                                                                                  \
  do {                                                                                                         \
    if (::wharf::log_enabled(::wharf::LogLevel::level)) ::wharf::log_message(::wharf::LogLevel::level, (msg)); \
  } while (0)
