// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

/**
 * The reproducer of issue 23, defect 6, run in a child JVM by {@link FoldTest}: two threads
 * update two containers, and each fold closes the other's container while that update is
 * inside its own fold. Prints "OK ..." when both updates finished.
 */
final class FoldCloseChild {
  private FoldCloseChild() {}

  public static void main(String[] args) throws Exception {
    try (WharfRuntime runtime = TestSupport.hostRuntime();
         ConstantMap weights = ConstantMap.create()) {
      weights.put("w", new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
      Container[] containers = new Container[2];
      for (int i = 0; i < 2; i++) {
        containers[i] = Container.create(runtime, "c" + i, Arrays.asList(
            ConstantDecl.of("w", DType.F32, 2, 3), ConstantDecl.of("wt", DType.F32, 3, 2).derived()));
      }
      CyclicBarrier bothInFolds = new CyclicBarrier(2);
      Throwable[] failures = new Throwable[2];
      Thread[] threads = new Thread[2];
      for (int i = 0; i < 2; i++) {
        int me = i;
        threads[i] = new Thread(() -> {
          try {
            containers[me].update(weights, UpdateOptions.builder().fold(run -> {
              bothInFolds.await(20, TimeUnit.SECONDS);
              containers[1 - me].close(); // the other update is inside its fold
              float[] w = TestSupport.floats(run.tensor("w"));
              FloatBuffer wt = run.writableBuffer("wt").asFloatBuffer();
              for (int r = 0; r < 2; r++) {
                for (int c = 0; c < 3; c++) wt.put(c * 2 + r, w[r * 3 + c]);
              }
            }).build());
          } catch (Throwable t) {
            failures[me] = t;
          }
        }, "fold-closer-" + i);
        threads[i].start();
      }
      for (Thread t : threads) t.join();
      for (Throwable f : failures) {
        if (f != null) throw new AssertionError("an update whose fold closed the other container failed", f);
      }
      if (!containers[0].isClosed() || !containers[1].isClosed()) throw new AssertionError("not closed");
    }
    System.out.println("OK folds closing each other's containers");
  }
}
