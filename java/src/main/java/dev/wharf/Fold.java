// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * Computes a container's derived constants ({@link ConstantDecl} marked derived: a transposed
 * or quantised weight) for the generation an update is writing; set it with
 * {@link UpdateOptions.Builder#fold(Fold)}.
 *
 * <p>It runs during the update, on the updating thread, and receives a {@link FoldRun} over the
 * generation being written, valid only during the call. To abort the update, throw: a
 * {@link WharfException} crosses the C API with its code and message (a status made with
 * {@code wharf_status_create}), and the update then throws a {@link WharfException} with that
 * code and the message after the library's context ({@code "container 'm': fold callback: "});
 * any other exception crosses as {@link WharfException.Code#FAILED_PRECONDITION} with its text.
 * Either way the callback's exception is the cause of the one the update throws, and an
 * {@link Error} (an assertion, say) is rethrown as it is once the library has returned.
 */
@FunctionalInterface
public interface Fold {
  /**
   * Computes the derived constants.
   *
   * @param run the generation being written: every constant, derived ones included
   * @throws Exception to abort the update, which then changes nothing
   */
  void apply(FoldRun run) throws Exception;
}
