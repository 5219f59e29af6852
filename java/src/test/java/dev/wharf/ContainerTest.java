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

import java.util.Arrays;
import java.util.List;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/** {@link Container}: declarations, updates, swaps, errors and lifetimes. */
public class ContainerTest {
  private static final List<ConstantDecl> DECLS = Arrays.asList(
      ConstantDecl.of("embed", DType.F32, 4, 2),
      ConstantDecl.of("head.bias", DType.F32, Placement.HOST, 2),
      ConstantDecl.of("step", DType.I64));

  private WharfRuntime runtime;

  @Before
  public void setUp() {
    runtime = hostRuntime();
  }

  @After
  public void tearDown() {
    runtime.close();
  }

  /** A map with every constant of DECLS, values offset by {@code base}. */
  private static ConstantMap fullMap(float base) {
    ConstantMap map = ConstantMap.create();
    map.put("embed", iota(8, base), 4, 2);
    map.put("head.bias", iota(2, base + 100), 2);
    map.put("step", new long[] {(long) base});
    return map;
  }

  @Test
  public void declaredContainerDescribesItsConstants() {
    try (Container model = Container.create(runtime, "decl", DECLS)) {
      assertEquals("decl", model.name());
      assertSame(runtime, model.runtime());
      assertEquals(3, model.numConstants());
      ConstantInfo embed = model.constantInfo(0);
      assertEquals("embed", embed.fqn());
      assertEquals(DType.F32, embed.dtype());
      assertArrayEquals(new long[] {4, 2}, embed.shape());
      assertEquals(Placement.DEVICE, embed.placement());
      assertFalse(embed.derived());
      assertEquals(32, embed.byteSize());
      ConstantInfo bias = model.constantInfo(1);
      assertEquals(Placement.HOST, bias.placement());
      ConstantInfo step = model.constantInfo(2);
      assertEquals(0, step.shape().length);
      assertEquals(8, step.byteSize());
      assertEquals(Arrays.asList(embed, bias, step), model.constants());
      assertThrows(IndexOutOfBoundsException.class, () -> model.constantInfo(3));
      assertThrows(IndexOutOfBoundsException.class, () -> model.constantInfo(-1));
      assertEquals(0, model.generation());
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, model::beginRun, "decl", "no active weights");
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, model::swap, "decl");
    }
  }

  @Test
  public void nullNameMeansModel() {
    try (Container model = Container.create(runtime, null, DECLS)) {
      assertEquals("model", model.name());
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, model::beginRun, "'model'");
    }
  }

  @Test
  public void badDeclarationsAreRejectedByName() {
    assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> Container.create(runtime, "dup",
        Arrays.asList(ConstantDecl.of("w", DType.F32, 2), ConstantDecl.of("w", DType.F32, 2))), "'w'", "twice");
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> Container.create(runtime, "empty", Arrays.asList(ConstantDecl.of("", DType.F32, 2))));
    assertThrows(NullPointerException.class, () -> Container.create(runtime, "n", Arrays.asList((ConstantDecl) null)));
    IllegalArgumentException rank = assertThrows(IllegalArgumentException.class, () -> Container.create(runtime, "r",
        Arrays.asList(ConstantDecl.of("deep", DType.F32, 1, 1, 1, 1, 1, 1, 1, 1, 1))));
    assertTrue(rank.getMessage(), rank.getMessage().contains("'deep'"));
  }

  @Test
  public void firstSwapNeedsEveryConstantWritten() {
    try (Container model = Container.create(runtime, "fresh", DECLS); ConstantMap partial = ConstantMap.create()) {
      partial.put("embed", iota(8, 0), 4, 2);
      model.update(partial);
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, model::swap, "head.bias");
      try (ConstantMap rest = ConstantMap.create()) {
        rest.put("head.bias", iota(2, 0), 2);
        rest.put("step", new long[] {0});
        model.update(rest);
      }
      model.swap();
      assertNotEquals(0, model.generation());
    }
  }

  @Test
  public void updateAndSwapPublishNewValues() {
    try (Container model = Container.create(runtime, "m", DECLS)) {
      try (ConstantMap v1 = fullMap(1)) {
        model.update(v1, UpdateOptions.builder().requireFull(true).build());
      }
      model.swap();
      long g1 = model.generation();
      try (Run run = model.beginRun()) {
        assertEquals(g1, run.generation());
        assertArrayEquals(iota(8, 1), floats(run.tensor("embed")), 0f);
        assertArrayEquals(iota(2, 101), floats(run.tensor("head.bias")), 0f);
      }
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("head.bias", new float[] {-1f, -2f}, 2);
        model.update(patch);
      }
      try (Run stillOld = model.beginRun()) { // not swapped yet
        assertArrayEquals(iota(2, 101), floats(stillOld.tensor("head.bias")), 0f);
      }
      model.swap();
      long g2 = model.generation();
      assertNotEquals(g1, g2);
      try (Run run = model.beginRun()) {
        assertArrayEquals(new float[] {-1f, -2f}, floats(run.tensor("head.bias")), 0f);
        assertArrayEquals(iota(8, 1), floats(run.tensor("embed")), 0f); // left out: active values
      }
      model.swap(); // swapping again without an update rolls back
      try (Run run = model.beginRun()) {
        assertArrayEquals(iota(2, 101), floats(run.tensor("head.bias")), 0f);
      }
      model.freeInactive();
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, model::swap, "nothing to swap");
    }
  }

  @Test
  public void updatesShareUnchangedStorage() {
    try (ConstantMap initial = fullMap(0); Container model = Container.fromMap(runtime, initial, "cow")) {
      long full = runtime.memoryStats().current(MemoryTag.CONSTANTS);
      assertEquals(32 + 8 + 8, full);
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("head.bias", new float[] {5f, 6f}, 2);
        model.update(patch);
      }
      // only the updated constant got fresh storage
      assertEquals(full + 8, runtime.memoryStats().current(MemoryTag.CONSTANTS));
    }
  }

  @Test
  public void inPlaceUpdateIsSeenWithoutASwapUnderANewGeneration() {
    try (ConstantMap initial = fullMap(0); Container model = Container.fromMap(runtime, initial, "inplace")) {
      long generation = model.generation();
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("embed", iota(8, 50), 4, 2);
        model.update(patch, UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE).build());
      }
      // An in-place update publishes a new generation id (0.3); runs begun afterwards report it.
      assertTrue("in place kept generation " + generation, model.generation() > generation);
      try (Run run = model.beginRun()) {
        assertEquals(model.generation(), run.generation());
        assertArrayEquals(iota(8, 50), floats(run.tensor("embed")), 0f);
      }
    }
  }

  @Test
  public void updateOptionsInPlaceMaxWaitAndWaitStream() {
    UpdateOptions defaults = UpdateOptions.defaults();
    assertEquals(java.time.Duration.ofSeconds(1), defaults.inPlaceMaxWait());
    assertEquals(1000, defaults.inPlaceMaxWaitMillis());
    assertEquals(0, defaults.waitStream());
    UpdateOptions o = UpdateOptions.builder().inPlaceMaxWait(java.time.Duration.ofNanos(2_500_000)).waitStream(0x1234).build();
    assertEquals(java.time.Duration.ofMillis(2), o.inPlaceMaxWait()); // whole milliseconds
    assertEquals(0x1234, o.waitStream());
    assertTrue(o.toString(), o.toString().contains("waitStream=0x1234"));
    assertThrows(IllegalArgumentException.class,
        () -> UpdateOptions.builder().inPlaceMaxWait(java.time.Duration.ofMillis(-1)));
    assertThrows(IllegalArgumentException.class,
        () -> UpdateOptions.builder().inPlaceMaxWait(java.time.Duration.ofMillis(1L << 32)));
    UpdateOptions.builder().inPlaceMaxWait(java.time.Duration.ofMillis(0xFFFFFFFFL)).build();

    try (ConstantMap initial = fullMap(0); Container model = Container.fromMap(runtime, initial, "waits");
         ConstantMap patch = ConstantMap.create()) {
      patch.put("head.bias", new float[] {7f, 8f}, 2);
      // A CUDA stream means nothing to the host backend: refused, nothing changed.
      long generation = model.generation();
      assertWharfError(WharfException.Code.INVALID_ARGUMENT,
          () -> model.update(patch, UpdateOptions.builder().waitStream(0x1234).build()), "wait_stream");
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> model.update(patch,
          UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE).waitStream(0x1234).build()), "wait_stream");
      assertEquals(generation, model.generation());
      model.update(patch, UpdateOptions.builder().waitStream(0).build()); // 0 = none

      // In place with a run open on the constant: with no wait, the constant gets fresh
      // storage at once; with a wait, the update waits that long for the run first.
      UpdateOptions inPlace = UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE)
          .inPlaceMaxWait(java.time.Duration.ZERO).build();
      try (Run open = model.beginRun()) {
        long start = System.nanoTime();
        model.update(patch, inPlace);
        long noWaitMillis = (System.nanoTime() - start) / 1_000_000;
        assertTrue("an in-place update with inPlaceMaxWait 0 took " + noWaitMillis + " ms", noWaitMillis < 900);
        start = System.nanoTime();
        try (ConstantMap again = ConstantMap.create()) {
          again.put("head.bias", new float[] {9f, 10f}, 2);
          try (Run second = model.beginRun()) {
            model.update(again, UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE)
                .inPlaceMaxWait(java.time.Duration.ofMillis(300)).build());
            long waitedMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue("waited only " + waitedMillis + " ms of 300", waitedMillis >= 290);
            assertArrayEquals(new float[] {7f, 8f}, floats(second.tensor("head.bias")), 0f);
          }
        }
        assertArrayEquals(new float[] {100f, 101f}, floats(open.tensor("head.bias")), 0f); // never changes
      }
      try (Run run = model.beginRun()) {
        assertArrayEquals(new float[] {9f, 10f}, floats(run.tensor("head.bias")), 0f);
      }
    }
  }

  @Test
  public void badUpdatesNameTheConstantAndChangeNothing() {
    try (ConstantMap initial = fullMap(0); Container model = Container.fromMap(runtime, initial, "strict")) {
      long generation = model.generation();
      try (ConstantMap unknown = ConstantMap.create()) {
        unknown.put("head.bias", new float[] {9f, 9f}, 2);
        unknown.put("layers.7.weight", new float[] {1f}, 1);
        assertWharfError(WharfException.Code.NOT_FOUND, () -> model.update(unknown), "layers.7.weight", "strict");
      }
      try (ConstantMap shape = ConstantMap.create()) {
        shape.put("embed", new float[8], 2, 4);
        assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> model.update(shape), "embed", "[4, 2]", "[2, 4]");
      }
      try (ConstantMap dtype = ConstantMap.create()) {
        dtype.put("step", new int[] {1});
        assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> model.update(dtype), "step", "I64", "I32");
      }
      try (ConstantMap partial = ConstantMap.create()) {
        partial.put("embed", new float[8], 4, 2);
        assertWharfError(WharfException.Code.INVALID_ARGUMENT,
            () -> model.update(partial, UpdateOptions.builder().requireFull(true).build()), "require_full", "head.bias");
      }
      // nothing was staged by the failed updates
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, model::swap);
      assertEquals(generation, model.generation());
      try (Run run = model.beginRun()) {
        assertArrayEquals(iota(2, 100), floats(run.tensor("head.bias")), 0f);
      }
    }
  }

  @Test
  public void fromMapCopiesSoTheMapMayBeClosed() {
    Container model;
    try (ConstantMap map = fullMap(3)) {
      model = Container.fromMap(runtime, map, null);
    }
    try (Container m = model; Run run = m.beginRun()) {
      assertEquals("model", m.name());
      assertArrayEquals(iota(8, 3), floats(run.tensor("embed")), 0f);
    }
  }

  @Test
  public void closeTwiceIsANoOpAndUseAfterCloseThrows() {
    Container model;
    try (ConstantMap initial = fullMap(0)) {
      model = Container.fromMap(runtime, initial, "gone");
    }
    model.close();
    model.close();
    assertTrue(model.isClosed());
    assertEquals("Container 'gone'{closed}", model.toString());
    assertClosed("Container 'gone'", model::beginRun);
    assertClosed("Container 'gone'", model::swap);
    assertClosed("Container 'gone'", model::freeInactive);
    assertClosed("Container 'gone'", model::generation);
    assertClosed("Container 'gone'", model::numConstants);
    assertClosed("Container 'gone'", () -> model.constantInfo(0));
    assertClosed("Container 'gone'", model::constants);
    try (ConstantMap map = fullMap(1)) {
      assertClosed("Container 'gone'", () -> model.update(map));
    }
    assertFalse(runtime.isClosed());
    runtime.memoryStats();
  }

  @Test
  public void runtimeClosedFirstKeepsTheContainerWorking() {
    Container model;
    try (ConstantMap map = fullMap(0)) {
      model = Container.fromMap(runtime, map, "orphan");
    }
    runtime.close();
    assertClosed("WharfRuntime", runtime::memoryStats);
    try (Container m = model) {
      assertSame(runtime, m.runtime());
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("embed", iota(8, 10), 4, 2);
        m.update(patch);
      }
      m.swap();
      try (Run run = m.beginRun()) {
        assertArrayEquals(iota(8, 10), floats(run.tensor("embed")), 0f);
      }
    }
  }
}
