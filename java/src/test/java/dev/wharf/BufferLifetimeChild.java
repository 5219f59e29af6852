// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The reproducers of issue 23, defect 2, run in a child JVM by {@link BufferLifetimeTest}:
 * a buffer from {@link TensorView#asByteBuffer()} read after its owner was closed. When the
 * buffer was a view of Wharf's memory, each of these died with SIGSEGV (in Unsafe_GetInt):
 * the tensors are 64 MiB, above glibc's largest mmap threshold, so freeing unmaps them.
 */
final class BufferLifetimeChild {
  private BufferLifetimeChild() {}

  static final int N = 16 << 20; // floats: 64 MiB

  public static void main(String[] args) throws Exception {
    String what = args[0];
    ByteBuffer kept;
    float[] values = new float[N];
    values[N - 1] = 42f;
    if (what.equals("run-closed")) {
      try (WharfRuntime runtime = TestSupport.hostRuntime();
           ConstantMap weights = ConstantMap.create()) {
        weights.put("w", values, N);
        try (Container c = Container.fromMap(runtime, weights, "big");
             Run run = c.beginRun()) {
          kept = run.tensor("w").asByteBuffer();
        }
        runtime.synchronize();
      }
    } else if (what.equals("map-closed")) {
      Path file = Files.createTempFile("wharf-buffer-lifetime", ".safetensors");
      try {
        try (ConstantMap writer = ConstantMap.create()) {
          writer.put("w", values, N);
          writer.save(file);
        }
        try (ConstantMap loaded = ConstantMap.loadSafetensors(file)) { // memory-mapped
          kept = loaded.find("w").asByteBuffer();
        } // unmapped
      } finally {
        Files.deleteIfExists(file);
      }
    } else {
      throw new IllegalArgumentException("unknown case " + what);
    }
    float last = kept.asFloatBuffer().get(N - 1);
    if (last != 42f) throw new AssertionError("read " + last + " after close, want 42");
    System.out.println("OK " + what);
  }
}
