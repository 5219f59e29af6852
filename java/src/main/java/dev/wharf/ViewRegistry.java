// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The memory behind every {@link java.nio.ByteBuffer} this binding has handed out over
 * memory Wharf owns ({@link TensorView#asByteBuffer()}, {@link FoldRun#writableBuffer}), by
 * owner, for as long as the owner's native object lives. {@link ConstantMap#put(String,
 * java.nio.ByteBuffer, DType, long...)} looks a buffer up here: a map that borrowed such
 * memory without keeping its owner alive would read freed memory once the owner is closed.
 */
final class ViewRegistry {
  /** One range of bytes: [address, address + size). */
  private static final class Range {
    final long address;
    final long size;

    Range(long address, long size) {
      this.address = address;
      this.size = size;
    }

    boolean overlaps(long start, long bytes) {
      // a zero-byte buffer at the first byte of a range counts as inside it
      long end = start + Math.max(bytes, 1);
      return start < address + Math.max(size, 1) && address < end;
    }
  }

  // owner -> the ranges handed out over its memory; guarded by ViewRegistry.class
  private static final Map<NativeHandle<?>, List<Range>> RANGES = new IdentityHashMap<>();

  private ViewRegistry() {}

  /** Records that a buffer over {@code size} bytes at {@code address} of {@code owner} was handed out. */
  static synchronized void handedOut(NativeHandle<?> owner, long address, long size) {
    List<Range> ranges = RANGES.computeIfAbsent(owner, o -> new ArrayList<>());
    for (Range r : ranges) {
      if (r.address == address && r.size == size) return;
    }
    ranges.add(new Range(address, size));
  }

  /** Forgets an owner whose native object has been freed. */
  static synchronized void forget(NativeHandle<?> owner) {
    RANGES.remove(owner);
  }

  /**
   * The owner of memory overlapping {@code bytes} bytes at {@code address}, or null when no
   * buffer handed out over Wharf's memory covers it (the caller's own memory).
   */
  static synchronized NativeHandle<?> ownerOf(long address, long bytes) {
    for (Map.Entry<NativeHandle<?>, List<Range>> e : RANGES.entrySet()) {
      for (Range r : e.getValue()) {
        if (r.overlaps(address, bytes)) return e.getKey();
      }
    }
    return null;
  }
}
