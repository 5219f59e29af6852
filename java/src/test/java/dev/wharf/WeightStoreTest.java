// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.floats;
import static dev.wharf.TestSupport.hostRuntime;
import static dev.wharf.TestSupport.iota;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.Collections;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * {@link WeightStore}: containers over overlapping maps share one copy of each weight, a
 * disagreeing declaration is refused, store updates reach every member, lifetimes.
 */
public class WeightStoreTest {
  // prefill: embed F32[4,2] (32 B), norm F32[2] (8 B), prefill.head F32[3] (12 B)
  // decode:  embed F32[4,2],        norm F32[2],       decode.head F32[2,2] (16 B)
  private static final long UNION_BYTES = 32 + 8 + 12 + 16;
  private static final long SHARED_BYTES = 32 + 8;

  private WharfRuntime runtime;
  private WeightStore store;
  private ContainerOptions shared;

  @Before
  public void setUp() {
    runtime = hostRuntime();
    store = WeightStore.create(runtime);
    shared = ContainerOptions.builder().store(store).build();
  }

  @After
  public void tearDown() {
    store.close();
    runtime.close();
  }

  private static ConstantMap prefillWeights() {
    ConstantMap map = ConstantMap.create();
    map.put("embed", iota(8, 0), 4, 2);
    map.put("norm", new float[] {1f, 2f}, 2);
    map.put("prefill.head", iota(3, 10), 3);
    return map;
  }

  private static ConstantMap decodeWeights() {
    ConstantMap map = ConstantMap.create();
    map.put("embed", iota(8, 0), 4, 2);
    map.put("norm", new float[] {1f, 2f}, 2);
    map.put("decode.head", iota(4, 20), 2, 2);
    return map;
  }

  private Container prefill() {
    try (ConstantMap map = prefillWeights()) {
      return Container.fromMap(runtime, map, "prefill", shared);
    }
  }

  private Container decode() {
    try (ConstantMap map = decodeWeights()) {
      return Container.fromMap(runtime, map, "decode", shared);
    }
  }

  @Test
  public void twoContainersOverOverlappingMapsShareStorage() {
    assertEquals(new WeightStoreStats(0, 0, 0, 0), store.stats());
    try (Container prefill = prefill(); Container decode = decode();
         Run p = prefill.beginRun(); Run d = decode.beginRun()) {
      assertSame(store, prefill.store());
      // one copy of each shared weight: the same storage in both containers
      assertEquals(p.tensor("embed").address(), d.tensor("embed").address());
      assertEquals(p.tensor("norm").address(), d.tensor("norm").address());
      assertNotEquals(p.tensor("prefill.head").address(), d.tensor("decode.head").address());
      assertArrayEquals(iota(8, 0), floats(d.tensor("embed")), 0f);
      assertArrayEquals(new float[] {1f, 2f}, floats(p.tensor("norm")), 0f);
      assertArrayEquals(iota(4, 20), floats(d.tensor("decode.head")), 0f);

      WeightStoreStats stats = store.stats();
      assertEquals(stats.toString(), 4, stats.numUniqueConstants());
      assertEquals(stats.toString(), UNION_BYTES, stats.uniqueBytes());
      assertEquals(stats.toString(), 6, stats.numReferences());
      assertEquals(stats.toString(), SHARED_BYTES, stats.savedBytes());
      // the union of the weights, not the sum
      assertEquals(UNION_BYTES, runtime.memoryStats().current(MemoryTag.CONSTANTS));
    }
  }

  @Test
  public void containerWithoutAStoreSharesNothing() {
    try (Container prefill = prefill(); ConstantMap map = decodeWeights();
         Container alone = Container.fromMap(runtime, map, "alone");
         Run p = prefill.beginRun(); Run a = alone.beginRun()) {
      assertNull(alone.store());
      assertNotEquals(p.tensor("embed").address(), a.tensor("embed").address());
      assertEquals(3, store.stats().numUniqueConstants());
    }
  }

  @Test
  public void storeAssumesOneFqnNamesOneWeight() {
    // wharf.h: for constants the store already holds, the map's data is not read
    try (Container prefill = prefill(); ConstantMap other = ConstantMap.create()) {
      assertSame(store, prefill.store());
      other.put("norm", new float[] {-5f, -6f}, 2);
      try (Container late = Container.fromMap(runtime, other, "late", shared); Run run = late.beginRun()) {
        assertArrayEquals(new float[] {1f, 2f}, floats(run.tensor("norm")), 0f);
      }
    }
  }

  @Test
  public void declaredContainerTakesTheStoresStorageWhenItFirstWritesAConstant() {
    try (Container prefill = prefill();
         Container declared = Container.create(runtime, "declared",
             Arrays.asList(ConstantDecl.of("norm", DType.F32, 2), ConstantDecl.of("own", DType.F32, 2)), shared)) {
      try (ConstantMap first = ConstantMap.create()) {
        first.put("norm", new float[] {-9f, -9f}, 2); // held by the store: taken, not copied
        first.put("own", new float[] {3f, 4f}, 2);
        declared.update(first);
      }
      declared.swap();
      try (Run p = prefill.beginRun(); Run d = declared.beginRun()) {
        assertEquals(p.tensor("norm").address(), d.tensor("norm").address());
        assertArrayEquals(new float[] {1f, 2f}, floats(d.tensor("norm")), 0f);
        assertArrayEquals(new float[] {3f, 4f}, floats(d.tensor("own")), 0f);
      }
      assertEquals(8, store.stats().savedBytes());
    }
  }

  @Test
  public void disagreeingDeclarationUnderASharedFqnIsRefused() {
    try (Container prefill = prefill()) {
      assertEquals("prefill", prefill.name());
      WeightStoreStats before = store.stats();
      try (ConstantMap wrongShape = ConstantMap.create()) {
        wrongShape.put("norm", new float[] {1f, 2f, 3f}, 3);
        assertWharfError(WharfException.Code.INVALID_ARGUMENT,
            () -> Container.fromMap(runtime, wrongShape, "wide", shared), "norm", "prefill", "wide");
      }
      assertWharfError(WharfException.Code.INVALID_ARGUMENT,
          () -> Container.create(runtime, "half", Arrays.asList(ConstantDecl.of("embed", DType.F16, 4, 2)), shared),
          "embed", "prefill", "half");
      assertEquals(before, store.stats());
      // the same declarations without the store are fine
      try (ConstantMap wrongShape = ConstantMap.create()) {
        wrongShape.put("norm", new float[] {1f, 2f, 3f}, 3);
        Container.fromMap(runtime, wrongShape, "wide", ContainerOptions.defaults()).close();
      }
    }
  }

  @Test
  public void storeUpdateAndSwapAreVisibleInBoth() {
    try (Container prefill = prefill(); Container decode = decode()) {
      long pGen = prefill.generation();
      long dGen = decode.generation();
      long oldNorm;
      try (Run p = prefill.beginRun()) {
        oldNorm = p.tensor("norm").address();
      }
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("norm", new float[] {9f, 8f}, 2);
        patch.put("decode.head", iota(4, 50), 2, 2);
        store.update(patch);
      }
      // staged, not yet visible
      assertEquals(pGen, prefill.generation());
      try (Run d = decode.beginRun()) {
        assertArrayEquals(new float[] {1f, 2f}, floats(d.tensor("norm")), 0f);
      }
      // one allocation per FQN, not one per container
      assertEquals(UNION_BYTES + 8 + 16, runtime.memoryStats().current(MemoryTag.CONSTANTS));
      store.swap();
      assertNotEquals(pGen, prefill.generation());
      assertNotEquals(dGen, decode.generation());
      try (Run p = prefill.beginRun(); Run d = decode.beginRun()) {
        assertArrayEquals(new float[] {9f, 8f}, floats(p.tensor("norm")), 0f);
        assertArrayEquals(new float[] {9f, 8f}, floats(d.tensor("norm")), 0f);
        assertEquals(p.tensor("norm").address(), d.tensor("norm").address());
        assertNotEquals(oldNorm, p.tensor("norm").address());
        assertArrayEquals(iota(4, 50), floats(d.tensor("decode.head")), 0f);
        // what the update left out keeps its shared storage
        assertEquals(p.tensor("embed").address(), d.tensor("embed").address());
        assertArrayEquals(iota(3, 10), floats(p.tensor("prefill.head")), 0f);
      }
      assertEquals(6, store.stats().numReferences());
    }
  }

  @Test
  public void badStoreUpdatesStageNothing() {
    try (Container prefill = prefill(); Container decode = decode()) {
      assertSame(store, decode.store());
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, store::swap);
      try (ConstantMap unknown = ConstantMap.create()) {
        unknown.put("norm", new float[] {3f, 3f}, 2);
        unknown.put("nowhere", new float[] {1f}, 1);
        assertWharfError(WharfException.Code.NOT_FOUND, () -> store.update(unknown), "nowhere");
      }
      try (ConstantMap shape = ConstantMap.create()) {
        shape.put("norm", new float[] {3f, 3f, 3f}, 3);
        assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> store.update(shape), "norm");
      }
      try (ConstantMap inPlace = ConstantMap.create()) {
        inPlace.put("norm", new float[] {3f, 3f}, 2);
        assertWharfError(WharfException.Code.UNSUPPORTED, () -> store.update(inPlace,
            UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE).build()));
      }
      assertWharfError(WharfException.Code.FAILED_PRECONDITION, store::swap);
      try (Run p = prefill.beginRun()) {
        assertArrayEquals(new float[] {1f, 2f}, floats(p.tensor("norm")), 0f);
      }
    }
  }

  @Test
  public void containerUpdateDetachesWhatItWrites() {
    try (Container prefill = prefill(); Container decode = decode()) {
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("norm", new float[] {7f, 7f}, 2);
        prefill.update(patch);
      }
      prefill.swap();
      try (Run p = prefill.beginRun(); Run d = decode.beginRun()) {
        assertArrayEquals(new float[] {7f, 7f}, floats(p.tensor("norm")), 0f);
        assertArrayEquals(new float[] {1f, 2f}, floats(d.tensor("norm")), 0f); // copy-on-write
        assertNotEquals(p.tensor("norm").address(), d.tensor("norm").address());
        assertEquals(p.tensor("embed").address(), d.tensor("embed").address());
      }
    }
  }

  @Test
  public void closeTwiceIsANoOpAndUseAfterCloseThrows() {
    store.close();
    store.close();
    assertTrue(store.isClosed());
    assertEquals("WeightStore{closed}", store.toString());
    assertClosed("WeightStore", store::stats);
    assertClosed("WeightStore", store::swap);
    try (ConstantMap map = prefillWeights()) {
      assertClosed("WeightStore", () -> store.update(map));
      assertClosed("WeightStore", () -> Container.fromMap(runtime, map, "late", shared));
    }
    assertClosed("WeightStore", () -> Container.create(runtime, "late", Collections.emptyList(), shared));
  }

  @Test
  public void storeAndRuntimeClosedFirstKeepTheContainersWorking() {
    Container prefill = prefill();
    Container decode = decode();
    store.close();
    runtime.close();
    try (Container p = prefill; Container d = decode) {
      try (Run pr = p.beginRun(); Run dr = d.beginRun()) {
        assertEquals(pr.tensor("embed").address(), dr.tensor("embed").address());
      }
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("embed", iota(8, 100), 4, 2);
        p.update(patch);
      }
      p.swap();
      try (Run pr = p.beginRun(); Run dr = d.beginRun()) {
        assertArrayEquals(iota(8, 100), floats(pr.tensor("embed")), 0f);
        assertArrayEquals(iota(8, 0), floats(dr.tensor("embed")), 0f);
      }
    }
  }

  @Test
  public void runtimeClosedFirstKeepsTheStoreWorking() {
    try (Container prefill = prefill(); Container decode = decode()) {
      runtime.close();
      assertEquals(4, store.stats().numUniqueConstants());
      try (ConstantMap patch = ConstantMap.create()) {
        patch.put("embed", iota(8, 1), 4, 2);
        store.update(patch);
      }
      store.swap();
      try (Run p = prefill.beginRun(); Run d = decode.beginRun()) {
        assertArrayEquals(iota(8, 1), floats(p.tensor("embed")), 0f);
        assertArrayEquals(iota(8, 1), floats(d.tensor("embed")), 0f);
      }
    }
  }
}
