// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.hostRuntime;
import static dev.wharf.TestSupport.iota;
import static dev.wharf.TestSupport.readFloats;
import static dev.wharf.TestSupport.writeState;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * State arenas and batched runs (experimental) on the host backend: "prefill" makes an arena
 * (states kv F32[2, 4], zeros, and pos I64), "decode" joins it (kv only); the arena's storage
 * is host memory, written through its address as a host "kernel" would.
 */
public class ArenaTest {
  private static final int KV = 8;
  private static final long SLOT_BYTES = KV * 4 + 8; // kv + pos

  private WharfRuntime runtime;
  private final List<AutoCloseable> closeLast = new ArrayList<>();

  @Before
  public void setUp() {
    runtime = hostRuntime();
  }

  @After
  public void tearDown() throws Exception {
    for (int i = closeLast.size() - 1; i >= 0; i--) closeLast.get(i).close();
    runtime.close();
  }

  private <T extends AutoCloseable> T keep(T c) {
    closeLast.add(c);
    return c;
  }

  /** A container over constant w = [1, 2] with {@code options}' states. */
  private Container container(String name, ContainerOptions.Builder options) {
    try (ConstantMap map = ConstantMap.create()) {
      map.put("w", new float[] {1f, 2f}, 2);
      return keep(Container.fromMap(runtime, map, name, options.build()));
    }
  }

  private Container prefill(long capacity) {
    return container("prefill", ContainerOptions.builder().state("kv", DType.F32, 2, 4).state("pos", DType.I64)
        .sessionCapacity(capacity));
  }

  private Container decode(Container arenaOf) {
    return container("decode", ContainerOptions.builder().state("kv", DType.F32, 2, 4).stateArenaOf(arenaOf));
  }

  private static void assertStats(Container c, long used, long free, long slotBytes) {
    StateArenaStats s = c.stateArenaStats();
    assertEquals(s.toString(), new StateArenaStats(used + free, used, free, (used + free) * slotBytes), s);
  }

  /** A run of c in s: checks kv holds {@code want}, then writes {@code next} (null: none). */
  private static void step(Container c, Session s, float[] want, float[] next) {
    try (Run run = c.beginRun(s)) {
      assertArrayEquals(want, readFloats(run, "kv"), 0f);
      if (next != null) writeState(run, "kv", next);
    }
  }

  private static long[] longs(TensorView t) {
    byte[] bytes = t.toByteArray();
    long[] values = new long[bytes.length / 8];
    ByteBuffer.wrap(bytes).order(ByteOrder.nativeOrder()).asLongBuffer().get(values);
    return values;
  }

  @Test
  public void sessionsTakeDistinctSlotsAndReuseFreedOnes() {
    Container prefill = prefill(3);
    Container decode = decode(prefill);
    assertEquals(3, prefill.stateArenaStats().numSlots());
    assertStats(prefill, 0, 3, SLOT_BYTES);
    assertStats(decode, 0, 3, SLOT_BYTES);
    List<Session> sessions = new ArrayList<>();
    Set<Long> slots = new HashSet<>();
    for (int i = 0; i < 3; i++) {
      Session s = keep(Session.create(runtime, prefill, decode));
      assertTrue("slot " + s.slot(), s.slot() >= 0 && s.slot() < 3);
      assertTrue("slot " + s.slot() + " twice", slots.add(s.slot()));
      sessions.add(s);
    }
    assertStats(prefill, 3, 0, SLOT_BYTES);
    assertWharfError(WharfException.Code.RESOURCE_EXHAUSTED, () -> Session.create(runtime, prefill, decode), "3");
    assertWharfError(WharfException.Code.RESOURCE_EXHAUSTED, () -> sessions.get(0).fork(), "3");
    assertStats(prefill, 3, 0, SLOT_BYTES);

    long freed = sessions.get(1).slot();
    sessions.get(1).close();
    assertStats(prefill, 2, 1, SLOT_BYTES);
    assertClosed("Session", () -> sessions.get(1).slot());
    Session again = keep(Session.create(runtime, prefill, decode));
    assertEquals(freed, again.slot());

    float[] zeros = new float[KV];
    step(prefill, sessions.get(0), zeros, iota(KV, 10));
    step(decode, again, zeros, iota(KV, 20));
    step(decode, sessions.get(0), iota(KV, 10), null);
    step(prefill, again, iota(KV, 20), null);
    sessions.get(0).reset();
    step(prefill, sessions.get(0), zeros, null);

    Container plain = container("plain", ContainerOptions.builder().state("kv", DType.F32, 2, 4));
    try (Session s = Session.create(runtime, plain)) {
      assertEquals(-1, s.slot());
    }
    assertWharfError(WharfException.Code.FAILED_PRECONDITION, plain::stateArenaStats);
  }

  @Test
  public void arenaOptionsAreChecked() {
    assertThrows(IllegalArgumentException.class, () -> ContainerOptions.builder().sessionCapacity(-1));
    assertThrows(IllegalArgumentException.class, () -> ContainerOptions.builder().sessionCapacity(1L << 32));
    assertThrows(IllegalArgumentException.class, () -> ModelOptions.builder().sessionCapacity(-1));
    assertThrows(IllegalArgumentException.class, () -> ModelPackageOptions.builder().sessionCapacity(1L << 32));
    assertEquals(64, ModelOptions.builder().sessionCapacity(64).build().sessionCapacity());
    assertEquals(8, ModelPackageOptions.builder().sessionCapacity(8).build().sessionCapacity());
    assertEquals(0, ContainerOptions.defaults().sessionCapacity());
    assertNull(ContainerOptions.defaults().stateArenaOf());

    Container prefill = prefill(2);
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> container("both",
        ContainerOptions.builder().state("kv", DType.F32, 2, 4).sessionCapacity(2).stateArenaOf(prefill)));
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> container("other",
        ContainerOptions.builder().state("h", DType.F32, 3).stateArenaOf(prefill)), "h");
    Container gone = container("gone", ContainerOptions.builder().state("kv", DType.F32, 2, 4).sessionCapacity(1));
    gone.close();
    assertClosed("Container", () -> decode(gone));

    // The arena outlives the container that made it while a joiner uses it.
    Container maker = container("maker", ContainerOptions.builder().state("kv", DType.F32, 2, 4).sessionCapacity(2));
    Container joiner = decode(maker);
    maker.close();
    assertStats(joiner, 0, 2, KV * 4);
  }

  @Test
  public void aBatchedRunPinsOneGenerationOverItsSessions() {
    Container prefill = prefill(4);
    Container decode = decode(prefill);
    List<Session> s = new ArrayList<>();
    for (int i = 0; i < 4; i++) s.add(keep(Session.create(runtime, prefill, decode)));
    for (int i = 0; i < 4; i++) step(decode, s.get(i), new float[KV], iota(KV, 100 * (i + 1)));
    List<Session> batch = Arrays.asList(s.get(2), s.get(0), s.get(3));
    long generation = decode.generation();
    Run run = decode.beginBatch(batch);
    TensorView idx;
    try {
      assertEquals(3, run.numSessions());
      assertEquals(batch, run.sessions());
      assertNull(run.session());
      idx = run.slotIndices();
      assertEquals(DType.I64, idx.dtype());
      assertArrayEquals(new long[] {3}, idx.shape());
      assertTrue(idx.isReadOnly());
      assertArrayEquals(new long[] {s.get(2).slot(), s.get(0).slot(), s.get(3).slot()}, longs(idx));

      TensorView kv = run.tensor("kv");
      assertArrayEquals(new long[] {4, 2, 4}, kv.shape());
      float[] all = readFloats(run, "kv");
      for (int i = 0; i < 4; i++) {
        int slot = (int) s.get(i).slot();
        assertArrayEquals("slot " + slot, iota(KV, 100 * (i + 1)), Arrays.copyOfRange(all, slot * KV, slot * KV + KV), 0f);
      }
      for (Session b : batch) Arrays.fill(all, (int) b.slot() * KV, (int) b.slot() * KV + KV, -b.slot());
      writeState(run, "kv", all);

      // Pinned: an update swapped in meanwhile is not the batch's.
      try (ConstantMap map = ConstantMap.create()) {
        map.put("w", new float[] {5f, 6f}, 2);
        decode.update(map, UpdateOptions.defaults());
      }
      decode.swap();
      assertEquals(generation, run.generation());
      assertNotEquals(generation, decode.generation());
      assertArrayEquals(new float[] {1f, 2f}, readFloats(run, "w"), 0f);

      // Busy while the batch is open; a session outside it runs.
      assertWharfError(WharfException.Code.BUSY, () -> decode.beginRun(s.get(0)));
      step(prefill, s.get(1), iota(KV, 200), null);
    } finally {
      run.close();
    }
    assertClosed("Run", idx::toByteArray);
    assertClosed("Run", run::numSessions);
    for (Session b : batch) {
      float[] want = new float[KV];
      Arrays.fill(want, -b.slot());
      step(prefill, b, want, null);
    }
    try (Run one = prefill.beginRun(s.get(3))) {
      assertEquals(1, one.numSessions());
      assertEquals(Arrays.asList(s.get(3)), one.sessions());
      assertArrayEquals(new long[] {s.get(3).slot()}, longs(one.slotIndices()));
    }
  }

  @Test
  public void aBusySessionRefusesTheBatchAndNothingIsClaimed() {
    Container prefill = prefill(4);
    Container decode = decode(prefill);
    Session a = keep(Session.create(runtime, prefill, decode));
    Session b = keep(Session.create(runtime, prefill, decode));
    try (Run busy = decode.beginRun(b)) {
      assertEquals(b, busy.session());
      assertWharfError(WharfException.Code.BUSY, () -> decode.beginBatch(a, b), "1");
      step(decode, a, new float[KV], null); // a was not claimed
    }
    decode.beginBatch(a, b).close();

    assertThrows(IllegalArgumentException.class, () -> decode.beginBatch());
    assertThrows(NullPointerException.class, () -> decode.beginBatch(a, null));
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> decode.beginBatch(a, a));
    Session onlyPrefill = keep(Session.create(runtime, prefill));
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> decode.beginBatch(a, onlyPrefill));
    Container plain = container("plain", ContainerOptions.builder().state("kv", DType.F32, 2, 4));
    try (Session p = Session.create(runtime, plain)) {
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> plain.beginBatch(p));
      try (Run run = plain.beginRun(p)) {
        assertWharfError(WharfException.Code.FAILED_PRECONDITION, run::slotIndices);
      }
    }
    // A session closed while its batch is open: the run keeps it (and its slot).
    Session c = Session.create(runtime, prefill);
    try (Run run = prefill.beginBatch(a, c)) {
      c.close();
      assertStats(prefill, 4, 0, SLOT_BYTES);
      assertEquals(2, run.numSessions());
    }
    assertStats(prefill, 3, 1, SLOT_BYTES);
    b.close();
    assertClosed("Session", () -> decode.beginBatch(a, b));
  }
}
