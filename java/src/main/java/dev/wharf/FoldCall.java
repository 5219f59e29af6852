// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One update's {@link Fold}, as the JNI trampoline calls it ({@code wharf_swig_fold} in
 * bindings/swig/wharf.i): {@link #invoke} runs the callback and returns 0 or the code of its
 * failure, whose message {@link #message} gives; the failure itself is kept for the update to
 * rethrow as the cause.
 */
final class FoldCall {
  /**
   * The handles whose update is running a fold callback on this thread (innermost last): a
   * container, or a weight store. Calls that would wait for that update, and so never
   * return, check it ({@link #refuseIfUpdating}).
   */
  private static final ThreadLocal<List<NativeHandle<?>>> UPDATING = ThreadLocal.withInitial(ArrayList::new);

  private final Fold fold;
  private final NativeHandle<?> updating;
  private final String container;
  private Throwable failure;
  private byte[] message = new byte[0];

  FoldCall(Fold fold, NativeHandle<?> updating) {
    this.fold = fold;
    this.updating = updating;
    this.container = updating.describe();
  }

  /**
   * Throws when this thread is inside a fold callback of an update of {@code handle}, for a
   * call that would wait for that update: it fails instead of never returning.
   *
   * @param handle a container or a weight store
   * @param what the call, for the message ("beginning a run")
   * @throws WharfException {@link WharfException.Code#FAILED_PRECONDITION}
   */
  static void refuseIfUpdating(NativeHandle<?> handle, String what) {
    for (NativeHandle<?> h : UPDATING.get()) {
      if (h == handle) {
        throw new WharfException(WharfException.Code.FAILED_PRECONDITION, handle.describe() + ": " + what
            + " from inside a fold callback of its own update is not allowed (it would wait for that update"
            + " forever); use the FoldRun the callback receives");
      }
    }
  }

  /** Called from native code on the updating thread. Never throws. */
  int invoke(long runAddress) {
    FoldRun run = null;
    try {
      run = new FoldRun(WharfNative.wharf_swig_run_at(runAddress), container);
      fold.apply(run);
      run.writeBack();
      return 0;
    } catch (WharfException e) {
      failure = e;
      message = String.valueOf(e.getMessage()).getBytes(StandardCharsets.UTF_8);
      return e.rawCode() == 0 ? WharfException.Code.INTERNAL.value() : e.rawCode();
    } catch (Throwable t) {
      failure = t;
      message = t.toString().getBytes(StandardCharsets.UTF_8);
      return WharfException.Code.FAILED_PRECONDITION.value();
    } finally {
      // The run belongs to the update, which ends it once this returns: invalid from now on,
      // after the FoldRun calls still in progress on threads the callback started.
      if (run != null) run.closeAndWait();
    }
  }

  /** Called from native code: the failure's message, UTF-8. */
  byte[] message() {
    return message;
  }

  /**
   * Runs a native update that calls this fold, then rethrows as the update's outcome: the
   * library's {@link WharfException} with the callback's failure as its cause, or the
   * callback's {@link Error} as it is.
   */
  void around(Runnable update) {
    List<NativeHandle<?>> updating = UPDATING.get();
    updating.add(this.updating);
    try {
      update.run();
    } catch (WharfException e) {
      if (failure instanceof Error) throw (Error) failure;
      if (failure != null && e.getCause() == null) e.initCause(failure);
      throw e;
    } finally {
      updating.remove(updating.size() - 1);
    }
    if (failure instanceof Error) throw (Error) failure;
  }
}
