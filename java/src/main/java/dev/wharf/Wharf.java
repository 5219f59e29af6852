// SPDX-License-Identifier: Apache-2.0
package dev.wharf;


/** Versions of the Wharf library and of this binding. */
public final class Wharf {
  /**
   * The ABI major version this binding is written for. The binding refuses to load a
   * library whose {@link #abiVersion()} differs (the number in its SONAME,
   * {@code libwharf.so.1}).
   */
  public static final int BINDING_ABI_VERSION = 1;

  /**
   * The {@code wharf.h} version ("MAJOR.MINOR.PATCH") this binding was written against; the
   * loaded library may be newer ({@link #version()}, {@link #versionNumber()}).
   */
  public static final String BINDING_VERSION = "0.3.0";

  private Wharf() {}

  /**
   * The loaded library's version, "MAJOR.MINOR.PATCH".
   *
   * @return the version string of {@code libwharf}
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static String version() {
    NativeLibrary.load();
    return WharfNative.wharf_version();
  }

  /**
   * The loaded library's version as {@code major * 10000 + minor * 100 + patch} (0.3.0 is
   * 300), to test for a release's additions.
   *
   * @return the version number of {@code libwharf}
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static int versionNumber() {
    NativeLibrary.load();
    return (int) WharfNative.wharf_version_number();
  }

  /**
   * The loaded library's ABI major version; always {@link #BINDING_ABI_VERSION} once loading
   * has succeeded.
   *
   * @return the ABI major version of {@code libwharf}
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static int abiVersion() {
    NativeLibrary.load();
    return (int) WharfNative.wharf_abi_version();
  }

  /**
   * Where the JNI library was loaded from: the file named by the system property
   * {@code wharf.jni.path}, the jar's {@code native/linux-x86_64} folder and the temporary
   * folder it was extracted to, or {@code java.library.path}. Loads it first if needed.
   *
   * @return a description of the JNI library's origin
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static String nativeLibrary() {
    NativeLibrary.load();
    return NativeLibrary.loadedFrom();
  }

  /**
   * Routes the library's own log lines (process-wide) at {@code minLevel} and above to the
   * {@link System.Logger} named {@code dev.wharf}, where the binding's warnings (a leaked
   * handle, say) go too: with the JDK's default backend that is the
   * {@code java.util.logging} logger {@code dev.wharf} (library levels debug, info, warn and
   * error become {@code DEBUG}, {@code INFO}, {@code WARNING} and {@code ERROR}). Lines may
   * come from library threads, which are attached to the JVM for each line; a logger
   * implementation must not call into Wharf (the library may be logging while holding its
   * locks). {@link #logToStderr()} restores the library's default.
   *
   * @param minLevel the lowest level passed on ({@code OFF}: none)
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static synchronized void logToSystemLogger(System.Logger.Level minLevel) {
    java.util.Objects.requireNonNull(minLevel, "minLevel");
    NativeLibrary.load();
    WharfNative.wharf_swig_log_to_java(1, WharfLog.wharfLevel(minLevel));
  }

  /**
   * Restores the library's default logging: lines at WARN and above to stderr (the
   * environment variable {@code WHARF_LOG_LEVEL} changes the level). Lines already in
   * progress on other threads may still reach the {@code System.Logger}.
   *
   * @throws UnsatisfiedLinkError when the native library cannot be loaded
   */
  public static synchronized void logToStderr() {
    NativeLibrary.load();
    WharfNative.wharf_swig_log_to_java(0, 0);
  }
}
