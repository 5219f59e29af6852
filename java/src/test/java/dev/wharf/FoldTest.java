// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.floats;
import static dev.wharf.TestSupport.hostRuntime;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.FloatBuffer;
import java.util.Arrays;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** Fold callbacks: derived constants computed in Java, and a callback's status reaching the caller. */
public class FoldTest {
  private WharfRuntime runtime;
  private Container model;
  private ConstantMap weights;

  @Before
  public void setUp() {
    runtime = hostRuntime();
    model = Container.create(runtime, "quantised", Arrays.asList(
        ConstantDecl.of("w", DType.F32, 2, 3),
        ConstantDecl.of("wt", DType.F32, 3, 2).derived()));
    weights = ConstantMap.create();
    weights.put("w", new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
  }

  @After
  public void tearDown() {
    weights.close();
    model.close();
    runtime.close();
  }

  private static void transpose(FoldRun run) {
    float[] w = floats(run.tensor("w"));
    FloatBuffer wt = run.writableBuffer("wt").asFloatBuffer();
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j < 3; j++) wt.put(j * 2 + i, w[i * 3 + j]);
    }
  }

  @Test
  public void foldComputesDerivedConstants() {
    assertTrue(ConstantDecl.of("wt", DType.F32, 3, 2).derived().isDerived());
    assertEquals("quantised", model.name());
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> model.update(weights), "fold");
    int[] calls = {0};
    model.update(weights, UpdateOptions.builder().fold(run -> {
      calls[0]++;
      transpose(run);
    }).build());
    assertEquals(1, calls[0]);
    model.swap();
    try (Run run = model.beginRun()) {
      assertArrayEquals(new float[] {0, 3, 1, 4, 2, 5}, floats(run.tensor("wt")), 0f);
    }
  }

  /**
   * A fold may write only derived constants and the constants its update writes: the others
   * share their storage with the active generation, which open and new runs read (issue 23,
   * defect 1). writableBuffer used to hand out a copy of any constant and write it back, which
   * changed what the open run below read, with no swap.
   */
  @Test
  public void foldCannotWriteConstantsItsUpdateDidNotWrite() {
    try (Container c = Container.create(runtime, "summed", Arrays.asList(
            ConstantDecl.of("a", DType.F32, 4), ConstantDecl.of("b", DType.F32, 4),
            ConstantDecl.of("d", DType.F32, 4).derived()));
        ConstantMap both = ConstantMap.create();
        ConstantMap onlyA = ConstantMap.create()) {
      both.put("a", new float[] {1, 1, 1, 1}, 4);
      both.put("b", new float[] {10, 10, 10, 10}, 4);
      onlyA.put("a", new float[] {2, 2, 2, 2}, 4);
      Fold sum = run -> {
        float[] a = floats(run.tensor("a"));
        float[] b = floats(run.tensor("b"));
        FloatBuffer d = run.writableBuffer("d").asFloatBuffer();
        for (int i = 0; i < 4; i++) d.put(i, a[i] + b[i]);
      };
      c.update(both, UpdateOptions.builder().fold(sum).build());
      c.swap();
      try (Run open = c.beginRun()) {
        boolean[] flags = new boolean[3];
        c.update(onlyA, UpdateOptions.builder().fold(run -> {
          flags[0] = run.tensor("a").isReadOnly();
          flags[1] = run.tensor("b").isReadOnly();
          flags[2] = run.tensor("d").isReadOnly();
          UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
              () -> run.writableBuffer("b"));
          assertTrue(e.getMessage(), e.getMessage().contains("'b'") && e.getMessage().contains("read-only"));
          run.writableBuffer("a").asFloatBuffer().put(0, 3f); // written by this update: fresh storage
          sum.apply(run);
        }).build());
        assertArrayEquals(new boolean[] {false, true, false}, flags);
        assertArrayEquals(new float[] {10, 10, 10, 10}, floats(open.tensor("b")), 0f);
        assertTrue(open.tensor("b").isReadOnly()); // a run's constants are read-only
      }
      c.swap();
      try (Run run = c.beginRun()) {
        assertArrayEquals(new float[] {3, 2, 2, 2}, floats(run.tensor("a")), 0f);
        assertArrayEquals(new float[] {12, 12, 12, 12}, floats(run.tensor("d")), 0f);
      }
    }
  }

  @Test
  public void foldStatusReachesTheCallerWithItsCodeAndMessage() {
    WharfException mine = new WharfException(WharfException.Code.RESOURCE_EXHAUSTED,
        "fold scratch budget of 64 bytes exceeded");
    WharfException e = assertThrows(WharfException.class,
        () -> model.update(weights, UpdateOptions.builder().fold(run -> {
          throw mine;
        }).build()));
    // Made with wharf_status_create in the JNI layer, returned by the library with its context.
    assertEquals(WharfException.Code.RESOURCE_EXHAUSTED, e.code());
    assertEquals("container 'quantised': fold callback: fold scratch budget of 64 bytes exceeded", e.getMessage());
    assertSame(mine, e.getCause());
    // Any other exception crosses as FAILED_PRECONDITION with its text.
    IllegalStateException plain = new IllegalStateException("no calibration table");
    WharfException p = assertThrows(WharfException.class,
        () -> model.update(weights, UpdateOptions.builder().fold(run -> {
          throw plain;
        }).build()));
    assertEquals(WharfException.Code.FAILED_PRECONDITION, p.code());
    assertTrue(p.getMessage(), p.getMessage().endsWith("no calibration table"));
    assertSame(plain, p.getCause());
    // An Error (a failed assertion) is rethrown as it is.
    AssertionError boom = new AssertionError("boom");
    assertSame(boom, assertThrows(AssertionError.class,
        () -> model.update(weights, UpdateOptions.builder().fold(run -> {
          throw boom;
        }).build())));
    // Nothing was staged by the aborted updates.
    assertWharfError(WharfException.Code.FAILED_PRECONDITION, model::swap);
  }

  @Test
  public void foldRunIsInvalidAfterTheCallback() {
    FoldRun[] kept = {null};
    model.update(weights, UpdateOptions.builder().fold(run -> {
      kept[0] = run;
      transpose(run);
      assertEquals(0, run.stream());
    }).build());
    assertThrows(IllegalStateException.class, () -> kept[0].tensor("w"));
  }

  /** What a callback that called back into the API got: "ok", or its exception's class and code. */
  private interface Reentry {
    void call() throws Exception;
  }

  /**
   * Runs {@code update} (which calls {@code fold}-style callbacks running {@code reentry}) on
   * another thread, and fails if it does not finish within 20 s: a hang is a failure, not a
   * stuck test run. Returns what the reentrant call did.
   */
  private static String outcomeOf(java.util.function.Consumer<Fold> update, Reentry reentry) throws Exception {
    String[] seen = {"not called"};
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "fold-reentry");
      t.setDaemon(true); // a hung update must not keep the JVM alive
      return t;
    });
    try {
      java.util.concurrent.Future<?> done = pool.submit(() -> update.accept(run -> {
        try {
          reentry.call();
          seen[0] = "ok";
        } catch (WharfException e) {
          seen[0] = "WharfException " + e.code();
        } catch (Exception e) {
          seen[0] = e.getClass().getSimpleName();
        }
      }));
      try {
        done.get(20, java.util.concurrent.TimeUnit.SECONDS);
      } catch (java.util.concurrent.TimeoutException hung) {
        throw new AssertionError("the update hung (its fold callback called back into the API)");
      }
      return seen[0];
    } finally {
      pool.shutdown();
    }
  }

  @Test
  public void foldCallbacksThatCallBackIntoTheApiGetAnExceptionNeverAHang() throws Exception {
    model.update(weights, UpdateOptions.builder().fold(FoldTest::transpose).build());
    model.swap();
    java.util.function.Consumer<Fold> update = fold -> model.update(weights, UpdateOptions.builder().fold(fold).build());
    // Calls that would wait for the update they are called from.
    assertEquals("WharfException FAILED_PRECONDITION", outcomeOf(update, () -> model.beginRun().close()));
    assertEquals("WharfException FAILED_PRECONDITION", outcomeOf(update, () -> Session.create(runtime, model).close()));
    assertEquals("IllegalStateException", outcomeOf(update, () -> weights.put("extra", new float[] {1f}, 1)));
    // Calls the library refuses itself.
    assertEquals("WharfException BUSY", outcomeOf(update, () -> model.update(weights,
        UpdateOptions.builder().fold(FoldTest::transpose).build())));
    assertEquals("WharfException BUSY", outcomeOf(update, () -> model.update(weights,
        UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE).fold(FoldTest::transpose).build())));
    // Calls that work: closing a run of the container begun before the update (it frees the
    // run while the update holds the container), reading it, using the runtime.
    Run before = model.beginRun();
    assertEquals("ok", outcomeOf(update, before::close));
    assertTrue(before.isClosed());
    assertEquals("ok", outcomeOf(update, model::generation));
    assertEquals("ok", outcomeOf(update, runtime::synchronize));
    // The container is still usable, and the last update went through.
    model.swap();
    try (Run run = model.beginRun()) {
      assertEquals(0f, floats(run.tensor("w"))[0], 0f);
    }

    // A weight store's update: its fold may not create a container in the store, update or
    // swap the store, or close it.
    try (WeightStore store = WeightStore.create(runtime)) {
      ContainerOptions shared = ContainerOptions.builder().store(store).build();
      try (Container a = Container.create(runtime, "a", Arrays.asList(ConstantDecl.of("w", DType.F32, 2, 3),
               ConstantDecl.of("wt", DType.F32, 3, 2).derived()), shared)) {
        java.util.function.Consumer<Fold> storeUpdate = fold -> store.update(weights, UpdateOptions.builder().fold(fold).build());
        assertEquals("WharfException FAILED_PRECONDITION", outcomeOf(storeUpdate,
            () -> Container.fromMap(runtime, weights, "b", shared).close()));
        assertEquals("WharfException FAILED_PRECONDITION", outcomeOf(storeUpdate, () -> store.update(weights,
            UpdateOptions.builder().fold(FoldTest::transpose).build())));
        assertEquals("WharfException FAILED_PRECONDITION", outcomeOf(storeUpdate, store::swap));
        store.update(weights, UpdateOptions.builder().fold(FoldTest::transpose).build());
        store.swap();
        try (Run run = a.beginRun()) {
          assertArrayEquals(new float[] {0, 3, 1, 4, 2, 5}, floats(run.tensor("wt")), 0f);
        }
        // Closing the store from its update's fold: closed at once, freed after the update.
        assertEquals("ok", outcomeOf(storeUpdate, store::close));
        assertTrue(store.isClosed());
        assertThrows(IllegalStateException.class, store::swap);
      }
    }

    // Closing what an update uses from its own fold: closed at once (close never waits), the
    // native objects freed when the update returns.
    assertEquals("ok", outcomeOf(update, () -> {
      weights.close();
      model.close();
    }));
    assertTrue(model.isClosed() && weights.isClosed());
    assertThrows(IllegalStateException.class, model::swap);
  }

  /**
   * Issue 23, defect 6: two threads whose folds close each other's containers both finish
   * ({@link FoldCloseChild}, in a child JVM: when close() waited for other threads' calls in
   * progress, each waited for the other's update, which waited for its fold, and the JVM hung).
   */
  @Test
  public void foldsClosingEachOthersContainersBothFinish() throws Exception {
    ChildJvm.run(null, "dev.wharf.FoldCloseChild", 60).assertOk("folds closing each other's containers");
  }
}
