// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.hostRuntime;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import org.junit.Test;

/**
 * Models (the experimental tier) without a GPU: what the host backend refuses, the options,
 * and the input views. The compiled tiny decoder runs only on CUDA (java/README.md has the
 * GPU example).
 */
public class ModelTest {
  /** The committed tiny decoder (tests/data/models/tiny_decoder), when the source tree is here. */
  private static Path tinyDecoder() {
    Path p = Paths.get(System.getProperty("wharf.test.root", "."), "tests/data/models/tiny_decoder/tiny_decoder.so");
    return Files.isRegularFile(p) ? p : Paths.get("tiny_decoder.so");
  }

  @Test
  public void loadingOnTheHostBackendIsUnsupportedAndNamesCuda() {
    try (WharfRuntime runtime = hostRuntime(); ConstantMap weights = ConstantMap.create()) {
      weights.put("norm.weight", new float[] {1f, 1f}, 2);
      long before = runtime.memoryStats().current(MemoryTag.CONSTANTS);
      for (Path so : Arrays.asList(tinyDecoder(), Paths.get("no-such-model.so"))) {
        WharfException e = assertWharfError(WharfException.Code.UNSUPPORTED,
            () -> Model.load(runtime, so, weights, ModelOptions.builder().name("tiny").build()), "CUDA");
        assertTrue(e.getMessage(), e.getMessage().contains("host backend"));
      }
      assertWharfError(WharfException.Code.UNSUPPORTED, () -> Model.load(runtime, tinyDecoder(), weights), "CUDA");
      assertEquals(before, runtime.memoryStats().current(MemoryTag.CONSTANTS)); // nothing left behind
      // The handles used are still fine.
      assertEquals(1, weights.size());
      runtime.synchronize();
    }
  }

  @Test
  public void loadChecksItsArgumentsInJava() {
    try (WharfRuntime runtime = hostRuntime(); ConstantMap weights = ConstantMap.create()) {
      Path so = tinyDecoder();
      assertThrows(NullPointerException.class, () -> Model.load(null, so, weights));
      assertThrows(NullPointerException.class, () -> Model.load(runtime, null, weights));
      assertThrows(NullPointerException.class, () -> Model.load(runtime, so, null));
      assertThrows(NullPointerException.class, () -> Model.load(runtime, so, weights, null));
      ConstantMap closed = ConstantMap.create();
      closed.close();
      assertThrows(IllegalStateException.class, () -> Model.load(runtime, so, closed));
      WeightStore store = WeightStore.create(runtime);
      store.close();
      assertThrows(IllegalStateException.class,
          () -> Model.load(runtime, so, weights, ModelOptions.builder().store(store).build()));
    }
  }

  @Test
  public void loadingIntoAStoreFromItsOwnFoldCallbackIsRefusedNotAHang() {
    try (WharfRuntime runtime = hostRuntime(); WeightStore store = WeightStore.create(runtime);
         ConstantMap weights = ConstantMap.create()) {
      weights.put("w", new float[] {1f}, 1);
      try (Container c = Container.create(runtime, "c", Arrays.asList(ConstantDecl.of("w", DType.F32, 1),
          ConstantDecl.of("d", DType.F32, 1).derived()), ContainerOptions.builder().store(store).build())) {
        WharfException[] seen = {null};
        store.update(weights, UpdateOptions.builder().fold(run -> seen[0] = assertThrows(WharfException.class,
            () -> Model.load(runtime, tinyDecoder(), weights, ModelOptions.builder().store(store).build()))).build());
        assertEquals(WharfException.Code.FAILED_PRECONDITION, seen[0].code());
        assertTrue(seen[0].getMessage(), seen[0].getMessage().contains("fold callback"));
        assertEquals("c", c.name());
      }
    }
  }

  @Test
  public void modelOptions() {
    ModelOptions d = ModelOptions.defaults();
    assertNull(d.name());
    assertNull(d.store());
    assertEquals(0, d.maxSessionBytes());
    assertNull(d.shimPath());
    try (WharfRuntime runtime = hostRuntime(); WeightStore store = WeightStore.create(runtime)) {
      ModelOptions o = ModelOptions.builder().name("decode").store(store).maxSessionBytes(1 << 20)
          .shimPath(Paths.get("/opt/wharf/libwharf_aoti_shim.so")).build();
      assertEquals("decode", o.name());
      assertSame(store, o.store());
      assertEquals(1 << 20, o.maxSessionBytes());
      assertEquals(Paths.get("/opt/wharf/libwharf_aoti_shim.so"), o.shimPath());
      assertTrue(o.toString(), o.toString().contains("decode"));
    }
    assertThrows(IllegalArgumentException.class, () -> ModelOptions.builder().maxSessionBytes(-1));
  }

  @Test
  public void inputViewsOfTheCallersMemory() {
    ByteBuffer tokens = ByteBuffer.allocateDirect(8 * 5).order(ByteOrder.nativeOrder());
    tokens.asLongBuffer().put(new long[] {1, 2, 3, 4, 5});
    tokens.position(8); // from the position on: tokens 2..5
    TensorView host = TensorView.ofHost(tokens, DType.I64, 1, 4);
    assertEquals(8, tokens.position()); // not moved
    assertEquals(DeviceType.CPU, host.deviceType());
    assertArrayEquals(new long[] {1, 4}, host.shape());
    assertEquals(32, host.byteSize());
    assertEquals(2, host.asByteBuffer().getLong(0));
    assertEquals(5, ByteBuffer.wrap(host.toByteArray()).order(ByteOrder.nativeOrder()).getLong(24));
    assertTrue(host.asByteBuffer().isReadOnly());
    assertThrows(IllegalArgumentException.class, () -> TensorView.ofHost(ByteBuffer.allocate(64), DType.I64, 2));
    assertThrows(IllegalArgumentException.class, () -> TensorView.ofHost(tokens, DType.I64, 5)); // 4 remaining

    TensorView device = TensorView.ofDevice(0x7f0000001000L, DType.F32, 0, 1, 3, 256);
    assertEquals(DeviceType.CUDA, device.deviceType());
    assertEquals(0x7f0000001000L, device.address());
    assertEquals(3 * 256 * 4, device.byteSize());
    assertThrows(UnsupportedOperationException.class, device::asByteBuffer);
    assertThrows(UnsupportedOperationException.class, device::toByteArray);
    assertThrows(IllegalArgumentException.class, () -> TensorView.ofDevice(0, DType.F32, 0, 4));
    assertThrows(IllegalArgumentException.class, () -> TensorView.ofDevice(16, DType.F32, 0, -1));
  }

  /**
   * A load its listener cancels leaves nothing behind; the next load reports progress up to
   * its total and has no offloader. Needs a GPU (skipped otherwise).
   */
  @Test
  public void loadProgressAndCancellationOnTheGpu() {
    WharfRuntime runtime;
    try {
      runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.CUDA).build());
    } catch (WharfException e) {
      org.junit.Assume.assumeNoException("needs a GPU", e);
      return;
    }
    Path so = tinyDecoder();
    try (WharfRuntime rt = runtime;
        ConstantMap weights = ConstantMap.loadSafetensors(so.resolveSibling("tiny_decoder.safetensors"))) {
      for (String name : new String[] {"layers.0.k_cache", "layers.0.v_cache", "layers.1.k_cache", "layers.1.v_cache"}) {
        weights.put(name, new float[4 * 64 * 16], 1, 4, 64, 16);
      }
      long before = rt.memoryStats().current(MemoryTag.CONSTANTS);
      assertWharfError(WharfException.Code.CANCELLED,
          () -> Model.load(rt, so, weights, ModelOptions.builder().progress((done, total) -> false).build()));
      assertEquals(before, rt.memoryStats().current(MemoryTag.CONSTANTS));
      long[] last = new long[2];
      try (Model model = Model.load(rt, so, weights, ModelOptions.builder().progress((done, total) -> {
        last[0] = done;
        last[1] = total;
        return true;
      }).build())) {
        assertTrue(last[0] > 0);
        assertEquals(last[1], last[0]);
        assertNull(model.offloader());
      }
    }
  }
}
