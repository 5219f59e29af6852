// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.hostRuntime;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

/** {@link WharfRuntime} and {@link RuntimeOptions}. */
public class WharfRuntimeTest {
  @Test
  public void hostRuntimeDescribesItsDevice() {
    try (WharfRuntime runtime = hostRuntime()) {
      assertEquals(Backend.HOST, runtime.backend());
      DeviceInfo info = runtime.deviceInfo();
      assertEquals(Backend.HOST, info.backend());
      assertEquals("host", info.name());
      assertTrue(info.totalMemory() > 0);
      assertTrue(info.freeMemory() > 0 && info.freeMemory() <= info.totalMemory());
      assertEquals(0, info.computeMajor());
      assertEquals(0, info.computeMinor());
      assertTrue(info.toString(), info.toString().contains("host"));
      runtime.synchronize();
    }
  }

  @Test
  public void memoryStatsCountConstantsAndPeaks() {
    try (WharfRuntime runtime = hostRuntime()) {
      MemoryStats before = runtime.memoryStats();
      assertEquals(0, before.current(MemoryTag.CONSTANTS));
      try (ConstantMap map = ConstantMap.create()) {
        map.put("w", new float[256], 16, 16); // 1 KiB
        try (Container model = Container.fromMap(runtime, map, "m")) {
          assertEquals(1, model.numConstants());
          MemoryStats during = runtime.memoryStats();
          assertEquals(1024, during.current(MemoryTag.CONSTANTS));
          assertTrue(during.deviceCurrent() >= 1024);
          assertTrue(during.peak(MemoryTag.CONSTANTS) >= 1024);
          assertEquals(0, during.current(MemoryTag.STATE));
        }
      }
      runtime.synchronize();
      MemoryStats after = runtime.memoryStats();
      assertEquals(0, after.current(MemoryTag.CONSTANTS));
      assertTrue(after.peak(MemoryTag.CONSTANTS) >= 1024);
      runtime.resetPeak();
      MemoryStats reset = runtime.memoryStats();
      for (MemoryTag tag : MemoryTag.values()) assertEquals(tag.name(), reset.current(tag), reset.peak(tag));
      assertEquals(reset.deviceCurrent(), reset.devicePeak());
      assertEquals(reset.pinnedHostCurrent(), reset.pinnedHostPeak());
      assertNotEquals(after, reset);
      assertEquals(reset, runtime.memoryStats());
      assertEquals(reset.hashCode(), runtime.memoryStats().hashCode());
    }
  }

  @Test
  public void deviceMemoryLimitMakesAllocationsFail() {
    try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST)
             .deviceMemoryLimit(4096).build());
         ConstantMap map = ConstantMap.create()) {
      map.put("big", new float[2048], 2048); // 8 KiB > 4 KiB
      assertWharfError(WharfException.Code.OUT_OF_MEMORY, () -> Container.fromMap(runtime, map, "m"),
          "8192", "4096");
      assertEquals(0, runtime.memoryStats().current(MemoryTag.CONSTANTS));
    }
  }

  @Test
  public void badOptionValuesAreReportedByTheLibrary() {
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).copyThreads(1_000_000).build()),
        "copy_threads", "1000000");
    assertWharfError(WharfException.Code.INVALID_ARGUMENT,
        () -> WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).stagingBytes(1).build()),
        "staging_bytes");
  }

  @Test
  public void cudaWithoutAGpuFailsCleanly() {
    try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.CUDA).build())) {
      assertEquals(Backend.CUDA, runtime.backend()); // a CUDA build on a GPU machine
    } catch (WharfException e) {
      assertTrue(e.toString(), e.code() == WharfException.Code.UNSUPPORTED
          || e.code() == WharfException.Code.DEVICE_ERROR);
      assertFalse(e.getMessage().isEmpty());
    }
  }

  @Test
  public void builderValidatesAndKeepsValues() {
    RuntimeOptions o = RuntimeOptions.builder().backend(Backend.HOST).deviceIndex(1)
        .deviceMemoryLimit(1 << 20).copyThreads(3).stagingBytes(1 << 22).build();
    assertEquals(Backend.HOST, o.backend());
    assertEquals(1, o.deviceIndex());
    assertEquals(1 << 20, o.deviceMemoryLimit());
    assertEquals(3, o.copyThreads());
    assertEquals(1 << 22, o.stagingBytes());
    RuntimeOptions d = RuntimeOptions.defaults();
    assertEquals(Backend.AUTO, d.backend());
    assertEquals(0, d.deviceMemoryLimit());
    assertThrows(IllegalArgumentException.class, () -> RuntimeOptions.builder().deviceIndex(-1));
    assertThrows(IllegalArgumentException.class, () -> RuntimeOptions.builder().deviceMemoryLimit(-1));
    assertThrows(IllegalArgumentException.class, () -> RuntimeOptions.builder().copyThreads(-1));
    assertThrows(IllegalArgumentException.class, () -> RuntimeOptions.builder().stagingBytes(-1));
    assertThrows(NullPointerException.class, () -> RuntimeOptions.builder().backend(null));
    assertThrows(NullPointerException.class, () -> WharfRuntime.create(null));
  }

  @Test
  public void closeTwiceIsANoOpAndUseAfterCloseThrows() {
    WharfRuntime runtime = hostRuntime();
    assertFalse(runtime.isClosed());
    runtime.close();
    runtime.close();
    assertTrue(runtime.isClosed());
    assertClosed("WharfRuntime", runtime::backend);
    assertClosed("WharfRuntime", runtime::memoryStats);
    assertClosed("WharfRuntime", runtime::deviceInfo);
    assertClosed("WharfRuntime", runtime::synchronize);
    assertClosed("WharfRuntime", runtime::resetPeak);
    try (ConstantMap map = ConstantMap.create()) {
      map.put("w", new float[] {1f});
      assertClosed("WharfRuntime", () -> Container.fromMap(runtime, map, "m"));
      assertClosed("WharfRuntime", () -> Container.create(runtime, "m", List.of(ConstantDecl.of("w", DType.F32))));
    }
    assertEquals("WharfRuntime{closed}", runtime.toString());
  }

  @Test
  public void closeWaitsForCallsInProgressOnOtherThreads() throws Exception {
    WharfRuntime runtime = hostRuntime();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      CountDownLatch started = new CountDownLatch(4);
      List<Future<Integer>> results = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        results.add(pool.submit(() -> {
          started.countDown();
          int calls = 0;
          try {
            while (true) {
              runtime.memoryStats();
              runtime.deviceInfo();
              calls++;
            }
          } catch (IllegalStateException closed) {
            assertTrue(closed.getMessage().contains("closed"));
            return calls;
          }
        }));
      }
      assertTrue(started.await(10, TimeUnit.SECONDS));
      runtime.close();
      for (Future<Integer> r : results) assertTrue(r.get(10, TimeUnit.SECONDS) >= 0);
    } finally {
      pool.shutdownNow();
    }
  }
}
