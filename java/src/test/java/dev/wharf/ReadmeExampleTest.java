// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.readFloats;
import static dev.wharf.TestSupport.writeState;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/** The example of java/README.md, step by step, with its claims asserted. */
public class ReadmeExampleTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  @Test
  public void readmeFlow() {
    Path file = tmp.getRoot().toPath().resolve("model.safetensors");

    // 1. Write a safetensors file (arrays are copied into buffers the map owns).
    try (ConstantMap weights = ConstantMap.create()) {
      weights.put("layers.0.weight", new float[] {1f, 2f, 3f, 4f}, 2, 2);
      weights.put("layers.0.bias", new float[] {0.5f, -0.5f}, 2);
      weights.save(file);
    }

    try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).build());
         ConstantMap loaded = ConstantMap.loadSafetensors(file);
         Container model = Container.fromMap(runtime, loaded, "demo")) {

      // 2. Begin a run and read a value (asByteBuffer copies it to the Java heap).
      try (Run oldRun = model.beginRun()) {
        TensorView weight = oldRun.tensor("layers.0.weight");
        assertEquals(2f, weight.asByteBuffer().asFloatBuffer().get(1), 0f);

        // 3. Update one constant from a Java array into the inactive generation; publish it.
        try (ConstantMap patch = ConstantMap.create()) {
          patch.put("layers.0.weight", new float[] {10f, 20f, 30f, 40f}, 2, 2);
          model.update(patch);
        }
        model.swap();

        // 4. New runs see the new value...
        try (Run newRun = model.beginRun()) {
          assertEquals(20f, newRun.tensor("layers.0.weight").asByteBuffer().asFloatBuffer().get(1), 0f);
          assertEquals(-0.5f, newRun.tensor("layers.0.bias").asByteBuffer().asFloatBuffer().get(1), 0f);
          assertNotEquals(oldRun.generation(), newRun.generation());
        }
        // ...while the old run keeps its generation until it is closed.
        assertEquals(2f, oldRun.tensor("layers.0.weight").asByteBuffer().asFloatBuffer().get(1), 0f);
      }

      assertEquals(24 + 16, runtime.memoryStats().peak(MemoryTag.CONSTANTS)); // only the patch was extra
    }
  }

  @Test
  public void storeAndSessions() {
    try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).build());
         WeightStore store = WeightStore.create(runtime);
         ConstantMap weights = ConstantMap.create()) {
      weights.put("embed", new float[] {1f, 2f, 3f, 4f}, 2, 2);
      ContainerOptions options = ContainerOptions.builder()
          .store(store)
          .state("kv", DType.F32, 2, 2)
          .maxSessionBytes(1 << 20)
          .build();
      try (Container prefill = Container.fromMap(runtime, weights, "prefill", options);
           Container decode = Container.fromMap(runtime, weights, "decode", options);
           Session chat = Session.create(runtime, prefill, decode)) {
        assertEquals(new WeightStoreStats(1, 16, 2, 16), store.stats());

        long kvAddress;
        try (Run run = prefill.beginRun(chat)) {
          TensorView kv = run.tensor("kv");
          kvAddress = kv.address();
          assertArrayEquals(new float[4], readFloats(run, "kv"), 0f);
          writeState(run, "kv", new float[] {9f, 9f, 9f, 9f}); // what a kernel would do
        }
        try (Run run = decode.beginRun(chat)) {
          assertEquals(kvAddress, run.tensor("kv").address());
          assertArrayEquals(new float[] {9f, 9f, 9f, 9f}, readFloats(run, "kv"), 0f);
        }
        try (Session branch = chat.fork(); Run run = decode.beginRun(branch)) {
          assertNotEquals(kvAddress, run.tensor("kv").address());
          assertArrayEquals(new float[] {9f, 9f, 9f, 9f}, readFloats(run, "kv"), 0f);
        }
        chat.reset();
        try (Run run = decode.beginRun(chat)) {
          assertArrayEquals(new float[4], readFloats(run, "kv"), 0f);
        }

        try (ConstantMap patch = ConstantMap.create()) {
          patch.put("embed", new float[] {5f, 6f, 7f, 8f}, 2, 2);
          store.update(patch);
        }
        store.swap();
        try (Run p = prefill.beginRun(chat)) {
          assertArrayEquals(new float[] {5f, 6f, 7f, 8f}, readFloats(p, "embed"), 0f);
        }
        try (Run d = decode.beginRun(chat)) {
          assertArrayEquals(new float[] {5f, 6f, 7f, 8f}, readFloats(d, "embed"), 0f);
        }
      }
    }
  }

  /** java/README.md's progress and cancellation example. */
  @Test
  public void cancellation() {
    try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).build());
         ConstantMap weights = ConstantMap.create()) {
      weights.put("w", new float[] {1f, 2f, 3f, 4f}, 4);
      try (Container model = Container.fromMap(runtime, weights, "demo")) {
        AtomicBoolean stop = new AtomicBoolean(true);
        long[] seen = new long[2];
        UpdateOptions options = UpdateOptions.builder()
            .progress((done, total) -> {
              seen[0] = done;
              seen[1] = total;
              return !stop.get();
            })
            .build();
        WharfException e = org.junit.Assert.assertThrows(WharfException.class, () -> model.update(weights, options));
        assertEquals(WharfException.Code.CANCELLED, e.code());
        assertArrayEquals(new long[] {16, 16}, seen);
        assertEquals(WharfException.Code.FAILED_PRECONDITION,
            org.junit.Assert.assertThrows(WharfException.class, model::swap).code()); // nothing staged
        stop.set(false);
        model.update(weights, options);
        model.swap();
      }
    }
  }
}
