// SPDX-License-Identifier: Apache-2.0

package wharf

/*
#include "helpers.h"
*/
import "C"

import (
	"fmt"
	"log"
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

// SlogLevel returns the log/slog level of l as an int, so that slog.Level(l.SlogLevel())
// converts it (slog.Level is an int; this module builds with Go 1.19, before log/slog):
// -4 (debug), 0 (info), 4 (warn), 8 (error). A handler that hands the library's lines to a
// *slog.Logger:
//
//	wharf.SetLogHandler(func(level wharf.LogLevel, msg string) {
//		logger.Log(context.Background(), slog.Level(level.SlogLevel()), msg, "library", "wharf")
//	}, wharf.LogInfo)
func (l LogLevel) SlogLevel() int {
	switch l {
	case LogDebug:
		return -4
	case LogInfo:
		return 0
	case LogWarn:
		return 4
	}
	return 8 // error, and anything above
}

// LogTo returns a handler for SetLogHandler that writes each library line to logger (a
// *log.Logger of the standard log package; nil means log.Default()) as
// "wharf: LEVEL: message". The logger serialises its writes, so the handler may be called
// from several threads at once.
func LogTo(logger *log.Logger) func(level LogLevel, message string) {
	return func(level LogLevel, message string) {
		l := logger
		if l == nil {
			l = log.Default()
		}
		l.Printf("wharf: %v: %s", level, message)
	}
}
