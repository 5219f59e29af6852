// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.floats;
import static dev.wharf.TestSupport.hostRuntime;
import static dev.wharf.TestSupport.readFloats;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The additions of library 0.3: the ten new dtypes (sub-byte ones sized in bits), metadata on
 * any map, and updates of containers and weight stores from safetensors files.
 */
public class Since03Test {
  private WharfRuntime runtime;
  private Path dir;

  @Before
  public void setUp() throws IOException {
    runtime = hostRuntime();
    dir = Files.createTempDirectory("wharf-java-since03");
  }

  @After
  public void tearDown() throws IOException {
    runtime.close();
    try (var files = Files.walk(dir)) {
      files.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
    }
  }

  /** Writes a safetensors file of 1-D F32 tensors, in the order given (name, values, ...). */
  private Path save(String file, Object... entries) {
    Path path = dir.resolve(file);
    try (ConstantMap m = ConstantMap.create()) {
      for (int i = 0; i < entries.length; i += 2) {
        float[] values = (float[]) entries[i + 1];
        m.put((String) entries[i], values, values.length);
      }
      m.save(path);
    }
    return path;
  }

  @Test
  public void sizesOfTheNewDtypes() {
    // LibraryTest.dtypesMatchTheLibrary checks every value, size, bit width and name against
    // the library; here, what a user relies on.
    assertEquals(4, DType.F4.bits());
    assertEquals(0, DType.F4.byteSize());
    assertEquals(6, DType.F6_E3M2.bits());
    assertEquals(0, DType.F6_E3M2.byteSize());
    assertEquals(8, DType.C64.byteSize());
    assertEquals(DType.F8_E4M3FNUZ, DType.fromSafetensorsName("F8_E4M3FNUZ"));
    assertEquals(DType.U64, DType.fromValue(14));
  }

  @Test
  public void newAndSubByteDtypesRoundTrip() {
    byte[] packed = {0x21, 0x43, 0x65, (byte) 0x87, (byte) 0xa9, (byte) 0xcb};
    Path path = dir.resolve("dtypes.safetensors");
    try (ConstantMap m = ConstantMap.create()) {
      m.put("f4", packed, DType.F4, 2, 6); // 12 x 4 bits
      m.put("f6", packed, DType.F6_E2M3, 8); // 8 x 6 bits
      m.put("u16", new byte[] {1, 0, 2, 0}, DType.U16, 2);
      IllegalArgumentException odd = assertThrows(IllegalArgumentException.class,
          () -> m.put("odd", new byte[] {1, 2}, DType.F4, 3));
      assertTrue(odd.getMessage(), odd.getMessage().contains("12 bits"));
      m.save(path);
    }
    try (ConstantMap back = ConstantMap.loadSafetensors(path)) {
      TensorView f4 = back.find("f4");
      assertEquals(DType.F4, f4.dtype());
      assertEquals(6, f4.byteSize());
      assertArrayEquals(packed, f4.toByteArray());
      assertEquals(DType.F6_E2M3, back.find("f6").dtype());
      assertEquals(6, back.find("f6").byteSize());
      assertArrayEquals(new byte[] {1, 0, 2, 0}, back.find("u16").toByteArray());
    }
  }

  @Test
  public void setMetadataOnAnyMap() {
    Path path = dir.resolve("meta.safetensors");
    Map<String, String> want = new LinkedHashMap<>();
    want.put("format", "np");
    want.put("step", "1");
    want.put("", "");
    try (ConstantMap m = ConstantMap.create()) {
      m.put("w", new float[] {1f, 2f}, 2);
      m.setMetadata("format", "pt");
      m.setMetadata("step", "1");
      m.setMetadata("format", "np"); // replaced in its place
      m.setMetadata("", "");
      assertThrows(IllegalArgumentException.class, () -> m.setMetadata("k", "a\0b"));
      assertEquals(want, m.metadata());
      assertEquals(Arrays.asList("format", "step", ""), Arrays.asList(m.metadata().keySet().toArray()));
      m.save(path);
    }
    ConstantMap gone = ConstantMap.create();
    gone.close();
    assertClosed("ConstantMap", () -> gone.setMetadata("k", "v"));
    try (ConstantMap back = ConstantMap.loadSafetensors(path)) {
      assertEquals(want, back.metadata());
      back.setMetadata("step", "2"); // a loaded map takes metadata too
      assertEquals("2", back.metadata().get("step"));
    }
  }

  @Test
  public void containerUpdateFromFile() throws IOException {
    try (ConstantMap base = ConstantMap.create()) {
      base.put("a", new float[] {1f, 2f}, 2);
      base.put("b", new float[] {3f, 4f, 5f}, 3);
      try (Container c = Container.fromMap(runtime, base, "file")) {
        long g1 = c.generation();
        Path partial = save("b.safetensors", "b", new float[] {-3f, -4f, -5f});
        c.updateFromFile(partial);
        c.swap();
        assertNotEquals(g1, c.generation());
        try (Run run = c.beginRun()) {
          assertArrayEquals(new float[] {-3f, -4f, -5f}, readFloats(run, "b"), 0f);
          assertArrayEquals(new float[] {1f, 2f}, readFloats(run, "a"), 0f);
        }
        assertWharfError(WharfException.Code.INVALID_ARGUMENT,
            () -> c.updateFromFile(partial, UpdateOptions.builder().requireFull(true).build()), "a");

        // Failures change nothing.
        long g2 = c.generation();
        assertWharfError(WharfException.Code.NOT_FOUND, () -> c.updateFromFile(dir.resolve("missing.safetensors")));
        byte[] bytes = Files.readAllBytes(partial);
        Path corrupt = dir.resolve("corrupt.safetensors");
        Files.write(corrupt, Arrays.copyOf(bytes, bytes.length - 1));
        assertWharfError(WharfException.Code.DATA_CORRUPT, () -> c.updateFromFile(corrupt));
        Path unknown = save("unknown.safetensors", "a", new float[] {9f, 9f}, "zz", new float[] {1f});
        assertWharfError(WharfException.Code.NOT_FOUND, () -> c.updateFromFile(unknown), "zz");
        Path shape = save("shape.safetensors", "a", new float[] {9f, 9f, 9f});
        assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> c.updateFromFile(shape), "a");
        assertEquals(g2, c.generation());

        // In place: published by the call.
        Path whole = save("whole.safetensors", "a", new float[] {7f, 8f}, "b", new float[] {0f, 0f, 1f});
        c.updateFromFile(whole, UpdateOptions.builder().target(UpdateTarget.ACTIVE_IN_PLACE).requireFull(true).build());
        try (Run run = c.beginRun()) {
          assertArrayEquals(new float[] {7f, 8f}, readFloats(run, "a"), 0f);
        }
      }
      Container gone = Container.fromMap(runtime, base, "gone");
      gone.close();
      assertClosed("Container 'gone'", () -> gone.updateFromFile(dir.resolve("any.safetensors")));
    }
  }

  @Test
  public void containerUpdateFromFileWithFold() {
    try (Container c = Container.create(runtime, "fold", Arrays.asList(
        ConstantDecl.of("w", DType.F32, 2), ConstantDecl.of("twice", DType.F32, 2).derived()))) {
      Path path = save("w.safetensors", "w", new float[] {1.5f, 2.5f});
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> c.updateFromFile(path), "fold");
      c.updateFromFile(path, UpdateOptions.builder().fold(run -> {
        float[] w = floats(run.tensor("w"));
        run.writableBuffer("twice").asFloatBuffer().put(new float[] {2 * w[0], 2 * w[1]});
      }).build());
      c.swap();
      try (Run run = c.beginRun()) {
        assertArrayEquals(new float[] {3f, 5f}, readFloats(run, "twice"), 0f);
      }
      long g = c.generation();
      assertWharfError(WharfException.Code.FAILED_PRECONDITION,
          () -> c.updateFromFile(path, UpdateOptions.builder().fold(run -> {
            throw new IllegalStateException("no table");
          }).build()), "no table");
      assertEquals(g, c.generation());
    }
  }

  @Test
  public void storeUpdateFromFile() {
    try (WeightStore store = WeightStore.create(runtime);
         ConstantMap m1 = ConstantMap.create();
         ConstantMap m2 = ConstantMap.create()) {
      ContainerOptions shared = ContainerOptions.builder().store(store).build();
      m1.put("embed", new float[] {1f, 1f, 1f, 1f}, 4);
      m1.put("a.w", new float[] {1f, 2f}, 2);
      m2.put("embed", new float[] {1f, 1f, 1f, 1f}, 4);
      m2.put("b.w", new float[] {3f, 4f, 5f}, 3);
      try (Container prefill = Container.fromMap(runtime, m1, "prefill", shared);
           Container decode = Container.fromMap(runtime, m2, "decode", shared)) {
        Path path = save("store.safetensors", "embed", new float[] {5f, 5f, 5f, 5f}, "b.w", new float[] {6f, 7f, 8f});
        store.updateFromFile(path);
        store.swap();
        try (Run p = prefill.beginRun(); Run d = decode.beginRun()) {
          assertArrayEquals(new float[] {5f, 5f, 5f, 5f}, readFloats(p, "embed"), 0f);
          assertArrayEquals(new float[] {5f, 5f, 5f, 5f}, readFloats(d, "embed"), 0f);
          assertArrayEquals(new float[] {6f, 7f, 8f}, readFloats(d, "b.w"), 0f);
          assertArrayEquals(new float[] {1f, 2f}, readFloats(p, "a.w"), 0f);
        }
        // A file naming a tensor no member declares stages nothing anywhere.
        Path bad = save("bad.safetensors", "embed", new float[] {9f, 9f, 9f, 9f}, "nobody", new float[] {1f});
        assertWharfError(WharfException.Code.NOT_FOUND, () -> store.updateFromFile(bad), "nobody");
        assertWharfError(WharfException.Code.FAILED_PRECONDITION, store::swap, "nothing staged");
      }
    }
  }
}
