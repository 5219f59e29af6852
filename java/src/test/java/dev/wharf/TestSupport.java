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
  static Runtime hostRuntime() {
    return Runtime.create(host());
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
}
