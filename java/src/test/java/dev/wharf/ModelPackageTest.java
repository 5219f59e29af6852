// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static dev.wharf.TestSupport.assertWharfError;
import static dev.wharf.TestSupport.hostRuntime;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.After;
import org.junit.Test;

/**
 * Model packages (the experimental tier) on the host backend: a package this test writes
 * (manifest, two safetensors shards, a state file, placeholder method files: what
 * tests/unit/model_package_test.cpp writes) is checked whole before its first method, which
 * needs the CUDA backend; the refusals before that are {@link WharfException}s with the
 * library's codes and messages, and leave nothing behind.
 */
public class ModelPackageTest {
  private static final String MANIFEST = String.join("\n",
      "{",
      "  \"format\": \"wharf-model-package\",",
      "  \"format_version\": 1,",
      "  \"name\": \"tiny\",",
      "  \"dtype\": \"float32\",",
      "  \"max_seq_len\": 64,",
      "  \"weights\": {",
      "    \"files\": [\"weights/model-00001-of-00002.safetensors\", \"weights/model-00002-of-00002.safetensors\"],",
      "    \"parameters\": [",
      "      {\"fqn\": \"embed.weight\", \"dtype\": \"float32\", \"shape\": [8, 4]},",
      "      {\"fqn\": \"norm.weight\", \"dtype\": \"bfloat16\", \"shape\": [4]},",
      "      {\"fqn\": \"lm_head.weight\", \"dtype\": \"F32\", \"shape\": [8, 4]}",
      "    ]",
      "  },",
      "  \"state\": [",
      "    {\"fqn\": \"cache.key_0\", \"dtype\": \"float32\", \"shape\": [1, 2, 64, 2], \"initial\": \"zeros\"},",
      "    {\"fqn\": \"cache.pos\", \"dtype\": \"int64\", \"shape\": [1], \"initial\": {\"tensor\": \"pos0\"}}",
      "  ],",
      "  \"state_file\": \"state.safetensors\",",
      "  \"methods\": [",
      "    {\"name\": \"prefill\", \"file\": \"methods/prefill.so\",",
      "     \"inputs\": [{\"name\": \"input_ids\", \"dtype\": \"int64\", \"shape\": [1, \"T\"]},",
      "                {\"name\": \"cache_position\", \"dtype\": \"int64\", \"shape\": [\"T\"]}],",
      "     \"outputs\": [{\"name\": \"logits\", \"dtype\": \"float32\", \"shape\": [1, 1, 8]}],",
      "     \"dims\": {\"T\": {\"min\": 1, \"max\": 64}}},",
      "    {\"name\": \"decode\", \"file\": \"methods/decode.so\",",
      "     \"inputs\": [{\"name\": \"input_ids\", \"dtype\": \"int64\", \"shape\": [1, 1]},",
      "                {\"name\": \"cache_position\", \"dtype\": \"int64\", \"shape\": [1]}],",
      "     \"outputs\": [{\"name\": \"logits\", \"dtype\": \"float32\", \"shape\": [1, 1, 8]}]}",
      "  ]",
      "}");

  private Path base;

  @After
  public void removePackages() throws IOException {
    if (base == null) return;
    try (Stream<Path> files = Files.walk(base)) {
      for (Path p : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) Files.delete(p);
    }
  }

  /** A safetensors image as the reference lays it out: name -> {dtype, shape, bytes}, data zero-filled. */
  static byte[] safetensors(String... tensors) {
    StringBuilder header = new StringBuilder("{");
    long offset = 0;
    for (int i = 0; i < tensors.length; i += 4) {
      long bytes = Long.parseLong(tensors[i + 3]);
      if (i > 0) header.append(',');
      header.append('"').append(tensors[i]).append("\":{\"dtype\":\"").append(tensors[i + 1]).append("\",\"shape\":")
          .append(tensors[i + 2]).append(",\"data_offsets\":[").append(offset).append(',').append(offset + bytes)
          .append("]}");
      offset += bytes;
    }
    header.append('}');
    while (header.length() % 8 != 0) header.append(' ');
    byte[] h = header.toString().getBytes(StandardCharsets.UTF_8);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).array());
    out.writeBytes(h);
    out.writeBytes(new byte[(int) offset]);
    return out.toByteArray();
  }

  /** Writes a valid package, whose manifest {@code edit} may change, into a new directory. */
  private Path writePackage(UnaryOperator<String> edit) throws IOException {
    if (base == null) base = Files.createTempDirectory("wharf-java-pkg");
    Path dir = Files.createTempDirectory(base, "p").resolve("tiny.wharf");
    Map<String, byte[]> files = new LinkedHashMap<>();
    files.put("manifest.json", edit.apply(MANIFEST).getBytes(StandardCharsets.UTF_8));
    files.put("weights/model-00001-of-00002.safetensors",
        safetensors("embed.weight", "F32", "[8,4]", "128", "norm.weight", "BF16", "[4]", "8"));
    files.put("weights/model-00002-of-00002.safetensors", safetensors("lm_head.weight", "F32", "[8,4]", "128"));
    files.put("state.safetensors", safetensors("pos0", "I64", "[1]", "8"));
    files.put("methods/prefill.so", "placeholder: the host backend never opens it".getBytes(StandardCharsets.UTF_8));
    files.put("methods/decode.so", "placeholder".getBytes(StandardCharsets.UTF_8));
    for (Map.Entry<String, byte[]> f : files.entrySet()) {
      Path p = dir.resolve(f.getKey());
      Files.createDirectories(p.getParent());
      Files.write(p, f.getValue());
    }
    return dir;
  }

  private static UnaryOperator<String> replace(String from, String to) {
    return m -> {
      assertEquals(from, 1, m.split(java.util.regex.Pattern.quote(from), -1).length - 1);
      return m.replace(from, to);
    };
  }

  /** Loads {@code dir}, expects {@code code} with every fragment, and that nothing was left behind. */
  private static WharfException refused(WharfRuntime runtime, Path dir, ModelPackageOptions options,
      WharfException.Code code, String... fragments) {
    WharfException e = assertWharfError(code, () -> ModelPackage.load(runtime, dir, options), fragments);
    MemoryStats stats = runtime.memoryStats();
    for (MemoryTag tag : MemoryTag.values()) assertEquals(tag.toString(), 0, stats.current(tag));
    return e;
  }

  @Test
  public void aValidPackageStopsAtItsFirstMethodOnTheHost() throws IOException {
    try (WharfRuntime runtime = hostRuntime()) {
      Path dir = writePackage(m -> m);
      refused(runtime, dir, ModelPackageOptions.defaults(), WharfException.Code.UNSUPPORTED,
          "tiny.wharf", "method 'prefill'", "CUDA backend");
      assertWharfError(WharfException.Code.UNSUPPORTED, () -> ModelPackage.load(runtime, dir), "method 'prefill'");
      // Every option reaches the library and changes nothing about that answer; the weights
      // are never reached, so progress is never reported.
      int[] calls = {0};
      ModelPackageOptions options = ModelPackageOptions.builder()
          .shimPath(Path.of("/nonexistent/libwharf_aoti_shim.so"))
          .maxSessionBytes(1 << 20)
          .progress((done, total) -> ++calls[0] > 0)
          .build();
      refused(runtime, dir, options, WharfException.Code.UNSUPPORTED, "tiny.wharf", "CUDA backend");
      assertEquals(0, calls[0]);
      assertTrue(options.toString(), options.toString().contains("maxSessionBytes=1048576"));
    }
  }

  @Test
  public void refusalsCarryTheCodeAndNameTheFault() throws IOException {
    try (WharfRuntime runtime = hostRuntime()) {
      ModelPackageOptions opts = ModelPackageOptions.defaults();
      Path dir = writePackage(m -> m);
      Files.delete(dir.resolve("manifest.json"));
      refused(runtime, dir, opts, WharfException.Code.NOT_FOUND, "tiny.wharf", "no manifest.json");
      refused(runtime, dir.resolveSibling("missing.wharf"), opts, WharfException.Code.NOT_FOUND, "missing.wharf");

      dir = writePackage(replace("\"format_version\": 1", "\"format_version\": 2"));
      refused(runtime, dir, opts, WharfException.Code.UNSUPPORTED,
          "format_version 2 is newer than this loader reads (1)");

      dir = writePackage(m -> m);
      Files.write(dir.resolve("weights/model-00002-of-00002.safetensors"), safetensors());
      refused(runtime, dir, opts, WharfException.Code.INVALID_ARGUMENT,
          "weights.parameters[2]", "parameter 'lm_head.weight' is in no weight file");

      dir = writePackage(replace("{\"name\": \"input_ids\", \"dtype\": \"int64\", \"shape\": [1, 1]}",
          "{\"name\": \"input_ids\", \"dtype\": \"int65\", \"shape\": [1, 1]}"));
      refused(runtime, dir, opts, WharfException.Code.INVALID_ARGUMENT,
          "manifest.json: methods[1].inputs[0].dtype: 'int65' is not a dtype");
    }
  }

  @Test
  public void loadChecksItsArgumentsInJava() throws IOException {
    Path dir = writePackage(m -> m);
    try (WharfRuntime runtime = hostRuntime()) {
      assertThrows(NullPointerException.class, () -> ModelPackage.load(null, dir));
      assertThrows(NullPointerException.class, () -> ModelPackage.load(runtime, null));
      assertThrows(NullPointerException.class, () -> ModelPackage.load(runtime, dir, null));
      assertThrows(IllegalArgumentException.class, () -> ModelPackageOptions.builder().maxSessionBytes(-1));
    }
    WharfRuntime closed = hostRuntime();
    closed.close();
    assertThrows(IllegalStateException.class, () -> ModelPackage.load(closed, dir));
  }

  /**
   * A package handle around no native package (NULL pointers, which every package function
   * refuses or answers with nothing): what the binding does with an open and a closed
   * package and its store, without a GPU to load a real one.
   */
  private static ModelPackage nullPackage(WharfRuntime runtime) throws ReflectiveOperationException {
    SWIGTYPE_p_wharf_model_package none = new SWIGTYPE_p_wharf_model_package(0, false);
    Class<?> manifestClass = Class.forName("dev.wharf.ModelPackage$Manifest");
    Constructor<?> manifest = manifestClass.getDeclaredConstructor(SWIGTYPE_p_wharf_model_package.class);
    manifest.setAccessible(true);
    Constructor<ModelPackage> ctor = ModelPackage.class.getDeclaredConstructor(SWIGTYPE_p_wharf_model_package.class,
        WharfRuntime.class, String.class, manifestClass);
    ctor.setAccessible(true);
    ModelPackage pkg = ctor.newInstance(none, runtime, "/nowhere/tiny.wharf", manifest.newInstance(none));
    Field store = ModelPackage.class.getDeclaredField("store");
    store.setAccessible(true);
    store.set(pkg, WeightStore.ofPackage(new SWIGTYPE_p_wharf_weight_store(0, false), pkg));
    return pkg;
  }

  @Test
  public void closedPackagesAndTheirStoreAreRefused() throws ReflectiveOperationException {
    try (WharfRuntime runtime = hostRuntime()) {
      ModelPackage pkg = nullPackage(runtime);
      assertSame(runtime, pkg.runtime());
      assertSame(pkg.store(), pkg.store());
      assertSame(pkg, pkg.store().modelPackage());
      assertEquals(Arrays.asList(), pkg.methodNames());
      assertEquals(0, pkg.maxSeqLen());
      // The library refuses NULL handles with a status, not a crash.
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> pkg.method("decode"), "NULL");
      assertWharfError(WharfException.Code.INVALID_ARGUMENT, () -> pkg.createSession(), "NULL");
      assertWharfError(WharfException.Code.NOT_FOUND, () -> pkg.methodInputs("decode"), "has no method 'decode'");
      assertThrows(NullPointerException.class, () -> pkg.method(null));
      assertThrows(NullPointerException.class, () -> pkg.createSession(null));
      // The store belongs to the package: closing it does nothing.
      pkg.store().close();
      assertFalse(pkg.store().isClosed());
      pkg.close();
      assertTrue(pkg.isClosed());
      assertTrue(pkg.store().isClosed());
      pkg.close(); // idempotent
      assertThrows(IllegalStateException.class, () -> pkg.method("decode"));
      assertThrows(IllegalStateException.class, () -> pkg.createSession());
      assertThrows(IllegalStateException.class, () -> pkg.store().swap());
      assertThrows(IllegalStateException.class, () -> pkg.store().updateFromFile(Path.of("w.safetensors")));
      assertTrue(pkg.toString(), pkg.toString().contains("closed"));
    }
  }

  @Test
  public void tensorSpecsDescribeFixedAndSymbolicDimensions() {
    TensorSpec ids = new TensorSpec("input_ids", DType.I64,
        Arrays.asList(new TensorSpec.Dim(null, 1, 1, 1), new TensorSpec.Dim("T", -1, 1, 64)));
    assertArrayEquals(new long[] {1, -1}, ids.shape());
    assertFalse(ids.dims().get(0).isSymbolic());
    assertTrue(ids.dims().get(1).isSymbolic());
    assertEquals("T", ids.dims().get(1).name());
    assertEquals(64, ids.dims().get(1).max());
    assertEquals("input_ids: I64 [1, T[1..64]]", ids.toString());
    assertEquals(ids, new TensorSpec("input_ids", DType.I64,
        Arrays.asList(new TensorSpec.Dim(null, 1, 1, 1), new TensorSpec.Dim("T", -1, 1, 64))));
    assertNotEquals(ids, new TensorSpec("input_ids", DType.I64,
        Arrays.asList(new TensorSpec.Dim(null, 1, 1, 1), new TensorSpec.Dim("T", -1, 1, -1))));
    assertEquals("T[0..]", new TensorSpec.Dim("T", -1, 0, -1).toString());
    assertThrows(UnsupportedOperationException.class, () -> ids.dims().clear());
  }
}
