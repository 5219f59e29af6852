// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.floats;
import static dev.wharf.TestSupport.hostRuntime;
import static dev.wharf.TestSupport.readFloats;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.FloatBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** {@link Offloader} and {@link ReplicaGroup} (experimental tier) on the host backend. */
public class OffloadReplicaTest {
  private static final int ELEMS = 64;
  private final List<AutoCloseable> closeLast = new ArrayList<>();
  private WharfRuntime runtime;

  @Before
  public void setUp() {
    runtime = hostRuntime();
  }

  @After
  public void tearDown() throws Exception {
    Collections.reverse(closeLast);
    for (AutoCloseable c : closeLast) c.close();
    runtime.close();
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    closeLast.add(c);
    return c;
  }

  /** layers.{i}.w (F32 [64], host-placed) for n layers and a device-placed embed, w = stamp*1000 + i. */
  private Container layered(int n, int stamp) {
    List<ConstantDecl> decls = new ArrayList<>();
    decls.add(ConstantDecl.of("embed", DType.F32, 4));
    for (int i = 0; i < n; i++) decls.add(ConstantDecl.of("layers." + i + ".w", DType.F32, Placement.HOST, ELEMS));
    Container c = closeLater(Container.create(runtime, "toy", decls));
    publish(c, n, stamp);
    return c;
  }

  private static void publish(Container c, int n, int stamp) {
    try (ConstantMap m = ConstantMap.create()) {
      m.put("embed", new float[4], 4);
      for (int i = 0; i < n; i++) {
        float[] w = new float[ELEMS];
        Arrays.fill(w, stamp * 1000 + i);
        m.put("layers." + i + ".w", w, ELEMS);
      }
      c.update(m);
      c.swap();
    }
  }

  /** One run through every layer; the first value of each layer's slot. */
  private float[] pass(Container c, Offloader off) {
    try (Run run = c.beginRun()) {
      float[] seen = new float[off.numLayers()];
      run.beginOffload(off);
      for (int layer = 0; layer < off.numLayers(); layer++) {
        List<TensorView> slots = run.waitOffload(off, layer);
        assertEquals(1, slots.size());
        assertTrue(slots.get(0).isReadOnly());
        assertArrayEquals(new long[] {ELEMS}, slots.get(0).shape());
        runtime.synchronize(); // the host "kernel" reads after the copy it waited for
        float[] values = floats(slots.get(0));
        for (float v : values) assertEquals(values[0], v, 0f);
        seen[layer] = values[0];
        run.markOffloadIssued(off, layer);
      }
      run.endOffload(off);
      return seen;
    }
  }

  @Test
  public void anOffloaderPrefetchesEveryLayerOfTheRunsGeneration() {
    Container c = layered(4, 1);
    try (Offloader off = Offloader.create(c, OffloaderOptions.builder().prefetchStep(2).slotCapacity(4).build())) {
      assertEquals(4, off.numLayers());
      assertEquals(Collections.singletonList("layers.2.w"), off.layerConstants(2));
      assertTrue(off.layerConstants(9).isEmpty());
      OffloaderBudget b = off.budget();
      assertEquals(4, b.numOffloadedLayers());
      assertEquals(4L * 4 * ELEMS, b.bytesPerStep());
      assertEquals(OffloaderBudget.H2dSource.ASSUMED, b.h2dSource());
      assertEquals(0.0, b.computeMicros(), 0.0);
      assertArrayEquals(new float[] {1000, 1001, 1002, 1003}, pass(c, off), 0f);
      publish(c, 4, 2);
      assertArrayEquals(new float[] {2000, 2001, 2002, 2003}, pass(c, off), 0f);
    }
  }

  @Test
  public void offloaderErrorsNameWhatIsWrong() {
    Container c = layered(3, 1);
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> Offloader.create(c, OffloaderOptions.builder().layerPattern("blocks.{layer}.").build()));
    assertWharfError(WharfException.Code.NOT_FOUND, () -> Offloader.create(c,
        OffloaderOptions.builder().fqns(Arrays.asList("layers.0.w", "layers.9.w")).build()), "layers.9.w");
    assertWharfError(WharfException.Code.RESOURCE_EXHAUSTED, () -> Offloader.create(c, OffloaderOptions.builder()
        .stepCompute(Duration.ofNanos(1000)).h2dBytesPerSecond(1).refuseIfExposed(true).build()));
    try (Container device = Container.create(runtime, "dev",
        Collections.singletonList(ConstantDecl.of("layers.0.w", DType.F32, 4)))) {
      assertWharfError(WharfException.Code.FAILED_PRECONDITION,
          () -> Offloader.create(device, OffloaderOptions.defaults()), "layers.0.w");
    }
    Offloader off = Offloader.create(c,
        OffloaderOptions.builder().fqns(Collections.singletonList("layers.1.w")).prefetchStep(0).build());
    try (Run run = c.beginRun()) {
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> run.waitOffload(off, 1)); // not begun
      run.beginOffload(off);
      try (Run other = c.beginRun()) {
        assertWharfError(WharfException.Code.BUSY, () -> other.beginOffload(off)); // one run at a time
      }
      assertTrue(run.waitOffload(off, 0).isEmpty()); // not offloaded
      run.markOffloadIssued(off, 0);
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> run.waitOffload(off, 7));
      assertThrows(IllegalArgumentException.class, () -> run.waitOffload(off, -1));
      off.close(); // the run keeps the native offloader until it ends
      assertClosed("Offloader", () -> run.waitOffload(off, 1));
    }
    Container other = layered(3, 1);
    try (Offloader off2 = Offloader.create(other, OffloaderOptions.defaults()); Run run = c.beginRun()) {
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> run.beginOffload(off2)); // another container
    }
  }

  @Test
  public void slotViewsEndWithTheirLayer() {
    Container c = layered(2, 1);
    Offloader off = Offloader.create(c, OffloaderOptions.builder().slotCapacity(2).build());
    TensorView last;
    try (Run run = c.beginRun()) {
      run.beginOffload(off);
      TensorView first = run.waitOffload(off, 0).get(0);
      assertEquals(1000f, floats(first)[0], 0f);
      run.markOffloadIssued(off, 0);
      assertThrows(IllegalStateException.class, first::toByteArray); // the slot may be refilled
      last = run.waitOffload(off, 1).get(0);
      // Closing the offloader while a layer's views are out does not free the slot pool under
      // them; ending offloading (here: closing the run) ends the views.
      off.close();
      assertEquals(1001f, floats(last)[0], 0f);
    }
    assertThrows(IllegalStateException.class, last::toByteArray);
  }

  private static ConstantMap groupMap(float v) {
    ConstantMap m = ConstantMap.create();
    m.put("w", new float[] {v, v, v, v}, 4);
    return m;
  }

  private static float first(Container c) {
    try (Run run = c.beginRun()) {
      return readFloats(run, "w")[0];
    }
  }

  @Test
  public void aReplicaGroupUpdatesAndSwapsEveryReplica() {
    List<Container> replicas = new ArrayList<>();
    try (ConstantMap ones = groupMap(1)) {
      for (int i = 0; i < 3; i++) {
        WharfRuntime rt = closeLater(hostRuntime());
        replicas.add(closeLater(Container.fromMap(rt, ones, "r" + i)));
      }
    }
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> ReplicaGroup.create());
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> ReplicaGroup.create(replicas.get(0), replicas.get(0)));
    ReplicaGroup group = closeLater(ReplicaGroup.create(replicas));
    try (ConstantMap twos = groupMap(2); ConstantMap fives = groupMap(5)) {
      assertEquals(3, group.numReplicas());
      assertEquals(replicas, group.replicas());
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> replicas.get(1).update(fives));
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> ReplicaGroup.create(replicas.get(0)));
      group.update(twos, UpdateOptions.builder().requireFull(true).build());
      for (Container c : replicas) assertEquals(1f, first(c), 0f);
      group.swap();
      for (Container c : replicas) assertEquals(2f, first(c), 0f);
      ReplicaGroupStats stats = group.stats();
      assertEquals(3, stats.numReplicas());
      assertEquals(1, stats.numUpdates());
      assertEquals(1, stats.numSwaps());
      assertEquals(16, stats.sourceBytes());
      assertWharfError(WharfException.Code.UNSUPPORTED,
          () -> group.update(fives, UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE).build()));

      // Cancelled (a listener, then an interrupt): nothing staged anywhere.
      assertWharfError(WharfException.Code.CANCELLED,
          () -> group.update(fives, UpdateOptions.builder().progress((done, total) -> false).build()));
      Thread.currentThread().interrupt();
      assertWharfError(WharfException.Code.CANCELLED, () -> group.update(fives));
      assertTrue(Thread.interrupted());
      assertEquals(1, group.stats().numUpdates());
      long[] last = new long[2];
      group.update(fives, UpdateOptions.builder().progress((done, total) -> {
        last[0] = done;
        last[1] = total;
        return true;
      }).build());
      assertArrayEquals(new long[] {16, 16}, last); // each source byte once
      group.swap();
      for (Container c : replicas) assertEquals(5f, first(c), 0f);
      group.swap(); // a rollback
      for (Container c : replicas) assertEquals(2f, first(c), 0f);
      group.freeInactive();
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, group::swap);
      group.close();
      assertClosed("ReplicaGroup", group::swap);
      replicas.get(1).update(fives); // the containers are their own again
    }
  }

  /** Derived constants in a group: the fold runs on every replica, a failing fold changes no replica. */
  @Test
  public void aReplicaGroupFoldsOnEveryReplica() {
    List<Container> replicas = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      WharfRuntime rt = closeLater(hostRuntime());
      replicas.add(closeLater(Container.create(rt, "folded" + i, Arrays.asList(
          ConstantDecl.of("w", DType.F32, 2, 3), ConstantDecl.of("wt", DType.F32, 3, 2).derived()))));
    }
    ReplicaGroup group = closeLater(ReplicaGroup.create(replicas));
    int[] calls = new int[1];
    Fold transpose = run -> {
      calls[0]++;
      float[] w = floats(run.tensor("w"));
      FloatBuffer wt = run.writableBuffer("wt").asFloatBuffer();
      for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 3; j++) wt.put(j * 2 + i, w[i * 3 + j]);
      }
    };
    try (ConstantMap first = ConstantMap.create(); ConstantMap second = ConstantMap.create()) {
      first.put("w", new float[] {0, 1, 2, 3, 4, 5}, 2, 3);
      second.put("w", new float[] {10, 11, 12, 13, 14, 15}, 2, 3);
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> group.update(first));
      group.update(first, UpdateOptions.builder().fold(transpose).build());
      group.swap();
      assertEquals("one fold per replica", 2, calls[0]);
      for (Container c : replicas) {
        try (Run run = c.beginRun()) {
          assertArrayEquals(new float[] {0, 3, 1, 4, 2, 5}, floats(run.tensor("wt")), 0f);
        }
      }
      // Replica 1's fold fails: nothing changes on either replica.
      calls[0] = 0;
      WharfException e = assertThrows(WharfException.class,
          () -> group.update(second, UpdateOptions.builder().fold(run -> {
            if (calls[0] == 1) throw new IllegalStateException("replica 1's fold fails");
            transpose.apply(run);
          }).build()));
      assertEquals(WharfException.Code.FAILED_PRECONDITION, e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("replica 1's fold fails"));
      for (Container c : replicas) {
        try (Run run = c.beginRun()) {
          assertArrayEquals(new float[] {0, 3, 1, 4, 2, 5}, floats(run.tensor("wt")), 0f);
        }
      }
      // Group calls from inside the fold answer FAILED_PRECONDITION (the update goes on).
      List<WharfException.Code> nested = new ArrayList<>();
      group.update(second, UpdateOptions.builder().fold(run -> {
        try {
          group.swap();
        } catch (WharfException x) {
          nested.add(x.code());
        }
        transpose.apply(run);
      }).build());
      assertEquals(Arrays.asList(WharfException.Code.FAILED_PRECONDITION, WharfException.Code.FAILED_PRECONDITION),
          nested);
      group.swap();
      for (Container c : replicas) {
        try (Run run = c.beginRun()) {
          assertArrayEquals(new float[] {10, 13, 11, 14, 12, 15}, floats(run.tensor("wt")), 0f);
        }
      }
    }
  }
}
