// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.floats;
import static dev.wharf.TestSupport.hostRuntime;
import static dev.wharf.TestSupport.iota;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.util.Arrays;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** {@link Run} and the {@link TensorView}s it hands out. */
public class RunTest {
  private WharfRuntime runtime;
  private Container model;

  @Before
  public void setUp() {
    runtime = hostRuntime();
    try (ConstantMap map = ConstantMap.create()) {
      map.put("w", iota(6, 1), 2, 3);
      map.put("ids", new int[] {4, 5}, 2);
      model = Container.fromMap(runtime, map, "runs");
    }
  }

  @After
  public void tearDown() {
    model.close();
    runtime.close();
  }

  @Test
  public void tensorDescribesTheConstantsStorage() {
    try (Run run = model.beginRun()) {
      assertSame(model, run.container());
      assertEquals(model.generation(), run.generation());
      assertEquals(0, run.stream()); // the host backend has no native streams
      TensorView w = run.tensor("w");
      assertEquals("w", w.name());
      assertEquals(DType.F32, w.dtype());
      assertArrayEquals(new long[] {2, 3}, w.shape());
      assertEquals(24, w.byteSize());
      assertEquals(DeviceType.CPU, w.deviceType()); // the host backend's "device" memory
      assertNotEquals(0, w.address());
      assertArrayEquals(iota(6, 1), floats(w), 0f);
      assertArrayEquals(iota(6, 1), floats(w.toByteArray()), 0f);
      ByteBuffer ids = run.tensor("ids").asByteBuffer();
      assertEquals(4, ids.getInt(0));
      assertEquals(5, ids.getInt(4));
      assertTrue(w.toString(), w.toString().contains("F32[2, 3]"));
    }
  }

  @Test
  public void byteBufferIsAReadOnlyHeapCopyInNativeOrder() {
    try (Run run = model.beginRun()) {
      ByteBuffer b = run.tensor("w").asByteBuffer();
      assertTrue(b.isReadOnly());
      assertFalse(b.isDirect()); // a copy: never a view of Wharf's memory (issue 23)
      assertEquals(ByteOrder.nativeOrder(), b.order());
      assertEquals(24, b.capacity());
      assertThrows(ReadOnlyBufferException.class, () -> b.putFloat(0, 0f));
      // two views of one constant see the same memory
      assertEquals(run.tensor("w").address(), run.tensor("w").address());
    }
  }

  @Test
  public void readCopiesAByteRangeIntoADirectBuffer() {
    try (Run run = model.beginRun()) {
      ByteBuffer dst = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
      dst.position(4).limit(12); // 8 bytes: w[2], w[3]
      run.read("w", 8, dst);
      assertEquals(12, dst.position());
      assertEquals(3f, dst.getFloat(4), 0f);
      assertEquals(4f, dst.getFloat(8), 0f);
      assertEquals(0f, dst.getFloat(0), 0f); // outside the range: untouched
      assertWharfError(WharfException.Code.INVALID_ARGUMENT,
          () -> run.read("w", 20, ByteBuffer.allocateDirect(8)), "w");
      assertWharfError(WharfException.Code.NOT_FOUND, () -> run.read("nope", 0, ByteBuffer.allocateDirect(4)), "nope");
      assertThrows(IllegalArgumentException.class, () -> run.read("w", 0, ByteBuffer.allocate(4)));
      assertThrows(IllegalArgumentException.class, () -> run.read("w", -1, ByteBuffer.allocateDirect(4)));
      assertThrows(ReadOnlyBufferException.class,
          () -> run.read("w", 0, ByteBuffer.allocateDirect(4).asReadOnlyBuffer()));
      // toByteArray on a run's tensor copies through read
      assertArrayEquals(iota(2, 5), floats(Arrays.copyOfRange(run.tensor("w").toByteArray(), 16, 24)), 0f);
    }
  }

  @Test
  public void unknownNameIsNotFound() {
    try (Run run = model.beginRun()) {
      assertWharfError(WharfException.Code.NOT_FOUND, () -> run.tensor("layers.0.missing"), "layers.0.missing");
      assertThrows(NullPointerException.class, () -> run.tensor(null));
    }
  }

  @Test
  public void closeTwiceIsANoOpAndUseAfterCloseThrows() {
    Run run = model.beginRun();
    TensorView w = run.tensor("w");
    run.close();
    run.close();
    assertTrue(run.isClosed());
    assertClosed("Run of Container 'runs'", () -> run.tensor("w"));
    assertClosed("Run of Container 'runs'", run::generation);
    assertClosed("Run of Container 'runs'", run::stream);
    assertClosed("Run of Container 'runs'", w::asByteBuffer);
    assertClosed("Run of Container 'runs'", w::toByteArray);
    assertClosed("Run of Container 'runs'", () -> run.read("w", 0, ByteBuffer.allocateDirect(4)));
  }

  @Test
  public void oldRunKeepsItsGenerationAcrossUpdateAndSwap() {
    try (Run old = model.beginRun()) {
      TensorView before = old.tensor("w");
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("w", iota(6, 100), 2, 3);
        model.update(patch);
      }
      model.swap();
      try (Run fresh = model.beginRun()) {
        assertNotEquals(old.generation(), fresh.generation());
        assertArrayEquals(iota(6, 100), floats(fresh.tensor("w")), 0f);
        assertNotEquals(before.address(), fresh.tensor("w").address());
      }
      assertArrayEquals(iota(6, 1), floats(old.tensor("w")), 0f);
      assertArrayEquals(iota(6, 1), floats(before), 0f);
    }
  }

  @Test
  public void containerAndRuntimeClosedFirstKeepTheRunReadable() {
    Run run = model.beginRun();
    model.close();
    runtime.close();
    assertClosed("Container 'runs'", model::beginRun);
    // the run still holds its generation, and through it the container and the device
    assertArrayEquals(iota(6, 1), floats(run.tensor("w")), 0f);
    assertEquals(4, run.tensor("ids").asByteBuffer().getInt(0));
    run.close(); // frees the run, then the container, then the runtime
    assertClosed("Run of Container 'runs'", () -> run.tensor("w"));
  }

  @Test
  public void manyRunsAtOnceFromManyThreads() throws Exception {
    Thread[] threads = new Thread[4];
    Throwable[] errors = new Throwable[threads.length];
    for (int t = 0; t < threads.length; t++) {
      int index = t;
      threads[t] = new Thread(() -> {
        try {
          for (int i = 0; i < 200; i++) {
            try (Run run = model.beginRun()) {
              assertEquals(1f, floats(run.tensor("w"))[0], 0f);
            }
          }
        } catch (Throwable e) {
          errors[index] = e;
        }
      });
      threads[t].start();
    }
    for (Thread t : threads) t.join();
    for (Throwable e : errors) {
      if (e != null) throw new AssertionError(e);
    }
  }

  /** TensorView.read copies a range of a run's tensor through wharf_run_copy (how model outputs are read). */
  @Test
  public void aRunsTensorIsReadThroughTheRunsStream() {
    try (ConstantMap weights = ConstantMap.create()) {
      weights.put("w", iota(8, 10f), 2, 4);
      try (Container c = Container.fromMap(runtime, weights, "copy")) {
        TensorView kept;
        try (Run run = c.beginRun()) {
          TensorView w = run.tensor("w");
          kept = w;
          ByteBuffer row = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
          w.read(16, row); // the second row
          assertEquals(16, row.position());
          row.flip();
          float[] got = new float[4];
          row.asFloatBuffer().get(got);
          assertArrayEquals(new float[] {14f, 15f, 16f, 17f}, got, 0f);
          ByteBuffer some = ByteBuffer.allocateDirect(12).order(ByteOrder.nativeOrder());
          some.position(4); // written from the position on
          w.read(24, some); // the last two elements
          assertEquals(16f, some.getFloat(4), 0f);
          assertEquals(17f, some.getFloat(8), 0f);
          w.read(32, ByteBuffer.allocateDirect(0)); // an empty range at the end
          assertThrows(IllegalArgumentException.class, () -> w.read(20, ByteBuffer.allocateDirect(16)));
          assertThrows(IllegalArgumentException.class, () -> w.read(-4, ByteBuffer.allocateDirect(4)));
          assertThrows(IllegalArgumentException.class, () -> w.read(0, ByteBuffer.allocate(4)));
          assertThrows(ReadOnlyBufferException.class, () -> w.read(0, ByteBuffer.allocateDirect(4).asReadOnlyBuffer()));
          assertThrows(UnsupportedOperationException.class, () -> weights.find("w").read(0, ByteBuffer.allocateDirect(4)));
        }
        assertClosed("Run of Container 'copy'", () -> kept.read(0, ByteBuffer.allocateDirect(4)));
        assertClosed("Run of Container 'copy'", kept::toByteArray);
        assertClosed("Run of Container 'copy'", kept::asByteBuffer);
      }
    }
  }
}
