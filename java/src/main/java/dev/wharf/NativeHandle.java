package dev.wharf;

import java.lang.ref.Reference;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;

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
 * <p>A handle created from another one (a container from a runtime, a run from a
 * container) registers as a <em>dependent</em> of that parent. The parent's native object
 * is freed only when the parent has been closed and all its dependents have been freed, so
 * closing a parent first is safe whatever the native library does; the Java child also
 * keeps a strong reference to its parent, so the garbage collector cannot reclaim a parent
 * in use. There is no finalizer or cleaner: handles are released by {@code close()} only.
 *
 * @param <P> the SWIG type of the native pointer
 */
abstract class NativeHandle<P> implements AutoCloseable {
  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final NativeHandle<?> parent;
  private P pointer;      // guarded by lock; null once the native object has been freed
  private boolean closed; // guarded by lock
  private int dependents; // guarded by lock (read lock + synchronized(this), or write lock)

  /**
   * Takes ownership of {@code pointer}. When {@code parent} is not null, this handle counts as
   * its dependent; the caller must have created the native object while holding the
   * parent's lock (inside {@link #withPointer}), so the parent is known to be alive.
   */
  NativeHandle(P pointer, NativeHandle<?> parent) {
    this.pointer = Objects.requireNonNull(pointer, "pointer");
    this.parent = parent;
    if (parent != null) parent.addDependent();
  }

  /** What this handle is, for messages: "Runtime", "Container 'model'", ... */
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

  /** Runs {@code op} with the native pointer under the write lock (no other operation runs). */
  final <R> R withPointerExclusive(Function<P, R> op) {
    ReentrantReadWriteLock.WriteLock write = lock.writeLock();
    write.lock();
    try {
      return op.apply(openPointer());
    } finally {
      write.unlock();
      Reference.reachabilityFence(this);
    }
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
    ReentrantReadWriteLock.WriteLock write = lock.writeLock();
    write.lock();
    try {
      if (closed) return;
      closed = true;
      if (dependents == 0) {
        toFree = pointer;
        pointer = null;
      }
    } finally {
      write.unlock();
    }
    if (toFree != null) freeAndReleaseParent(toFree);
  }

  private void addDependent() {
    // Called while the caller holds this handle's read lock (the child is being created
    // inside withPointer), so close() cannot run; other creators may run concurrently.
    synchronized (this) {
      dependents++;
    }
  }

  private void dependentFreed() {
    P toFree = null;
    ReentrantReadWriteLock.WriteLock write = lock.writeLock();
    write.lock();
    try {
      synchronized (this) {
        dependents--;
        if (dependents == 0 && closed && pointer != null) {
          toFree = pointer;
          pointer = null;
        }
      }
    } finally {
      write.unlock();
    }
    if (toFree != null) freeAndReleaseParent(toFree);
  }

  private void freeAndReleaseParent(P toFree) {
    try {
      free(toFree);
    } finally {
      if (parent != null) parent.dependentFreed();
    }
  }
}
