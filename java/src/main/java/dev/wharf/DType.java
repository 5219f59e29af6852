// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

/**
 * Element types of tensors, with the values of {@code wharf_dtype} and the safetensors
 * spellings. Multi-byte elements are stored in the machine's native byte order.
 */
public enum DType {
  /** 32-bit IEEE float. */
  F32(0, 32, "F32"),
  /** 16-bit IEEE half float (pass bit patterns as {@code short}). */
  F16(1, 16, "F16"),
  /** 16-bit bfloat (pass bit patterns as {@code short}). */
  BF16(2, 16, "BF16"),
  /** 64-bit IEEE float. */
  F64(3, 64, "F64"),
  /** 8-bit float, 4 exponent and 3 mantissa bits. */
  F8_E4M3(4, 8, "F8_E4M3"),
  /** 8-bit float, 5 exponent and 2 mantissa bits. */
  F8_E5M2(5, 8, "F8_E5M2"),
  /** Signed 8-bit integer. */
  I8(6, 8, "I8"),
  /** Unsigned 8-bit integer. */
  U8(7, 8, "U8"),
  /** Signed 16-bit integer. */
  I16(8, 16, "I16"),
  /** Signed 32-bit integer. */
  I32(9, 32, "I32"),
  /** Signed 64-bit integer. */
  I64(10, 64, "I64"),
  /** Boolean, one byte per element (0 or 1). */
  BOOL(11, 8, "BOOL"),
  /** Unsigned 16-bit integer (pass bit patterns as {@code short}). Since 0.3. */
  U16(12, 16, "U16"),
  /** Unsigned 32-bit integer (pass bit patterns as {@code int}). Since 0.3. */
  U32(13, 32, "U32"),
  /** Unsigned 64-bit integer (pass bit patterns as {@code long}). Since 0.3. */
  U64(14, 64, "U64"),
  /** Complex number of two 32-bit floats, real then imaginary. Since 0.3. */
  C64(15, 64, "C64"),
  /** OCP MX scale: an 8-bit exponent, no sign, no mantissa. Since 0.3. */
  F8_E8M0(16, 8, "F8_E8M0"),
  /** 8-bit float E4M3, finite, unsigned zero (AMD). Since 0.3. */
  F8_E4M3FNUZ(17, 8, "F8_E4M3FNUZ"),
  /** 8-bit float E5M2, finite, unsigned zero (AMD). Since 0.3. */
  F8_E5M2FNUZ(18, 8, "F8_E5M2FNUZ"),
  /** OCP MXFP4 E2M1: 4 bits, two elements per byte (pass packed bytes). Since 0.3. */
  F4(19, 4, "F4"),
  /** OCP MXFP6 E2M3: 6 bits, four elements per three bytes (pass packed bytes). Since 0.3. */
  F6_E2M3(20, 6, "F6_E2M3"),
  /** OCP MXFP6 E3M2: 6 bits, four elements per three bytes (pass packed bytes). Since 0.3. */
  F6_E3M2(21, 6, "F6_E3M2");

  private final int value;
  private final int bits;
  private final String safetensorsName;

  DType(int value, int bits, String safetensorsName) {
    this.value = value;
    this.bits = bits;
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
   * @return the element size in bytes; 0 for the dtypes narrower than a byte ({@link #F4},
   *     {@link #F6_E2M3}, {@link #F6_E3M2}: see {@link #bits()})
   */
  public int byteSize() {
    return bits % 8 == 0 ? bits / 8 : 0;
  }

  /**
   * Bits per element. A tensor of n elements holds {@code n * bits / 8} bytes; tensors of the
   * sub-byte dtypes must be contiguous and a whole number of bytes.
   *
   * @return 4, 6, 8, 16, 32 or 64
   */
  public int bits() {
    return bits;
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
