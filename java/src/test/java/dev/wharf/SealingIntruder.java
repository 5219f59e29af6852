// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * What a class planted in package dev.wharf could do before the jar was sealed (issue 23,
 * defect 8): reach the package-private JNI layer and end a run that the binding ends again
 * at close(). Run in child JVMs by {@link SealingTest}: refused by the sealed jar, and, where
 * it does run (the tests' unsealed copy), the second end must be a no-op, not a crash.
 */
public final class SealingIntruder {
  private SealingIntruder() {}

  public static void main(String[] args) {
    try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).build());
         ConstantMap weights = ConstantMap.create()) {
      weights.put("w", new float[] {1f}, 1);
      try (Container c = Container.fromMap(runtime, weights, "c")) {
        Run run = c.beginRun();
        run.withPointer(p -> {
          WharfNative.wharf_run_end(p); // ends (and frees) the native run behind the binding's back
          return null;
        });
        run.close(); // the binding's own end: the proxy's address is gone, so this passes NULL
        c.beginRun().close(); // the container still works
      }
    }
    System.out.println("OK ended a run twice");
  }
}
