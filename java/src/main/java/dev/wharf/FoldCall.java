package dev.wharf;

import java.nio.charset.StandardCharsets;

/**
 * One update's {@link Fold}, as the JNI trampoline calls it ({@code wharf_swig_fold} in
 * bindings/swig/wharf.i): {@link #invoke} runs the callback and returns 0 or the code of its
 * failure, whose message {@link #message} gives; the failure itself is kept for the update to
 * rethrow as the cause.
 */
final class FoldCall {
  private final Fold fold;
  private final String container;
  private Throwable failure;
  private byte[] message = new byte[0];

  FoldCall(Fold fold, String container) {
    this.fold = fold;
    this.container = container;
  }

  /** Called from native code on the updating thread. Never throws. */
  int invoke(long runAddress) {
    FoldRun run = null;
    try {
      run = new FoldRun(WharfNative.wharf_swig_run_at(runAddress), container);
      fold.apply(run);
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
      if (run != null) run.close(); // the run belongs to the update: invalid from now on
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
    try {
      update.run();
    } catch (WharfException e) {
      if (failure instanceof Error) throw (Error) failure;
      if (failure != null && e.getCause() == null) e.initCause(failure);
      throw e;
    }
    if (failure instanceof Error) throw (Error) failure;
  }
}
