package dev.wharf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeFalse;
import static org.junit.Assume.assumeTrue;

import dev.wharf.jni.WharfNative;
import dev.wharf.jni.WharfNativeConstants;
import dev.wharf.jni.wharf_backend;
import dev.wharf.jni.wharf_code;
import dev.wharf.jni.wharf_device_type;
import dev.wharf.jni.wharf_dtype;
import dev.wharf.jni.wharf_memory_tag;
import dev.wharf.jni.wharf_placement;
import dev.wharf.jni.wharf_update_target;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/** Loading the JNI library, the ABI check, and the enums against the header's values. */
public class LibraryTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  @Test
  public void versionsMatchTheHeaderTheBindingWasGeneratedFrom() {
    assertEquals(Wharf.BINDING_ABI_VERSION, Wharf.abiVersion());
    assertEquals(WharfNativeConstants.WHARF_VERSION_MAJOR + "." + WharfNativeConstants.WHARF_VERSION_MINOR
        + "." + WharfNativeConstants.WHARF_VERSION_PATCH, Wharf.version());
  }

  @Test
  public void abiMismatchIsRefusedWithBothVersions() {
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.checkAbi(2, "2.3.4", 1));
    assertTrue(e.getMessage(), e.getMessage().contains("2.3.4"));
    assertTrue(e.getMessage(), e.getMessage().contains("ABI version 2"));
    assertTrue(e.getMessage(), e.getMessage().contains("ABI version 1"));
  }

  @Test
  public void headerAbiMismatchIsRefused() {
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.checkAbi(1, "1.0.0", 2));
    assertTrue(e.getMessage(), e.getMessage().contains("ABI version 2"));
    assertTrue(e.getMessage(), e.getMessage().contains("ABI version 1"));
  }

  @Test
  public void matchingAbiIsAccepted() {
    NativeLibrary.checkAbi(1, "0.1.0", 1);
  }

  @Test
  public void missingLibraryFileNamesThePathAndTheProperty() {
    String path = tmp.getRoot() + "/nowhere/libwharfjni.so";
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.loadLibrary(path));
    assertTrue(e.getMessage(), e.getMessage().contains(path));
    assertTrue(e.getMessage(), e.getMessage().contains("-Dwharf.jni.path="));
  }

  @Test
  public void unloadableLibrarySaysWhy() {
    // test.sh builds a library whose dependency has been deleted (like a missing libwharf.so.1)
    String broken = System.getProperty("wharf.test.unloadable");
    assumeTrue("the system property wharf.test.unloadable is not set", broken != null);
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.loadLibrary(broken));
    assertTrue(e.getMessage(), e.getMessage().contains(Paths.get(broken).toAbsolutePath().toString()));
    assertTrue(e.getMessage(), e.getMessage().contains("could not be loaded"));
    assertTrue(e.getMessage(), e.getMessage().contains("libgone.so")); // the dynamic loader's reason
    assertTrue(e.getCause() instanceof UnsatisfiedLinkError);
  }

  @Test
  public void libraryMissingFromLibraryPathSaysHowToSetIt() {
    String libraryPath = System.getProperty("java.library.path", "");
    for (String dir : libraryPath.split(File.pathSeparator)) {
      assumeFalse("libwharfjni.so is on java.library.path", !dir.isEmpty()
          && Files.exists(Paths.get(dir, System.mapLibraryName(NativeLibrary.LIBRARY_NAME))));
    }
    UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.loadLibrary(null));
    assertTrue(e.getMessage(), e.getMessage().contains("libwharfjni.so"));
    assertTrue(e.getMessage(), e.getMessage().contains("java.library.path"));
    assertTrue(e.getMessage(), e.getMessage().contains("wharf.jni.path"));
  }

  @Test
  public void dtypesMatchTheLibrary() {
    Wharf.version(); // loads the library
    int[] values = {wharf_dtype.WHARF_DTYPE_F32, wharf_dtype.WHARF_DTYPE_F16, wharf_dtype.WHARF_DTYPE_BF16,
        wharf_dtype.WHARF_DTYPE_F64, wharf_dtype.WHARF_DTYPE_F8_E4M3, wharf_dtype.WHARF_DTYPE_F8_E5M2,
        wharf_dtype.WHARF_DTYPE_I8, wharf_dtype.WHARF_DTYPE_U8, wharf_dtype.WHARF_DTYPE_I16,
        wharf_dtype.WHARF_DTYPE_I32, wharf_dtype.WHARF_DTYPE_I64, wharf_dtype.WHARF_DTYPE_BOOL};
    assertEquals(values.length, DType.values().length);
    for (int i = 0; i < values.length; i++) {
      DType d = DType.values()[i];
      assertEquals(d.name(), values[i], d.value());
      assertEquals(d.name(), WharfNative.wharf_dtype_size(d.value()), d.byteSize());
      assertEquals(d.name(), WharfNative.wharf_dtype_name(d.value()), d.safetensorsName());
      assertEquals(d, DType.fromValue(d.value()));
      assertEquals(d, DType.fromSafetensorsName(d.safetensorsName()));
    }
    assertThrows(IllegalArgumentException.class, () -> DType.fromValue(99));
    assertThrows(IllegalArgumentException.class, () -> DType.fromSafetensorsName("F128"));
  }

  @Test
  public void codesMatchTheLibrary() {
    Wharf.version();
    int[] values = {wharf_code.WHARF_OK, wharf_code.WHARF_INVALID_ARGUMENT, wharf_code.WHARF_NOT_FOUND,
        wharf_code.WHARF_ALREADY_EXISTS, wharf_code.WHARF_OUT_OF_MEMORY, wharf_code.WHARF_RESOURCE_EXHAUSTED,
        wharf_code.WHARF_FAILED_PRECONDITION, wharf_code.WHARF_BUSY, wharf_code.WHARF_UNSUPPORTED,
        wharf_code.WHARF_DEVICE_ERROR, wharf_code.WHARF_IO_ERROR, wharf_code.WHARF_DATA_CORRUPT,
        wharf_code.WHARF_INTERNAL};
    assertEquals(values.length + 1, WharfException.Code.values().length); // + UNKNOWN
    for (int i = 0; i < values.length; i++) {
      WharfException.Code c = WharfException.Code.values()[i];
      assertEquals(c.name(), values[i], c.value());
      assertEquals(WharfNative.wharf_code_name(c.value()), c.name());
      assertEquals(c, WharfException.Code.fromValue(c.value()));
    }
    assertEquals(WharfException.Code.UNKNOWN, WharfException.Code.fromValue(1000));
    assertEquals(WharfException.Code.UNKNOWN, WharfException.Code.fromValue(-1));
  }

  @Test
  public void otherEnumsMatchTheHeader() {
    assertEquals(wharf_backend.WHARF_BACKEND_AUTO, Backend.AUTO.value());
    assertEquals(wharf_backend.WHARF_BACKEND_CUDA, Backend.CUDA.value());
    assertEquals(wharf_backend.WHARF_BACKEND_HOST, Backend.HOST.value());
    assertEquals(wharf_device_type.WHARF_DEVICE_CPU, DeviceType.CPU.value());
    assertEquals(wharf_device_type.WHARF_DEVICE_CUDA, DeviceType.CUDA.value());
    assertEquals(wharf_placement.WHARF_PLACEMENT_DEVICE, Placement.DEVICE.value());
    assertEquals(wharf_placement.WHARF_PLACEMENT_HOST, Placement.HOST.value());
    assertEquals(wharf_update_target.WHARF_TARGET_INACTIVE, UpdateTarget.INACTIVE.value());
    assertEquals(wharf_update_target.WHARF_TARGET_ACTIVE_IN_PLACE, UpdateTarget.ACTIVE_IN_PLACE.value());
    assertEquals(wharf_memory_tag.WHARF_MEM_CONSTANTS, MemoryTag.CONSTANTS.value());
    assertEquals(wharf_memory_tag.WHARF_MEM_STATE, MemoryTag.STATE.value());
    assertEquals(wharf_memory_tag.WHARF_MEM_STAGING, MemoryTag.STAGING.value());
    assertEquals(wharf_memory_tag.WHARF_MEM_WORKSPACE, MemoryTag.WORKSPACE.value());
    assertEquals(wharf_memory_tag.WHARF_MEM_OFFLOAD, MemoryTag.OFFLOAD.value());
    assertEquals(wharf_memory_tag.WHARF_MEM_GRAPH, MemoryTag.GRAPH.value());
  }

  @Test
  public void wharfExceptionCarriesCodeAndMessage() {
    WharfException e = new WharfException(WharfException.Code.BUSY, "container 'm' is updating");
    assertEquals(WharfException.Code.BUSY, e.code());
    assertEquals(7, e.rawCode());
    assertEquals("container 'm' is updating", e.getMessage());
    assertEquals("dev.wharf.WharfException: BUSY: container 'm' is updating", e.toString());
    // The JNI layer's constructor: UTF-8 bytes, and a code newer than the binding.
    WharfException fromNative = new WharfException(42, "caf\u00e9 \ud83d\ude00".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertEquals(WharfException.Code.UNKNOWN, fromNative.code());
    assertEquals(42, fromNative.rawCode());
    assertEquals("caf\u00e9 \ud83d\ude00", fromNative.getMessage());
    assertTrue(fromNative.toString(), fromNative.toString().contains("code 42"));
  }
}
