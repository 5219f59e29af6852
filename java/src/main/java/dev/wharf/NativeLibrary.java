package dev.wharf;

import dev.wharf.jni.WharfNative;
import dev.wharf.jni.WharfNativeConstants;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Loads the JNI library ({@code libwharfjni.so}, which links {@code libwharf.so.1}) once per
 * class loader and checks that the Wharf library it reaches speaks this binding's ABI.
 *
 * <p>Where it looks: the file named by the system property {@value #PATH_PROPERTY} when it
 * is set, otherwise {@code System.loadLibrary("wharfjni")} (the folders of
 * {@code java.library.path}). Every public entry point of the API calls {@link #load()}
 * before its first native call.
 */
final class NativeLibrary {
  /** The system property naming the JNI library file. */
  static final String PATH_PROPERTY = "wharf.jni.path";
  /** The JNI library's name for {@link System#loadLibrary(String)}. */
  static final String LIBRARY_NAME = "wharfjni";

  private static volatile boolean loaded;
  private static UnsatisfiedLinkError failure; // guarded by NativeLibrary.class

  private NativeLibrary() {}

  /**
   * Loads and checks the library on the first call; later calls return at once, or throw
   * the first call's error again.
   *
   * @throws UnsatisfiedLinkError when the library is missing, cannot be loaded, or has an
   *     ABI version other than {@link Wharf#BINDING_ABI_VERSION}
   */
  static void load() {
    if (loaded) return;
    synchronized (NativeLibrary.class) {
      if (loaded) return;
      if (failure != null) {
        UnsatisfiedLinkError again = new UnsatisfiedLinkError(failure.getMessage());
        again.initCause(failure);
        throw again;
      }
      try {
        loadLibrary(System.getProperty(PATH_PROPERTY));
        checkAbi(WharfNative.wharf_abi_version(), WharfNative.wharf_version(),
            WharfNativeConstants.WHARF_ABI_VERSION);
        loaded = true;
      } catch (UnsatisfiedLinkError e) {
        failure = e;
        throw e;
      }
    }
  }

  /**
   * Loads the JNI library from {@code path} (when neither null nor empty) or from
   * {@code java.library.path}; on failure throws an error that says what was looked for
   * and how to point at the library.
   */
  static void loadLibrary(String path) {
    String howToFix = "set the system property " + PATH_PROPERTY
        + " to the library file (java -D" + PATH_PROPERTY + "=/path/to/"
        + System.mapLibraryName(LIBRARY_NAME) + " ...), or add its folder to java.library.path";
    if (path != null && !path.isEmpty()) {
      Path file = Paths.get(path).toAbsolutePath();
      if (!Files.isRegularFile(file)) {
        throw new UnsatisfiedLinkError("Wharf JNI library not found: " + PATH_PROPERTY + " is \""
            + path + "\", but " + file + " is not a file; " + howToFix);
      }
      try {
        System.load(file.toString());
      } catch (UnsatisfiedLinkError e) {
        UnsatisfiedLinkError error = new UnsatisfiedLinkError("Wharf JNI library " + file
            + " (from " + PATH_PROPERTY + ") could not be loaded: " + e.getMessage()
            + " (it needs libwharf.so.1, found through its RPATH or LD_LIBRARY_PATH)");
        error.initCause(e);
        throw error;
      }
      return;
    }
    try {
      System.loadLibrary(LIBRARY_NAME);
    } catch (UnsatisfiedLinkError e) {
      UnsatisfiedLinkError error = new UnsatisfiedLinkError("Wharf JNI library "
          + System.mapLibraryName(LIBRARY_NAME) + " could not be loaded from java.library.path ("
          + System.getProperty("java.library.path", "").replace(File.pathSeparator, ", ")
          + "): " + e.getMessage() + "; " + PATH_PROPERTY + " is not set; " + howToFix);
      error.initCause(e);
      throw error;
    }
  }

  /**
   * Refuses a library whose ABI major version differs from this binding's.
   *
   * @param libraryAbi what the loaded library's {@code wharf_abi_version()} returned
   * @param libraryVersion the loaded library's {@code wharf_version()}
   * @param headerAbi {@code WHARF_ABI_VERSION} of the header the JNI layer was generated from
   */
  static void checkAbi(long libraryAbi, String libraryVersion, long headerAbi) {
    if (libraryAbi != Wharf.BINDING_ABI_VERSION) {
      throw new UnsatisfiedLinkError("libwharf " + libraryVersion + " has ABI version " + libraryAbi
          + ", but this Java binding was built for ABI version " + Wharf.BINDING_ABI_VERSION
          + "; use a libwharf.so." + Wharf.BINDING_ABI_VERSION + " or a binding for ABI version "
          + libraryAbi);
    }
    if (headerAbi != Wharf.BINDING_ABI_VERSION) {
      throw new UnsatisfiedLinkError("the JNI layer was generated from a wharf.h with ABI version "
          + headerAbi + ", but this Java binding was written for ABI version "
          + Wharf.BINDING_ABI_VERSION + "; regenerate it from a matching header");
    }
  }
}
