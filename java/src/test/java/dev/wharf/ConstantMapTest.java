// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertClosed;
import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.floats;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/** {@link ConstantMap}: array and direct-buffer sources, lookups, safetensors I/O, errors. */
public class ConstantMapTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  private static ByteBuffer nativeBytes(int n) {
    return ByteBuffer.allocate(n).order(ByteOrder.nativeOrder());
  }

  @Test
  public void everyArrayTypeIsStoredWithItsDtypeAndBytes() {
    try (ConstantMap map = ConstantMap.create()) {
      map.put("f32", new float[] {1.5f, -2f, 3f, 4f}, 2, 2);
      map.put("f64", new double[] {0.25, 1e300}, 2);
      map.put("i32", new int[] {1, -1, Integer.MAX_VALUE}, 3);
      map.put("i64", new long[] {Long.MIN_VALUE, 7}, 1, 2);
      map.put("i16", new short[] {-3, 300}, 2);
      map.put("bf16", new short[] {(short) 0x3f80, (short) 0xc000}, DType.BF16, 2);
      map.put("i8", new byte[] {-1, 2, 3}, 3);
      map.put("bool", new byte[] {0, 1}, DType.BOOL, 2);
      map.put("scalar", new float[] {42f});

      TensorView f32 = map.find("f32");
      assertEquals(DType.F32, f32.dtype());
      assertArrayEquals(new long[] {2, 2}, f32.shape());
      assertEquals(2, f32.ndim());
      assertEquals(4, f32.elementCount());
      assertEquals(16, f32.byteSize());
      assertEquals(DeviceType.CPU, f32.deviceType());
      assertArrayEquals(new float[] {1.5f, -2f, 3f, 4f}, floats(f32), 0f);

      ByteBuffer b = nativeBytes(16);
      b.putDouble(0.25).putDouble(1e300);
      assertArrayEquals(b.array(), map.find("f64").toByteArray());
      b = nativeBytes(12);
      b.putInt(1).putInt(-1).putInt(Integer.MAX_VALUE);
      assertArrayEquals(b.array(), map.find("i32").toByteArray());
      b = nativeBytes(16);
      b.putLong(Long.MIN_VALUE).putLong(7);
      assertArrayEquals(b.array(), map.find("i64").toByteArray());
      assertArrayEquals(new long[] {1, 2}, map.find("i64").shape());
      b = nativeBytes(4);
      b.putShort((short) -3).putShort((short) 300);
      assertArrayEquals(b.array(), map.find("i16").toByteArray());
      assertEquals(DType.I16, map.find("i16").dtype());
      assertEquals(DType.BF16, map.find("bf16").dtype());
      b = nativeBytes(4);
      b.putShort((short) 0x3f80).putShort((short) 0xc000);
      assertArrayEquals(b.array(), map.find("bf16").toByteArray());
      assertEquals(DType.I8, map.find("i8").dtype());
      assertArrayEquals(new byte[] {-1, 2, 3}, map.find("i8").toByteArray());
      assertEquals(DType.BOOL, map.find("bool").dtype());
      TensorView scalar = map.find("scalar");
      assertEquals(0, scalar.ndim());
      assertEquals(1, scalar.elementCount());
      assertArrayEquals(new float[] {42f}, floats(scalar), 0f);

      assertEquals(9, map.size());
      assertEquals(Arrays.asList("f32", "f64", "i32", "i64", "i16", "bf16", "i8", "bool", "scalar"), map.names());
      assertTrue(map.contains("bf16"));
      assertFalse(map.contains("nope"));
      assertTrue(map.metadata().isEmpty());
    }
  }

  @Test
  public void arraysAreCopiedAtPut() {
    try (ConstantMap map = ConstantMap.create()) {
      float[] values = {1f, 2f};
      map.put("w", values, 2);
      values[0] = 99f;
      assertArrayEquals(new float[] {1f, 2f}, floats(map.find("w")), 0f);
    }
  }

  @Test
  public void directBuffersAreBorrowedNotCopied() {
    try (ConstantMap map = ConstantMap.create()) {
      ByteBuffer data = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
      data.putFloat(0, 1f).putFloat(4, 2f);
      map.put("w", data, DType.F32, 2);
      data.putFloat(0, 5f); // the map sees later writes: it reads the caller's memory
      assertArrayEquals(new float[] {5f, 2f}, floats(map.find("w")), 0f);
      assertEquals(0, data.position()); // put leaves position and limit alone
      assertEquals(8, data.limit());
    }
  }

  @Test
  public void directBufferDataStartsAtItsPosition() {
    try (ConstantMap map = ConstantMap.create()) {
      ByteBuffer data = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
      data.asFloatBuffer().put(new float[] {-1f, -2f, 10f, 20f});
      data.position(8);
      map.put("tail", data, DType.F32, 2);
      assertArrayEquals(new float[] {10f, 20f}, floats(map.find("tail")), 0f);
      // a slice works too, and the byte order setting of a buffer is irrelevant
      ByteBuffer head = data.duplicate().position(0).limit(8).slice().order(ByteOrder.BIG_ENDIAN);
      map.put("head", head, DType.F32, 2);
      assertArrayEquals(new float[] {-1f, -2f}, floats(map.find("head")), 0f);
    }
  }

  /** Puts a buffer the test keeps no reference to. */
  private static void putUnreferencedBuffer(ConstantMap map, String fqn, float value, int n) {
    ByteBuffer data = ByteBuffer.allocateDirect(n * 4).order(ByteOrder.nativeOrder());
    for (int i = 0; i < n; i++) data.putFloat(value);
    data.flip();
    map.put(fqn, data, DType.F32, n);
  }

  @Test
  public void theMapKeepsBorrowedBuffersAlive() throws Exception {
    Path file = tmp.getRoot().toPath().resolve("kept.safetensors");
    try (ConstantMap map = ConstantMap.create()) {
      for (int i = 0; i < 8; i++) putUnreferencedBuffer(map, "w" + i, i, 1 << 14);
      // Give the collector every chance to free unreachable direct buffers (their memory is
      // released by a cleaner once the buffer object is collected).
      List<ByteBuffer> churn = new ArrayList<>();
      for (int round = 0; round < 5; round++) {
        System.gc();
        for (int i = 0; i < 64; i++) churn.add(ByteBuffer.allocateDirect(1 << 14));
        churn.clear();
        Thread.sleep(20);
      }
      for (int i = 0; i < 8; i++) {
        float[] values = floats(map.find("w" + i));
        for (float v : values) assertEquals(i, v, 0f);
      }
      map.save(file);
    }
    try (ConstantMap loaded = ConstantMap.loadSafetensors(file)) {
      assertEquals(8, loaded.size());
      assertEquals(1 << 14, floats(loaded.find("w7")).length);
      assertEquals(7f, floats(loaded.find("w7"))[100], 0f);
    }
  }

  @Test
  public void javaSideMisuseThrowsStandardExceptions() {
    try (ConstantMap map = ConstantMap.create()) {
      ByteBuffer heap = ByteBuffer.allocate(12).order(ByteOrder.nativeOrder()).putFloat(4, 7f);
      heap.position(4);
      map.put("heap", heap, DType.F32, 2); // a heap buffer is copied, from its position on
      heap.putFloat(4, 9f);
      assertArrayEquals(new float[] {7f, 0f}, floats(map.find("heap")), 0f);
      IllegalArgumentException short8 = assertThrows(IllegalArgumentException.class,
          () -> map.put("short", ByteBuffer.allocate(7), DType.F32, 2));
      assertTrue(short8.getMessage(), short8.getMessage().contains("8 bytes"));
      IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
          () -> map.put("small", ByteBuffer.allocateDirect(7), DType.F32, 2));
      assertTrue(small.getMessage(), small.getMessage().contains("'small'") && small.getMessage().contains("8 bytes"));
      IllegalArgumentException count = assertThrows(IllegalArgumentException.class,
          () -> map.put("count", new float[3], 2, 2));
      assertTrue(count.getMessage(), count.getMessage().contains("'count'") && count.getMessage().contains("4"));
      assertThrows(IllegalArgumentException.class, () -> map.put("wide", new short[2], DType.F32, 1));
      assertThrows(IllegalArgumentException.class, () -> map.put("rawsize", new byte[3], DType.F32, 1));
      assertThrows(IllegalArgumentException.class, () -> map.put("negative", new float[0], -1));
      assertThrows(IllegalArgumentException.class, () -> map.put("nul\0name", new float[1]));
      IllegalArgumentException rank = assertThrows(IllegalArgumentException.class,
          () -> map.put("rank9", new float[1], 1, 1, 1, 1, 1, 1, 1, 1, 1));
      assertTrue(rank.getMessage(), rank.getMessage().contains("'rank9'") && rank.getMessage().contains("8"));
      map.put("rank8", new float[1], 1, 1, 1, 1, 1, 1, 1, 1); // the maximum is fine
      assertEquals(8, map.find("rank8").ndim());
      assertThrows(NullPointerException.class, () -> map.put(null, new float[1]));
      assertThrows(NullPointerException.class, () -> map.put("x", (float[]) null));
      assertThrows(NullPointerException.class, () -> map.put("x", new float[1], (long[]) null));
      assertEquals(Arrays.asList("heap", "rank8"), map.names()); // nothing else was added
    }
  }

  @Test
  public void libraryErrorsNameTheTensorAndLeaveTheMapUnchanged() {
    try (ConstantMap map = ConstantMap.create()) {
      map.put("layers.0.weight", new float[] {1f});
      assertWharfError(WharfException.Code.ALREADY_EXISTS, () -> map.put("layers.0.weight", new float[] {2f}),
          "layers.0.weight");
      assertWharfError(WharfException.Code.NOT_FOUND, () -> map.find("layers.9.weight"), "layers.9.weight");
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> map.put("", new float[] {1f}));
      assertEquals(1, map.size());
      assertArrayEquals(new float[] {1f}, floats(map.find("layers.0.weight")), 0f);
    }
  }

  @Test
  public void saveAndLoadRoundTripNamesShapesAndValues() throws Exception {
    Path file = tmp.getRoot().toPath().resolve("model.safetensors");
    String unicode = "emb\u00e9d.\ud83d\ude00"; // outside the BMP: UTF-8, not modified UTF-8
    try (ConstantMap map = ConstantMap.create()) {
      map.put("a", new float[] {1f, 2f, 3f, 4f, 5f, 6f}, 2, 3);
      map.put(unicode, new int[] {7, 8}, 2);
      map.put("b", new double[] {0.5});
      map.save(file);
    }
    assertTrue(Files.size(file) > 8);
    try (ConstantMap loaded = ConstantMap.loadSafetensors(file)) {
      assertEquals(3, loaded.size());
      assertTrue(loaded.names().containsAll(Arrays.asList("a", unicode, "b")));
      TensorView a = loaded.find("a");
      assertArrayEquals(new long[] {2, 3}, a.shape());
      assertArrayEquals(new float[] {1f, 2f, 3f, 4f, 5f, 6f}, floats(a), 0f);
      assertEquals(DType.I32, loaded.find(unicode).dtype());
      assertEquals(DType.F64, loaded.find("b").dtype());
      assertEquals(0, loaded.find("b").ndim());
      assertTrue(loaded.toString(), loaded.toString().contains(file.toString()));
    }
  }

  /** Writes a safetensors file by hand: 8-byte little-endian header length, JSON, data. */
  private Path writeSafetensors(String name, String json, byte[] data) throws Exception {
    byte[] header = json.getBytes(StandardCharsets.UTF_8);
    ByteBuffer file = ByteBuffer.allocate(8 + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
    file.putLong(header.length).put(header).put(data);
    Path path = tmp.getRoot().toPath().resolve(name);
    Files.write(path, file.array());
    return path;
  }

  @Test
  public void metadataIsRead() throws Exception {
    byte[] data = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putFloat(1f).putFloat(2f).array();
    Path file = writeSafetensors("meta.safetensors",
        "{\"__metadata__\":{\"format\":\"pt\",\"auteur\":\"Zo\u00eb\"},"
            + "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", data);
    try (ConstantMap map = ConstantMap.loadSafetensors(file)) {
      Map<String, String> metadata = map.metadata();
      assertEquals(2, metadata.size());
      assertEquals("pt", metadata.get("format"));
      assertEquals("Zo\u00eb", metadata.get("auteur"));
      assertEquals(Arrays.asList("x"), map.names());
      assertThrows(UnsupportedOperationException.class, () -> metadata.put("k", "v"));
    }
  }

  @Test
  public void fileErrorsAreReported() throws Exception {
    Path missing = tmp.getRoot().toPath().resolve("missing.safetensors");
    WharfException e = assertThrows(WharfException.class, () -> ConstantMap.loadSafetensors(missing));
    assertTrue(e.toString(), e.code() == WharfException.Code.NOT_FOUND || e.code() == WharfException.Code.IO_ERROR);
    assertTrue(e.getMessage(), e.getMessage().contains("missing.safetensors"));

    Path corrupt = writeSafetensors("corrupt.safetensors",
        "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,8]}}", new byte[8]);
    assertWharfError(WharfException.Code.DATA_CORRUPT, () -> ConstantMap.loadSafetensors(corrupt), "x");

    try (ConstantMap map = ConstantMap.create()) {
      map.put("w", new float[] {1f});
      Path noDir = tmp.getRoot().toPath().resolve("no/such/dir/out.safetensors");
      assertWharfError(WharfException.Code.IO_ERROR, () -> map.save(noDir));
    }
  }

  @Test
  public void closeTwiceIsANoOpAndUseAfterCloseThrows() throws Exception {
    ConstantMap map = ConstantMap.create();
    map.put("w", new float[] {1f, 2f}, 2);
    TensorView view = map.find("w");
    map.close();
    map.close();
    assertTrue(map.isClosed());
    assertClosed("ConstantMap", () -> map.put("v", new float[] {1f}));
    assertClosed("ConstantMap", () -> map.find("w"));
    assertClosed("ConstantMap", map::size);
    assertClosed("ConstantMap", map::names);
    assertClosed("ConstantMap", map::metadata);
    assertClosed("ConstantMap", () -> map.save(tmp.getRoot().toPath().resolve("x.safetensors")));
    assertClosed("ConstantMap", view::toByteArray);
    assertClosed("ConstantMap", view::asByteBuffer);
    assertNotEquals(0, view.address()); // the description outlives the map; the data does not
    try (WharfRuntime runtime = TestSupport.hostRuntime()) {
      assertClosed("ConstantMap", () -> Container.fromMap(runtime, map, "m"));
    }
  }

  /**
   * A tensor's buffer is a copy, so a map it is put into does not depend on the map it came
   * from: here a memory-mapped safetensors file, closed (unmapped) before the other map is
   * read. (When asByteBuffer was a view of the mapping, the update below read unmapped memory
   * unless the binding kept the mapping alive.)
   */
  @Test
  public void aCopyOfAMappedTensorOutlivesItsMap() {
    Path file = tmp.getRoot().toPath().resolve("big.safetensors");
    int n = 1 << 20; // 4 MiB: many pages, unmapped for sure once the mapping goes
    float[] values = TestSupport.iota(n, 0.5f);
    try (ConstantMap writer = ConstantMap.create()) {
      writer.put("w", values, n);
      writer.save(file);
    }
    try (WharfRuntime runtime = TestSupport.hostRuntime();
         ConstantMap borrower = ConstantMap.create()) {
      ConstantMap loaded = ConstantMap.loadSafetensors(file);
      ByteBuffer view = loaded.find("w").asByteBuffer();
      assertFalse(view.isDirect());
      view.position(4); // from the position on: elements 1..n-1
      borrower.put("w", view, DType.F32, n - 1); // copied
      loaded.close(); // unmapped
      assertTrue(loaded.isClosed());
      try (Container c = Container.fromMap(runtime, borrower, "c");
           Run run = c.beginRun()) {
        float[] got = TestSupport.readFloats(run, "w");
        assertEquals(n - 1, got.length);
        assertEquals(values[1], got[0], 0f);
        assertEquals(values[n - 1], got[n - 2], 0f);
      }
      Path copy = tmp.getRoot().toPath().resolve("copy.safetensors");
      borrower.save(copy); // reads the borrowed memory again
      try (ConstantMap reloaded = ConstantMap.loadSafetensors(copy)) {
        assertEquals(values[n - 1], floats(reloaded.find("w"))[n - 2], 0f);
      }
    }
  }

  /**
   * A run's tensor put into a map is a copy: the map keeps its values through updates and
   * swaps that free the run's generation.
   */
  @Test
  public void aCopyOfARunsTensorOutlivesItsGeneration() {
    int n = 1 << 18;
    try (WharfRuntime runtime = TestSupport.hostRuntime();
         ConstantMap weights = ConstantMap.create();
         ConstantMap snapshot = ConstantMap.create()) {
      weights.put("w", TestSupport.iota(n, 1f), n);
      try (Container c = Container.fromMap(runtime, weights, "c")) {
        Run run = c.beginRun();
        snapshot.put("w", run.tensor("w").asByteBuffer(), DType.F32, n);
        run.close();
        assertTrue(run.isClosed());
        for (int i = 0; i < 4; i++) { // the run's generation is no longer active nor inactive
          try (ConstantMap patch = ConstantMap.create()) {
            patch.put("w", TestSupport.iota(n, 100f * (i + 2)), n);
            c.update(patch);
          }
          c.swap();
        }
        c.freeInactive();
        runtime.synchronize();
        try (Container other = Container.fromMap(runtime, snapshot, "other");
             Run r = other.beginRun()) {
          float[] got = TestSupport.readFloats(r, "w");
          assertEquals(1f, got[0], 0f);
          assertEquals(n, got[n - 1], 0f);
        }
      }
    }
  }

  /**
   * Issue 23, defect 2: a buffer kept after its owner closed, put into a new map, carries
   * the values it was copied with. When buffers were views of Wharf's memory, a stale one was
   * accepted and copied whatever had been reused there into the weights (and read after
   * close, it crashed the JVM: BufferLifetimeTest).
   */
  @Test
  public void buffersAreCopiesSoAStaleOneCarriesItsOwnValues() {
    int n = 1 << 18;
    try (WharfRuntime runtime = TestSupport.hostRuntime();
         ConstantMap weights = ConstantMap.create();
         ConstantMap target = ConstantMap.create()) {
      weights.put("w", TestSupport.iota(n, 1f), n);
      ByteBuffer stale;
      try (Container c = Container.fromMap(runtime, weights, "c")) {
        try (Run run = c.beginRun()) {
          stale = run.tensor("w").asByteBuffer();
          assertFalse(stale.isDirect());
          assertTrue(stale.isReadOnly());
        }
        for (int i = 0; i < 3; i++) { // the run's generation is freed, its memory reused
          try (ConstantMap patch = ConstantMap.create()) {
            patch.put("w", TestSupport.iota(n, -1000f * (i + 1)), n);
            c.update(patch);
          }
          c.swap();
        }
        c.freeInactive();
      }
      runtime.synchronize();
      assertEquals(n, stale.asFloatBuffer().get(n - 1), 0f); // still readable: Java memory
      target.put("w", stale, DType.F32, n);
      try (Container other = Container.fromMap(runtime, target, "other");
           Run r = other.beginRun()) {
        float[] got = TestSupport.readFloats(r, "w");
        assertEquals(1f, got[0], 0f);
        assertEquals(n, got[n - 1], 0f);
      }
    }
  }

  /** A fold's writable buffer is a copy too: put into a map, it is copied again. */
  @Test
  public void aFoldsBufferPutIntoAMapIsCopied() {
    try (WharfRuntime runtime = TestSupport.hostRuntime();
         ConstantMap weights = ConstantMap.create();
         ConstantMap target = ConstantMap.create()) {
      weights.put("w", new float[] {1f, 2f}, 2);
      try (Container c = Container.create(runtime, "c", Arrays.asList(ConstantDecl.of("w", DType.F32, 2),
          ConstantDecl.of("d", DType.F32, 2).derived()))) {
        c.update(weights, UpdateOptions.builder().fold(run -> {
          ByteBuffer d = run.writableBuffer("d");
          d.asFloatBuffer().put(new float[] {3f, 4f});
          target.put("d", d, DType.F32, 2);
          d.asFloatBuffer().put(new float[] {5f, 6f}); // after the put: not in the map
        }).build());
        c.swap();
        try (Run run = c.beginRun()) {
          assertArrayEquals(new float[] {5f, 6f}, TestSupport.readFloats(run, "d"), 0f);
        }
      }
      assertArrayEquals(new float[] {3f, 4f}, floats(target.find("d")), 0f);
    }
  }
}
