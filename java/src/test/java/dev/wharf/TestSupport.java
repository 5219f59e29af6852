// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.function.ThrowingRunnable;

/** Helpers shared by the tests. */
final class TestSupport {
  private TestSupport() {}

  /** Options for a runtime on the host backend (no GPU in CI). */
  static RuntimeOptions host() {
    return RuntimeOptions.builder().backend(Backend.HOST).build();
  }

  /** A runtime on the host backend. */
  static WharfRuntime hostRuntime() {
    return WharfRuntime.create(host());
  }

  /** Asserts that {@code body} throws a WharfException with {@code code} whose message contains every fragment. */
  static WharfException assertWharfError(WharfException.Code code, ThrowingRunnable body, String... fragments) {
    WharfException e = assertThrows(WharfException.class, body);
    assertEquals("code of: " + e.getMessage(), code, e.code());
    assertEquals(code.value(), e.rawCode());
    for (String f : fragments) {
      assertTrue("message \"" + e.getMessage() + "\" should contain \"" + f + "\"", e.getMessage().contains(f));
    }
    return e;
  }

  /** Asserts that {@code body} throws IllegalStateException saying that {@code what} is closed. */
  static void assertClosed(String what, ThrowingRunnable body) {
    IllegalStateException e = assertThrows(IllegalStateException.class, body);
    assertTrue(e.getMessage(), e.getMessage().startsWith(what));
    assertTrue(e.getMessage(), e.getMessage().contains("closed"));
  }

  /** The floats of a view, read through its zero-copy buffer. */
  static float[] floats(TensorView view) {
    assertEquals(DType.F32, view.dtype());
    ByteBuffer b = view.asByteBuffer();
    float[] values = new float[(int) view.elementCount()];
    b.asFloatBuffer().get(values);
    return values;
  }

  /** The floats of a byte array in native order. */
  static float[] floats(byte[] bytes) {
    float[] values = new float[bytes.length / 4];
    ByteBuffer.wrap(bytes).order(ByteOrder.nativeOrder()).asFloatBuffer().get(values);
    return values;
  }

  /** {@code n} floats: start, start + 1, ... */
  static float[] iota(int n, float start) {
    float[] values = new float[n];
    for (int i = 0; i < n; i++) values[i] = start + i;
    return values;
  }

  /** The floats of a run's tensor (constant or session state), copied with Run.read. */
  static float[] readFloats(Run run, String fqn) {
    return floats(run.tensor(fqn).toByteArray());
  }

  /**
   * Writes {@code values} into a session state of a run on the host backend, as a host
   * "kernel" of the run would: the state's storage is host memory there, written through
   * its address (wharf.h has no write call; kernels write device pointers). Run.read first
   * waits for the run's stream, so the session's initialisation (ordered on that stream) has
   * finished before the write.
   */
  static void writeState(Run run, String fqn, float[] values) {
    TensorView state = run.tensor(fqn);
    assertEquals(DeviceType.CPU, state.deviceType());
    assertEquals(DType.F32, state.dtype());
    assertEquals(state.byteSize(), values.length * 4L);
    run.read(fqn, 0, ByteBuffer.allocateDirect((int) state.byteSize())); // waits for the stream
    ByteBuffer storage = WharfNative.wharf_swig_byte_view(state.address(), state.byteSize())
        .order(ByteOrder.nativeOrder());
    storage.asFloatBuffer().put(values);
  }

  /** Writes an I64 scalar or vector state like {@link #writeState(Run, String, float[])}. */
  static void writeState(Run run, String fqn, long[] values) {
    TensorView state = run.tensor(fqn);
    assertEquals(DeviceType.CPU, state.deviceType());
    assertEquals(DType.I64, state.dtype());
    assertEquals(state.byteSize(), values.length * 8L);
    run.read(fqn, 0, ByteBuffer.allocateDirect((int) state.byteSize()));
    ByteBuffer storage = WharfNative.wharf_swig_byte_view(state.address(), state.byteSize())
        .order(ByteOrder.nativeOrder());
    storage.asLongBuffer().put(values);
  }

  /** The longs of a run's I64 tensor, copied with Run.read. */
  static long[] readLongs(Run run, String fqn) {
    byte[] bytes = run.tensor(fqn).toByteArray();
    long[] values = new long[bytes.length / 8];
    ByteBuffer.wrap(bytes).order(ByteOrder.nativeOrder()).asLongBuffer().get(values);
    return values;
  }
}
