// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include "helpers.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// LogLevel is the severity of a library log line (wharf_log_level).
type LogLevel int32

// The log levels of wharf.h.
const (
	LogDebug LogLevel = C.WHARF_LOG_DEBUG
	LogInfo  LogLevel = C.WHARF_LOG_INFO
	LogWarn  LogLevel = C.WHARF_LOG_WARN
	LogError LogLevel = C.WHARF_LOG_ERROR
	LogOff   LogLevel = C.WHARF_LOG_OFF
)

// String returns "debug", "info", "warn", "error", "off", or "LogLevel(n)".
func (l LogLevel) String() string {
	switch l {
	case LogDebug:
		return "debug"
	case LogInfo:
		return "info"
	case LogWarn:
		return "warn"
	case LogError:
		return "error"
	case LogOff:
		return "off"
	}
	return fmt.Sprintf("LogLevel(%d)", int32(l))
}

var (
	logHandler atomic.Pointer[func(LogLevel, string)]
	logMu      sync.Mutex // serializes SetLogHandler
)

// SetLogHandler routes the library's log lines at minLevel and above to fn (process-wide).
// fn may be called from any goroutine or library thread, concurrently; it must return
// quickly and must not call into this package (the library may be logging while holding
// its locks). A nil fn restores the library's default (WARN and above to stderr; the
// environment variable WHARF_LOG_LEVEL changes the level). A replaced handler may still
// receive lines already in progress on other threads.
func SetLogHandler(fn func(level LogLevel, message string), minLevel LogLevel) {
	logMu.Lock()
	defer logMu.Unlock()
	if fn == nil {
		C.wharf_go_set_log(0, C.wharf_log_level(minLevel))
		logHandler.Store(nil)
		return
	}
	logHandler.Store(&fn)
	C.wharf_go_set_log(1, C.wharf_log_level(minLevel))
}
