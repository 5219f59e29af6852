// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Loads the JNI library ({@code libwharfjni.so}, which links {@code libwharf.so.1}) once per
 * class loader and checks that the Wharf library it reaches speaks this binding's ABI.
 *
 * <p>Where it looks, first match wins:
 * <ol>
 *   <li>the file named by the system property {@value #PATH_PROPERTY}, when it is set (its
 *       {@code libwharf.so.1} is found beside it, through {@code LD_LIBRARY_PATH}, or in the
 *       system's library folders);</li>
 *   <li>the jar: {@code native/<os>-<arch>/libwharfjni.so} (and {@code libwharf.so.1} and
 *       {@code libwharf_aoti_shim.so} when the jar carries them) as class-path resources,
 *       extracted into a new temporary folder, loaded from there and deleted when the JVM
 *       exits, as ONNX Runtime's Java API does;</li>
 *   <li>{@code System.loadLibrary("wharfjni")} (the folders of {@code java.library.path}).</li>
 * </ol>
 * Every public entry point of the API calls {@link #load()} before its first native call.
 */
final class NativeLibrary {
  /** The system property naming the JNI library file. */
  static final String PATH_PROPERTY = "wharf.jni.path";
  /** The JNI library's name for {@link System#loadLibrary(String)}. */
  static final String LIBRARY_NAME = "wharfjni";
  /**
   * The libraries a jar may carry, in the order they are loaded: libwharf first, so that the
   * JNI library's dependency on {@code libwharf.so.1} is the copy beside it; the shim is not
   * loaded here (libwharf opens it, from its own folder, when a model is loaded).
   */
  private static final String[] BUNDLED = {"libwharf.so.1", "libwharf_aoti_shim.so", "libwharfjni.so"};

  private static volatile boolean loaded;
  private static String loadedFrom; // guarded by NativeLibrary.class
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
        String path = System.getProperty(PATH_PROPERTY);
        if (path != null && !path.isEmpty()) {
          loadLibrary(path);
          loadedFrom = Paths.get(path).toAbsolutePath().toString();
        } else {
          loadedFrom = loadBundled(NativeLibrary.class.getClassLoader());
          if (loadedFrom == null) {
            loadLibrary(null);
            loadedFrom = "java.library.path";
          }
        }
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
   * Where the JNI library was loaded from: its file, the jar's resource folder and the
   * temporary folder it was extracted to, or "java.library.path".
   *
   * @return a description, or null before a successful {@link #load()}
   */
  static synchronized String loadedFrom() {
    return loaded ? loadedFrom : null;
  }

  /** The jar's resource folder of this platform's libraries: "native/linux-x86_64". */
  static String resourceFolder() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (os.startsWith("linux")) os = "linux";
    if (arch.equals("amd64") || arch.equals("x86-64")) arch = "x86_64";
    if (arch.equals("arm64")) arch = "aarch64";
    return "native/" + os + "-" + arch;
  }

  /**
   * Extracts this platform's libraries from the class path's resources (a jar) into a new
   * temporary folder and loads them.
   *
   * @return a description of where they came from, or null when the class path carries no
   *     JNI library for this platform
   * @throws UnsatisfiedLinkError when extracting or loading fails
   */
  static String loadBundled(ClassLoader loader) {
    String folder = resourceFolder();
    if (loader == null) loader = ClassLoader.getSystemClassLoader();
    URL jni = loader.getResource(folder + "/" + System.mapLibraryName(LIBRARY_NAME));
    if (jni == null) return null;
    Path dir;
    try {
      dir = Files.createTempDirectory("wharf-native-");
    } catch (IOException | RuntimeException e) {
      throw linkError("Wharf: cannot create a temporary folder to extract " + folder
          + "/libwharfjni.so from " + jni + " into (java.io.tmpdir is "
          + System.getProperty("java.io.tmpdir") + "): " + e + "; or set -D" + PATH_PROPERTY
          + "=/path/to/libwharfjni.so", e);
    }
    dir.toFile().deleteOnExit(); // registered first, so deleted last, once empty
    List<Path> extracted = new ArrayList<>();
    for (String name : BUNDLED) {
      URL url = loader.getResource(folder + "/" + name);
      if (url == null) continue;
      Path file = dir.resolve(name);
      try (InputStream in = url.openStream()) {
        Files.copy(in, file);
      } catch (IOException | RuntimeException e) {
        throw linkError("Wharf: cannot extract " + url + " to " + file + ": " + e, e);
      }
      file.toFile().deleteOnExit();
      extracted.add(file);
    }
    for (Path file : extracted) {
      String name = file.getFileName().toString();
      if (name.equals("libwharf_aoti_shim.so")) continue;
      try {
        System.load(file.toString());
      } catch (UnsatisfiedLinkError e) {
        throw linkError("Wharf library " + name + " extracted from " + url(jni) + " to " + file
            + " could not be loaded: " + e.getMessage()
            + (name.equals("libwharfjni.so") && extracted.size() == 1
                ? " (this jar does not carry libwharf.so.1: it must be in LD_LIBRARY_PATH or a system library folder)"
                : "")
            + "; or set -D" + PATH_PROPERTY + "=/path/to/libwharfjni.so", e);
      }
    }
    return url(jni) + ", extracted to " + dir;
  }

  private static String url(URL jni) {
    String s = jni.toString();
    int slash = s.lastIndexOf('/');
    return slash < 0 ? s : s.substring(0, slash);
  }

  private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
    UnsatisfiedLinkError error = new UnsatisfiedLinkError(message);
    error.initCause(cause);
    return error;
  }

  /**
   * Loads the JNI library from {@code path} (when neither null nor empty) or from
   * {@code java.library.path}; on failure throws an error that says what was looked for
   * and how to point at the library.
   */
  static void loadLibrary(String path) {
    String howToFix = "put the Wharf jar (which carries it) on the class path, set the system property "
        + PATH_PROPERTY + " to the library file (java -D" + PATH_PROPERTY + "=/path/to/"
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
        throw linkError("Wharf JNI library " + file + " (from " + PATH_PROPERTY + ") could not be loaded: "
            + e.getMessage() + " (it needs libwharf.so.1, found beside it, through LD_LIBRARY_PATH or"
            + " in a system library folder)", e);
      }
      return;
    }
    try {
      System.loadLibrary(LIBRARY_NAME);
    } catch (UnsatisfiedLinkError e) {
      throw linkError("Wharf JNI library " + System.mapLibraryName(LIBRARY_NAME)
          + " could not be loaded from java.library.path ("
          + System.getProperty("java.library.path", "").replace(File.pathSeparator, ", ")
          + "): " + e.getMessage() + "; " + PATH_PROPERTY + " is not set and the class path has no "
          + resourceFolder() + "/" + System.mapLibraryName(LIBRARY_NAME) + "; " + howToFix, e);
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
