// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * An error reported by the Wharf library: a {@link Code} and a message that names the
 * object and the value at fault (for example
 * {@code constant 'layers.3.weight': shape [4096,4096] expected, got [4096,1024]}).
 *
 * <p>Wharf functions leave nothing half-done when they fail, so after this exception the
 * objects involved are as they were before the call. Misuse detected on the Java side
 * (a null argument, a heap buffer where a direct one is needed, a closed handle) throws the
 * usual {@link NullPointerException}, {@link IllegalArgumentException} or
 * {@link IllegalStateException} instead.
 */
public class WharfException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The error codes of {@code wharf_code}, with the same numeric values. */
  public enum Code {
    /** Success; never carried by an exception. */
    OK(0),
    /** An argument is malformed (wrong shape, bad dtype, ...). */
    INVALID_ARGUMENT(1),
    /** A named thing does not exist (an FQN, a file). */
    NOT_FOUND(2),
    /** A name is taken (a duplicate FQN in a map). */
    ALREADY_EXISTS(3),
    /** A device or host allocation failed, or the runtime's device memory limit was hit. */
    OUT_OF_MEMORY(4),
    /** A budget other than memory was exceeded. */
    RESOURCE_EXHAUSTED(5),
    /** The object is not in a state that allows the call. */
    FAILED_PRECONDITION(6),
    /** The object is in use by another caller; try later. */
    BUSY(7),
    /** Not available in this build or on this backend. */
    UNSUPPORTED(8),
    /** The CUDA driver or runtime reported an error. */
    DEVICE_ERROR(9),
    /** Reading or writing a file failed. */
    IO_ERROR(10),
    /** A file's contents are malformed. */
    DATA_CORRUPT(11),
    /** A bug in Wharf. */
    INTERNAL(12),
    /** The caller's progress callback cancelled the call; nothing changed. */
    CANCELLED(13),
    /** A code newer than this binding; {@link WharfException#rawCode()} has its value. */
    UNKNOWN(-1);

    private final int value;

    Code(int value) {
      this.value = value;
    }

    /**
     * The numeric value of the code in {@code wharf_code}.
     *
     * @return the value; -1 for {@link #UNKNOWN}
     */
    public int value() {
      return value;
    }

    /**
     * The code with the given {@code wharf_code} value.
     *
     * @param value a {@code wharf_code} value
     * @return its code, or {@link #UNKNOWN} for a value this binding does not know
     */
    public static Code fromValue(int value) {
      for (Code c : values()) {
        if (c.value == value && c != UNKNOWN) return c;
      }
      return UNKNOWN;
    }
  }

  /** The error's code. */
  private final Code code;
  /** The numeric code as the library reported it. */
  private final int rawCode;

  /**
   * Creates an exception with a code and a message (for tests and adapters; the library's
   * errors are created by the binding).
   *
   * @param code the error code
   * @param message what went wrong, naming the object and value at fault
   */
  public WharfException(Code code, String message) {
    super(message);
    this.code = Objects.requireNonNull(code, "code");
    this.rawCode = code.value();
  }

  /** Called from the JNI layer with a status's code and its UTF-8 message. */
  WharfException(int rawCode, byte[] utf8Message) {
    super(new String(utf8Message, StandardCharsets.UTF_8));
    this.code = Code.fromValue(rawCode);
    this.rawCode = rawCode;
  }

  /**
   * The error's code.
   *
   * @return the code; {@link Code#UNKNOWN} for a code newer than this binding
   */
  public Code code() {
    return code;
  }

  /**
   * The numeric code as the library reported it (useful when {@link #code()} is
   * {@link Code#UNKNOWN}).
   *
   * @return the {@code wharf_code} value
   */
  public int rawCode() {
    return rawCode;
  }

  /** The class name, the code's name and the message. */
  @Override
  public String toString() {
    String name = code == Code.UNKNOWN ? "code " + rawCode : code.name();
    return getClass().getName() + ": " + name + ": " + getMessage();
  }
}
