// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.function.Supplier;

/**
 * The bridge native code calls for one call's progress (wharf_swig_progress in wharf.i):
 * runs the {@link ProgressListener}, if any, and cancels when it returns false or throws, or
 * when the calling thread is interrupted. Never throws into native code.
 */
final class ProgressCall {
  private final ProgressListener listener;
  private Throwable failure;

  private ProgressCall(ProgressListener listener) {
    this.listener = listener;
  }

  /**
   * The bridge for a call, or null when none is needed. Every call watches for interruption,
   * except an in-place update without a listener: the library refuses a progress callback
   * there (it cannot stop midway), so that update cannot be interrupted.
   */
  static ProgressCall of(ProgressListener listener, boolean inPlace) {
    if (listener == null && inPlace) return null;
    return new ProgressCall(listener);
  }

  /** Called from native code on the calling thread: true to go on. */
  boolean invoke(long done, long total) {
    if (failure != null) return false;
    if (listener != null) {
      try {
        if (!listener.onProgress(done, total)) return false;
      } catch (Throwable t) {
        failure = t;
        return false;
      }
    }
    // isInterrupted, not interrupted(): the thread's interrupt status stays set.
    return !Thread.currentThread().isInterrupted();
  }

  /**
   * Runs the native call, then reports a listener's failure: an {@link Error} is rethrown as
   * it is (the library's exception suppressed in it), any other throwable becomes the cause
   * of the library's CANCELLED exception.
   */
  <T> T around(Supplier<T> call) {
    try {
      return call.get();
    } catch (WharfException e) {
      if (failure instanceof Error) {
        failure.addSuppressed(e);
        throw (Error) failure;
      }
      if (failure != null && e.getCause() == null) e.initCause(failure);
      throw e;
    }
  }

  /** {@link #around(Supplier)} for a call that returns nothing. */
  void run(Runnable call) {
    around(() -> {
      call.run();
      return null;
    });
  }
}
