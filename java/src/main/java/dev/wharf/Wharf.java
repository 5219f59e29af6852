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
}
