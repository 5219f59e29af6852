// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.charset.StandardCharsets;

/**
 * Receives the library's log lines once {@link Wharf#logToSystemLogger} routed them here
 * (the JNI trampoline calls {@link #log}), and passes them to the {@link System.Logger}
 * named {@code dev.wharf}.
 */
final class WharfLog {
  private WharfLog() {}

  /** The System.Logger level of a {@code wharf_log_level}. */
  static System.Logger.Level level(int wharfLevel) {
    switch (wharfLevel) {
      case 0:
        return System.Logger.Level.DEBUG;
      case 1:
        return System.Logger.Level.INFO;
      case 2:
        return System.Logger.Level.WARNING;
      default:
        return System.Logger.Level.ERROR;
    }
  }

  /** The {@code wharf_log_level} that passes {@code level} and above. */
  static int wharfLevel(System.Logger.Level level) {
    switch (level) {
      case ALL:
      case TRACE:
      case DEBUG:
        return 0;
      case INFO:
        return 1;
      case WARNING:
        return 2;
      case ERROR:
        return 3;
      default:
        return 4; // OFF
    }
  }

  /** Called from native code, on any thread (library threads included). Never throws. */
  static void log(int wharfLevel, byte[] utf8) {
    try {
      NativeHandle.LOG.log(level(wharfLevel), new String(utf8, StandardCharsets.UTF_8));
    } catch (Throwable ignored) {
      // A logger that fails must not unwind into the library's thread; nothing to report to.
    }
  }
}
