// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertWharfError;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link ProgressListener} and {@link Thread#interrupt()}: the library calls back every
 * 16 MiB, so these updates move 48 MiB (three 16 MiB tensors) through a 1 MiB staging ring.
 */
public class ProgressTest {
  private static final int FLOATS = 4 << 20; // 16 MiB of F32 per tensor
  private static final long TOTAL = 3L * 4 * FLOATS;
  private static final String[] NAMES = {"a", "b", "c"};

  private WharfRuntime runtime;
  private final List<ConstantMap> maps = new ArrayList<>();

  @Before
  public void setUp() {
    Thread.interrupted(); // a clean interrupt status
    runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).copyThreads(2)
        .stagingBytes(1 << 20).build());
  }

  @After
  public void tearDown() {
    Thread.interrupted();
    for (ConstantMap m : maps) m.close();
    runtime.close();
  }

  /** A map of a, b and c, each FLOATS floats equal to {@code v}, in direct buffers it borrows. */
  private ConstantMap weights(float v) {
    ConstantMap map = ConstantMap.create();
    maps.add(map);
    for (String name : NAMES) {
      ByteBuffer data = ByteBuffer.allocateDirect(4 * FLOATS).order(ByteOrder.nativeOrder());
      for (int i = 0; i < FLOATS; i++) data.putFloat(v);
      data.flip();
      map.put(name, data, DType.F32, FLOATS);
    }
    return map;
  }

  /** Asserts that the first and last float of a, b and c are {@code v}. */
  private static void assertValues(Container c, float v) {
    try (Run run = c.beginRun()) {
      for (String name : NAMES) {
        for (long offset : new long[] {0, 4L * (FLOATS - 1)}) {
          ByteBuffer b = ByteBuffer.allocateDirect(4).order(ByteOrder.nativeOrder());
          run.read(name, offset, b);
          assertEquals(name + " at " + offset, v, b.getFloat(0), 0f);
        }
      }
    }
  }

  /** Records the calls and checks their contract: total fixed, done never decreasing. */
  private static final class Recorder implements ProgressListener {
    final List<long[]> seen = new ArrayList<>();
    int cancelAt; // the call that returns false; 0 = never

    @Override
    public boolean onProgress(long done, long total) {
      if (!seen.isEmpty()) {
        long[] last = seen.get(seen.size() - 1);
        assertTrue("done went back", done >= last[0]);
        assertEquals(last[1], total);
      }
      seen.add(new long[] {done, total});
      return seen.size() != cancelAt;
    }

    long[] last() {
      return seen.get(seen.size() - 1);
    }
  }

  @Test
  public void cancellingMidUpdateChangesNothing() {
    try (Container c = Container.fromMap(runtime, weights(1), "m")) {
      long generation = c.generation();
      ConstantMap v2 = weights(2);
      Recorder cancel = new Recorder();
      cancel.cancelAt = 1;
      WharfException e = assertWharfError(WharfException.Code.CANCELLED,
          () -> c.update(v2, UpdateOptions.builder().progress(cancel).build()), "container 'm'", "nothing was changed");
      assertEquals(1, cancel.seen.size());
      assertTrue("cancelled mid-copy", cancel.seen.get(0)[0] < cancel.seen.get(0)[1]);
      assertEquals(null, e.getCause());
      assertEquals(generation, c.generation());
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, c::swap); // nothing staged
      assertValues(c, 1);

      // The next update succeeds; its progress is monotone and ends at the total.
      Recorder all = new Recorder();
      c.update(v2, UpdateOptions.builder().progress(all).build());
      assertTrue(all.seen.size() >= 2);
      assertEquals(TOTAL, all.last()[0]);
      assertEquals(TOTAL, all.last()[1]);
      c.swap();
      assertValues(c, 2);
    }
  }

  @Test
  public void interruptingTheUpdatingThreadCancelsAndKeepsTheInterruptStatus() throws Exception {
    try (Container c = Container.fromMap(runtime, weights(1), "m")) {
      ConstantMap v2 = weights(2);
      CountDownLatch started = new CountDownLatch(1);
      AtomicReference<Throwable> outcome = new AtomicReference<>();
      AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
      // The listener waits, mid-copy, until the main thread has interrupted this one.
      Thread updater = new Thread(() -> {
        try {
          c.update(v2, UpdateOptions.builder().progress((done, total) -> {
            started.countDown();
            while (!Thread.currentThread().isInterrupted()) Thread.onSpinWait();
            return true;
          }).build());
        } catch (Throwable t) {
          outcome.set(t);
        }
        stillInterrupted.set(Thread.currentThread().isInterrupted());
      });
      updater.start();
      started.await();
      updater.interrupt();
      updater.join();
      assertTrue(String.valueOf(outcome.get()), outcome.get() instanceof WharfException);
      assertEquals(WharfException.Code.CANCELLED, ((WharfException) outcome.get()).code());
      assertTrue("the interrupt status is kept", stillInterrupted.get());
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, c::swap);
      assertValues(c, 1);

      // Without a listener: a thread already interrupted cannot update; the status stays.
      Thread.currentThread().interrupt();
      assertWharfError(WharfException.Code.CANCELLED, () -> c.update(v2));
      assertTrue(Thread.interrupted());
      c.update(v2);
      c.swap();
      assertValues(c, 2);
    }
  }

  @Test
  public void aThrowingListenerCancelsWithItsExceptionAsCause() {
    try (Container c = Container.fromMap(runtime, weights(1), "m")) {
      ConstantMap v2 = weights(2);
      IllegalStateException boom = new IllegalStateException("boom");
      WharfException e = assertWharfError(WharfException.Code.CANCELLED,
          () -> c.update(v2, UpdateOptions.builder().progress((done, total) -> {
            throw boom;
          }).build()));
      assertSame(boom, e.getCause());
      AssertionError failed = new AssertionError("failed inside");
      AssertionError thrown = assertThrows(AssertionError.class,
          () -> c.update(v2, UpdateOptions.builder().progress((done, total) -> {
            throw failed;
          }).build()));
      assertSame(failed, thrown);
      assertEquals(WharfException.Code.CANCELLED, ((WharfException) thrown.getSuppressed()[0]).code());
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, c::swap);
      assertValues(c, 1);
    }
  }

  @Test
  public void inPlaceUpdatesRefuseAListenerAndIgnoreInterrupts() {
    try (Container c = Container.fromMap(runtime, weights(1), "m")) {
      ConstantMap v2 = weights(2);
      assertWharfError(WharfException.Code.UNSUPPORTED, () -> c.update(v2, UpdateOptions.builder()
          .target(UpdateTarget.ACTIVE_IN_PLACE).progress((done, total) -> true).build()));
      Thread.currentThread().interrupt();
      c.update(v2, UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE).build());
      assertTrue(Thread.interrupted());
      assertValues(c, 2);
    }
  }

  @Test
  public void fromMapFilesAndStoresCancel() throws Exception {
    ConstantMap v1 = weights(1);
    assertWharfError(WharfException.Code.CANCELLED, () -> Container.fromMap(runtime, v1, "m",
        ContainerOptions.builder().progress((done, total) -> false).build()));
    Recorder load = new Recorder();
    try (Container c = Container.fromMap(runtime, v1, "m", ContainerOptions.builder().progress(load).build());
        WeightStore store = WeightStore.create(runtime);
        Container member = Container.fromMap(runtime, v1, "member", ContainerOptions.builder().store(store).build())) {
      assertEquals(TOTAL, load.last()[0]);
      Path dir = Files.createTempDirectory("wharf-progress");
      Path file = dir.resolve("v2.safetensors");
      try {
        weights(2).save(file);
        assertWharfError(WharfException.Code.CANCELLED,
            () -> c.updateFromFile(file, UpdateOptions.builder().progress((done, total) -> false).build()));
        assertWharfError(WharfException.Code.FAILED_PRECONDITION, c::swap);
        assertWharfError(WharfException.Code.CANCELLED,
            () -> store.update(weights(3), UpdateOptions.builder().progress((done, total) -> false).build()));
        assertWharfError(WharfException.Code.CANCELLED,
            () -> store.updateFromFile(file, UpdateOptions.builder().progress((done, total) -> false).build()));
        assertWharfError(WharfException.Code.FAILED_PRECONDITION, store::swap);
        assertValues(member, 1);
        Recorder all = new Recorder();
        store.updateFromFile(file, UpdateOptions.builder().progress(all).build());
        assertEquals(TOTAL, all.last()[0]);
        store.swap();
        assertValues(member, 2);
      } finally {
        Files.deleteIfExists(file);
        Files.delete(dir);
      }
    }
    assertFalse(Thread.currentThread().isInterrupted());
  }
}
