// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.Arrays;
import java.util.Objects;

/**
 * The id a replica group spanning processes is formed from ({@code wharf_replica_group_id}):
 * {@value #SIZE} opaque bytes the caller sends to every rank through its own control plane
 * (Wharf runs no rendezvous service): {@link #toBytes()} on the rank that made it,
 * {@link #fromBytes(byte[])} on the others. One id forms one group. Immutable.
 *
 * <p>Experimental: part of wharf.h's experimental tier; it may change in any minor release.
 *
 * @since 0.3
 */
public final class ReplicaGroupId {
  /** The size of an id in bytes. */
  public static final int SIZE = 256;

  private final byte[] bytes;

  private ReplicaGroupId(byte[] bytes) {
    this.bytes = bytes;
  }

  /**
   * Makes a fresh id for a group whose ranks use the runtime's backend (call it in one
   * process, usually rank 0's, and send {@link #toBytes()} to the others). On the host
   * backend the id names an abstract Unix-domain socket rank 0 listens on (a test stand-in
   * for NCCL between processes of one host); on CUDA it carries an {@code ncclUniqueId}.
   *
   * @param runtime the runtime whose backend the ranks use
   * @return a new id
   * @throws WharfException {@link WharfException.Code#UNSUPPORTED} (CUDA: NCCL cannot be
   *     loaded or is too old), {@link WharfException.Code#DEVICE_ERROR}
   * @throws IllegalStateException if the runtime has been closed
   */
  public static ReplicaGroupId create(WharfRuntime runtime) {
    Objects.requireNonNull(runtime, "runtime");
    byte[] out = new byte[SIZE];
    runtime.withPointer(rt -> {
      WharfNative.wharf_swig_replica_group_get_unique_id(rt, out);
      return null;
    });
    return new ReplicaGroupId(out);
  }

  /**
   * Rebuilds an id from the bytes another rank sent (copied). Whether they are an id is
   * checked by {@link ReplicaGroup#createRank}.
   *
   * @param bytes the id's {@value #SIZE} bytes
   * @return the id
   * @throws WharfException {@link WharfException.Code#INVALID_ARGUMENT} if {@code bytes} is
   *     not {@value #SIZE} bytes long
   */
  public static ReplicaGroupId fromBytes(byte[] bytes) {
    Objects.requireNonNull(bytes, "bytes");
    if (bytes.length != SIZE) {
      throw new WharfException(WharfException.Code.INVALID_ARGUMENT,
          "replica group id: an id is " + SIZE + " bytes, got " + bytes.length);
    }
    return new ReplicaGroupId(bytes.clone());
  }

  /**
   * The id's bytes, to send to the other ranks.
   *
   * @return a copy of the {@value #SIZE} bytes
   */
  public byte[] toBytes() {
    return bytes.clone();
  }

  /** The bytes, for the JNI layer (not copied: never written). */
  byte[] nativeBytes() {
    return bytes;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ReplicaGroupId && Arrays.equals(bytes, ((ReplicaGroupId) o).bytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bytes);
  }

  @Override
  public String toString() {
    StringBuilder s = new StringBuilder("ReplicaGroupId[");
    for (int i = 0; i < 8; i++) s.append(String.format("%02x", bytes[i] & 0xff));
    return s.append("..]").toString();
  }
}
