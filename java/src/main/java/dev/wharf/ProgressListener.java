// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * Told the progress of a long call (an update, {@link Container#fromMap}, a model load), and
 * able to cancel it. The library calls it on the calling thread, inside the call, every
 * 16 MiB copied (at least every 64 MiB) and once more with {@code done == total} before the
 * call publishes or stages anything; {@code total} is fixed for the call and {@code done}
 * never decreases.
 *
 * <p>Returning {@code false} or throwing cancels the call: it stops copying, waits for the
 * copies in flight, releases what it allocated and throws a {@link WharfException} with
 * {@link WharfException.Code#CANCELLED}, having changed nothing (a listener's exception is
 * its cause; an {@link Error} is rethrown as it is). Interrupting the calling thread
 * ({@link Thread#interrupt()}) cancels the call the same way, with or without a listener,
 * and leaves the thread's interrupt status set. The listener must not call into the object
 * being updated (it would get {@link WharfException.Code#BUSY}).
 *
 * <pre>{@code
 * container.update(map, UpdateOptions.builder()
 *     .progress((done, total) -> { bar.set(done, total); return !stopRequested; })
 *     .build());
 * }</pre>
 *
 * @since 0.3
 */
@FunctionalInterface
public interface ProgressListener {
  /**
   * Reports progress.
   *
   * @param done bytes copied so far
   * @param total bytes the call copies in all
   * @return true to go on, false to cancel the call
   */
  boolean onProgress(long done, long total);
}
