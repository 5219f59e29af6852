// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The lifecycle shared by every Wharf handle: one native object, freed exactly once.
 *
 * <p>Each operation runs under the read lock with the native pointer, and {@link #close()}
 * takes the write lock, so a handle closed by one thread while another uses it is never
 * freed under that thread's feet: {@code close()} waits for operations in progress, and
 * operations that start afterwards throw {@link IllegalStateException}. Operations that
 * modify the native object and must not overlap with readers (adding to a constant map)
 * take the write lock instead.
 *
 * <p>A handle created from others (a container from a runtime and a weight store, a run
 * from a container and a session, a session from a runtime and containers) registers as a
 * <em>dependent</em> of each of those parents. A parent's native object is freed only when
 * the parent has been closed and all its dependents have been freed, so closing a parent
 * first is safe whatever the native library does; the Java child also keeps strong
 * references to its parents, so the garbage collector cannot reclaim a parent in use. There
 * is no finalizer or cleaner: handles are released by {@code close()} only.
 *
 * <p>Code that holds the locks of several handles at once takes them in creation order
 * (parents are always older than their dependents), so two such calls cannot deadlock with
 * each other or with a {@code close()}: see {@link #withPointers}.
 *
 * @param <P> the SWIG type of the native pointer
 */
abstract class NativeHandle<P> implements AutoCloseable {
  private static final AtomicLong CREATED = new AtomicLong();

  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final List<NativeHandle<?>> parents; // distinct, unmodifiable
  private final long creationOrder = CREATED.getAndIncrement();
  private P pointer;      // written under synchronized(this) (and the write lock, or once closed); null once freed
  private boolean closed; // written under the write lock and synchronized(this)
  private int dependents; // guarded by synchronized(this)

  /** Takes ownership of {@code pointer}, for a handle that depends on no other. */
  NativeHandle(P pointer) {
    this(pointer, Collections.emptyList());
  }

  /**
   * Takes ownership of {@code pointer}. When {@code parent} is not null, this handle counts as
   * its dependent; the caller must have created the native object while holding the
   * parent's lock (inside {@link #withPointer}), so the parent is known to be alive.
   */
  NativeHandle(P pointer, NativeHandle<?> parent) {
    this(pointer, parent == null ? Collections.emptyList() : Collections.singletonList(parent));
  }

  /**
   * Takes ownership of {@code pointer}, as a dependent of every handle of {@code parents}
   * (duplicates count once). Each parent must be known to be alive: its lock held by the
   * caller (inside {@link #withPointer} or {@link #withPointers}), or it is a parent of a
   * handle whose lock the caller holds (a closed parent's native object lives while that
   * handle does).
   */
  NativeHandle(P pointer, List<? extends NativeHandle<?>> parents) {
    this.pointer = Objects.requireNonNull(pointer, "pointer");
    this.parents = Collections.unmodifiableList(distinct(parents));
    for (NativeHandle<?> p : this.parents) p.addDependent();
  }

  private static List<NativeHandle<?>> distinct(List<? extends NativeHandle<?>> handles) {
    Map<NativeHandle<?>, Boolean> seen = new IdentityHashMap<>();
    List<NativeHandle<?>> out = new ArrayList<>(handles.size());
    for (NativeHandle<?> h : handles) {
      if (seen.put(Objects.requireNonNull(h, "parent"), Boolean.TRUE) == null) out.add(h);
    }
    return out;
  }

  /** The handles this one depends on (distinct, in the order given at construction). */
  final List<NativeHandle<?>> parents() {
    return parents;
  }

  /** What this handle is, for messages: "WharfRuntime", "Container 'model'", ... */
  abstract String describe();

  /** Frees the native object. Called exactly once, without any lock held. */
  abstract void free(P pointer);

  /** Runs {@code op} with the native pointer under the read lock. */
  final <R> R withPointer(Function<P, R> op) {
    ReentrantReadWriteLock.ReadLock read = lock.readLock();
    read.lock();
    try {
      return op.apply(openPointer());
    } finally {
      read.unlock();
      // The native object may borrow memory this Java object keeps reachable (a constant
      // map's buffers): keep it reachable until the native call has returned.
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Runs {@code op} with the native pointer under the write lock (no other operation runs).
   *
   * @throws IllegalStateException when the calling thread is itself using this handle (a
   *     fold callback of an update that reads it): waiting would never end
   */
  final <R> R withPointerExclusive(Function<P, R> op) {
    refuseUpgrade("modified");
    ReentrantReadWriteLock.WriteLock write = lock.writeLock();
    write.lock();
    try {
      return op.apply(openPointer());
    } finally {
      write.unlock();
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Runs {@code op} while holding the read locks of every handle of {@code handles} (each
   * open, else {@link IllegalStateException} naming the first closed one), taken in creation
   * order so that concurrent multi-handle calls cannot deadlock. {@code op} reads the
   * pointers it needs with {@link #pointerWhileLocked()}.
   */
  static <R> R withPointers(List<? extends NativeHandle<?>> handles, Supplier<R> op) {
    List<NativeHandle<?>> ordered = distinct(handles);
    ordered.sort(Comparator.comparingLong(h -> h.creationOrder));
    return lockFrom(ordered, 0, op);
  }

  private static <R> R lockFrom(List<NativeHandle<?>> ordered, int i, Supplier<R> op) {
    if (i == ordered.size()) return op.get();
    return ordered.get(i).withPointer(p -> lockFrom(ordered, i + 1, op));
  }

  /**
   * The native pointer, for code running inside {@link #withPointers} that holds this
   * handle's read lock.
   */
  final P pointerWhileLocked() {
    if (lock.getReadHoldCount() == 0 && !lock.isWriteLockedByCurrentThread()) {
      throw new IllegalStateException(describe() + ": pointer read without holding its lock");
    }
    return openPointer();
  }

  private P openPointer() {
    if (closed) {
      throw new IllegalStateException(describe() + " has been closed and cannot be used any more");
    }
    return pointer;
  }

  /**
   * Whether {@link #close()} has been called.
   *
   * @return true once this handle has been closed
   */
  public final boolean isClosed() {
    ReentrantReadWriteLock.ReadLock read = lock.readLock();
    read.lock();
    try {
      return closed;
    } finally {
      read.unlock();
    }
  }

  /**
   * Releases this handle. The native object is freed now, or, while handles created from
   * this one are still open, as soon as the last of them is closed. Waits for operations
   * that other threads have in progress on this handle. Closing again is a no-op.
   */
  @Override
  public void close() {
    P toFree = null;
    refuseUpgrade("closed");
    ReentrantReadWriteLock.WriteLock write = lock.writeLock();
    write.lock();
    try {
      if (closed) return;
      synchronized (this) { // a fork registers with closed parents without their lock
        closed = true;
        if (dependents == 0) {
          toFree = pointer;
          pointer = null;
        }
      }
    } finally {
      write.unlock();
    }
    if (toFree != null) freeAndReleaseParent(toFree);
  }

  private void addDependent() {
    // Called while the caller holds this handle's read lock (the child is being created
    // inside withPointer), so close() cannot run; other creators may run concurrently. Or
    // called for a parent of a handle whose lock the caller holds (Session.fork): that
    // handle is a dependent too, so the count is above zero and stays so.
    synchronized (this) {
      dependents++;
    }
  }

  private void dependentFreed() {
    // No lock: once closed is set (under the write lock), no operation reads the pointer any
    // more (they throw before), so the last dependent may free it without waiting for
    // readers. Not taking the write lock matters: the thread freeing a dependent may hold
    // this handle's read lock (a run closed inside a fold callback of its container's update).
    P toFree = null;
    synchronized (this) {
      dependents--;
      if (dependents == 0 && closed && pointer != null) {
        toFree = pointer;
        pointer = null;
      }
    }
    if (toFree != null) freeAndReleaseParent(toFree);
  }

  /**
   * Throws when the calling thread holds this handle's read lock, instead of waiting for the
   * write lock forever (a read lock cannot be upgraded).
   */
  private void refuseUpgrade(String what) {
    if (lock.getReadHoldCount() > 0) {
      throw new IllegalStateException(describe() + " cannot be " + what + " by a thread that is using it"
          + " (from a fold callback of an update that reads it, for example)");
    }
  }

  private void freeAndReleaseParent(P toFree) {
    try {
      free(toFree);
    } finally {
      releaseParents(0);
    }
  }

  /** Tells parents i.. that this dependent is gone, each even when an earlier one throws. */
  private void releaseParents(int i) {
    if (i == parents.size()) return;
    try {
      parents.get(i).dependentFreed();
    } finally {
      releaseParents(i + 1);
    }
  }
}
