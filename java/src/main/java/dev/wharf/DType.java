package dev.wharf;

/**
 * Element types of tensors, with the values of {@code wharf_dtype} and the safetensors
 * spellings. Multi-byte elements are stored in the machine's native byte order.
 */
public enum DType {
  /** 32-bit IEEE float. */
  F32(0, 4, "F32"),
  /** 16-bit IEEE half float (pass bit patterns as {@code short}). */
  F16(1, 2, "F16"),
  /** 16-bit bfloat (pass bit patterns as {@code short}). */
  BF16(2, 2, "BF16"),
  /** 64-bit IEEE float. */
  F64(3, 8, "F64"),
  /** 8-bit float, 4 exponent and 3 mantissa bits. */
  F8_E4M3(4, 1, "F8_E4M3"),
  /** 8-bit float, 5 exponent and 2 mantissa bits. */
  F8_E5M2(5, 1, "F8_E5M2"),
  /** Signed 8-bit integer. */
  I8(6, 1, "I8"),
  /** Unsigned 8-bit integer. */
  U8(7, 1, "U8"),
  /** Signed 16-bit integer. */
  I16(8, 2, "I16"),
  /** Signed 32-bit integer. */
  I32(9, 4, "I32"),
  /** Signed 64-bit integer. */
  I64(10, 8, "I64"),
  /** Boolean, one byte per element (0 or 1). */
  BOOL(11, 1, "BOOL");

  private final int value;
  private final int byteSize;
  private final String safetensorsName;

  DType(int value, int byteSize, String safetensorsName) {
    this.value = value;
    this.byteSize = byteSize;
    this.safetensorsName = safetensorsName;
  }

  /**
   * The numeric value in {@code wharf_dtype}.
   *
   * @return the value
   */
  public int value() {
    return value;
  }

  /**
   * Bytes per element.
   *
   * @return the element size in bytes
   */
  public int byteSize() {
    return byteSize;
  }

  /**
   * The safetensors spelling ("F32", "BF16", "F8_E4M3", ...).
   *
   * @return the dtype's name in safetensors headers
   */
  public String safetensorsName() {
    return safetensorsName;
  }

  /**
   * The dtype with the given {@code wharf_dtype} value.
   *
   * @param value a {@code wharf_dtype} value
   * @return the dtype
   * @throws IllegalArgumentException for a value this binding does not know
   */
  public static DType fromValue(int value) {
    for (DType d : values()) {
      if (d.value == value) return d;
    }
    throw new IllegalArgumentException("unknown wharf_dtype value " + value);
  }

  /**
   * The dtype with the given safetensors spelling.
   *
   * @param name a safetensors dtype name such as "BF16"
   * @return the dtype
   * @throws IllegalArgumentException for a name this binding does not know
   */
  public static DType fromSafetensorsName(String name) {
    for (DType d : values()) {
      if (d.safetensorsName.equals(name)) return d;
    }
    throw new IllegalArgumentException("unknown safetensors dtype \"" + name + "\"");
  }
}
