// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.hostRuntime;
import static dev.wharf.TestSupport.readFloats;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.After;
import org.junit.Test;

/**
 * Replica groups across processes (experimental tier) on the host backend: two ranks in one
 * JVM, each with its own runtime and container on its own thread, meeting over the host
 * transport's Unix socket as two processes would.
 */
public class RankGroupTest {
  private final List<AutoCloseable> closeLast = new ArrayList<>();

  @After
  public void tearDown() throws Exception {
    Collections.reverse(closeLast);
    for (AutoCloseable c : closeLast) c.close();
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    closeLast.add(c);
    return c;
  }

  private static ConstantMap map(float v) {
    ConstantMap m = ConstantMap.create();
    m.put("w", new float[] {v, v, v, v}, 4);
    return m;
  }

  private static float[] served(Container c) {
    try (Run run = c.beginRun()) {
      return readFloats(run, "w");
    }
  }

  private Container container(WharfRuntime rt, String name) {
    try (ConstantMap ones = map(1)) {
      return closeLater(Container.fromMap(rt, ones, name));
    }
  }

  @Test
  public void anIdRoundTripsThroughBytes() {
    WharfRuntime rt = closeLater(hostRuntime());
    ReplicaGroupId id = ReplicaGroupId.create(rt);
    byte[] bytes = id.toBytes();
    assertEquals(ReplicaGroupId.SIZE, bytes.length);
    assertTrue(!Arrays.equals(new byte[ReplicaGroupId.SIZE], bytes));
    assertEquals(id, ReplicaGroupId.fromBytes(bytes));
    bytes[0] ^= (byte) 0xff; // toBytes and fromBytes copy
    assertArrayEquals(id.toBytes(), ReplicaGroupId.fromBytes(id.toBytes()).toBytes());
    assertNotEquals(id, ReplicaGroupId.fromBytes(bytes));
    assertNotEquals(id, ReplicaGroupId.create(rt));
    for (int n : new int[] {0, 255, 257}) {
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> ReplicaGroupId.fromBytes(new byte[n]), "256 bytes",
          "got " + n);
    }
    assertThrows(NullPointerException.class, () -> ReplicaGroupId.fromBytes(null));
    assertThrows(NullPointerException.class, () -> ReplicaGroupId.create(null));
    WharfRuntime closed = hostRuntime();
    closed.close();
    assertClosed("WharfRuntime", () -> ReplicaGroupId.create(closed));
  }

  @Test
  public void argumentErrorsCarryTheCCode() {
    WharfRuntime rt = closeLater(hostRuntime());
    Container c = container(rt, "solo");
    ReplicaGroupId id = ReplicaGroupId.create(rt);
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> ReplicaGroup.createRank(c, id, 0, 0));
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> ReplicaGroup.createRank(c, id, 2, 2));
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> ReplicaGroup.createRank(c, id, -1, 2), "negative");
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> ReplicaGroup.createRank(c, ReplicaGroupId.fromBytes(new byte[ReplicaGroupId.SIZE]), 0, 1));
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> ReplicaGroup.createRank(c, id, 0, 1, Duration.ofMillis(1L << 33)), "timeout");
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> ReplicaGroup.createRank(c, id, 0, 1, Duration.ofSeconds(-1)), "negative");
    assertThrows(NullPointerException.class, () -> ReplicaGroup.createRank(null, id, 0, 1));
    assertThrows(NullPointerException.class, () -> ReplicaGroup.createRank(c, null, 0, 1));
    // Rank 0 of two with nobody joining: IO_ERROR within the timeout, naming the missing rank.
    ReplicaGroupId lone = ReplicaGroupId.create(rt);
    assertWharfError(WharfException.Code.IO_ERROR,
        () -> ReplicaGroup.createRank(c, lone, 0, 2, Duration.ofMillis(300)), "rank(s) 1 of 2");
    // Nothing joined: the container updates on its own.
    try (ConstantMap ones = map(1)) {
      c.update(ones);
      c.swap();
    }

    // A group of one rank: update/swap refuse, updateRanks wants a map on rank 0.
    try (ConstantMap twos = map(2); ConstantMap threes = map(3)) {
      ReplicaGroup g = ReplicaGroup.createRank(c, id, 0, 1);
      assertEquals(1, g.numReplicas());
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> g.update(twos));
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> g.swap());
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> g.updateRanks(null));
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> ReplicaGroup.createRank(c, id, 0, 1));
      // A fold is passed through; with no derived constants it is never called.
      g.updateRanks(twos, UpdateOptions.builder().fold(run -> {
        throw new AssertionError("a fold called for a container without derived constants");
      }).build());
      assertArrayEquals(new float[] {2, 2, 2, 2}, served(c), 0f);
      g.close();
      assertClosed("ReplicaGroup", () -> g.updateRanks(threes));
      // A group made by create(...) refuses updateRanks.
      try (ReplicaGroup inproc = ReplicaGroup.create(c)) {
        assertWharfError(WharfException.Code.FAILED_PRECONDITION, () -> inproc.updateRanks(threes));
      }
      ConstantMap closedMap = map(4);
      closedMap.close();
      try (ReplicaGroup again = ReplicaGroup.createRank(c, id, 0, 1)) {
        assertClosed("ConstantMap", () -> again.updateRanks(closedMap));
      }
    }
    c.close();
    assertClosed("Container", () -> ReplicaGroup.createRank(c, id, 0, 1));
  }

  @Test
  public void twoRanksOnThreadsUpdateTogether() throws Exception {
    Container c0 = container(closeLater(hostRuntime()), "rank0");
    Container c1 = container(closeLater(hostRuntime()), "rank1");
    ReplicaGroupId id = ReplicaGroupId.create(hostRuntimeKept());
    byte[] wire = id.toBytes(); // as through a control plane
    Duration timeout = Duration.ofSeconds(20);
    AtomicReference<ReplicaGroup> g1 = new AtomicReference<>();
    AtomicReference<Throwable> failed = new AtomicReference<>();
    Thread rank1 = new Thread(() -> {
      try {
        ReplicaGroup g = ReplicaGroup.createRank(c1, ReplicaGroupId.fromBytes(wire), 1, 2, timeout);
        g1.set(g);
        g.updateRanks(null);
      } catch (Throwable t) {
        failed.set(t);
      }
    }, "rank1");
    rank1.start();
    try (ReplicaGroup g0 = ReplicaGroup.createRank(c0, id, 0, 2, timeout); ConstantMap twos = map(2)) {
      g0.updateRanks(twos, UpdateOptions.builder().requireFull(true).build());
      rank1.join(30_000);
      if (failed.get() != null) throw new AssertionError("rank 1 failed", failed.get());
      try (ReplicaGroup g = g1.get()) {
        assertEquals(2, g0.numReplicas());
        assertEquals(2, g.numReplicas());
        assertArrayEquals(new float[] {2, 2, 2, 2}, served(c0), 0f);
        assertArrayEquals(new float[] {2, 2, 2, 2}, served(c1), 0f);
        ReplicaGroupStats s0 = g0.stats();
        ReplicaGroupStats s1 = g.stats();
        assertEquals(16, s0.sourceBytes());
        assertTrue(s0.broadcastBytes() > 0);
        assertEquals(s0.broadcastBytes(), s1.broadcastBytes());
      }
    } finally {
      rank1.join(30_000);
    }
  }

  private WharfRuntime hostRuntimeKept() {
    return closeLater(hostRuntime());
  }
}
