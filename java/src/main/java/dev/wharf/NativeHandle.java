// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.lang.ref.Cleaner;
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
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The lifecycle shared by every Wharf handle: one native object, freed exactly once.
 *
 * <p>Each operation holds a reference to the native object for its length (and the read
 * lock), and {@link #close()} marks the handle closed and frees the native object only once
 * no reference is left: at once when nothing uses it, else when the last operation in
 * progress (or the last dependent) lets go. <b>{@code close()} never waits</b>: a fold
 * callback running inside an update (which holds its container's reference) may close any
 * handle, that container included, and two threads whose folds close each other's
 * containers both finish (issue 23). Operations that start after {@code close()} throw
 * {@link IllegalStateException}. Operations that modify the native object and must not
 * overlap with readers (adding to a constant map) take the write lock instead of the read
 * lock; the lock orders operations only, never {@code close()}.
 *
 * <p>A handle created from others (a container from a runtime and a weight store, a run
 * from a container and a session, a session from a runtime and containers) registers as a
 * <em>dependent</em> of each of those parents. A parent's native object is freed only when
 * the parent has been closed and all its dependents have been freed, so closing a parent
 * first is safe whatever the native library does; the Java child also keeps strong
 * references to its parents, so the garbage collector cannot reclaim a parent in use.
 *
 * <p><b>Leaks.</b> A handle that becomes unreachable without {@code close()} is closed by a
 * {@link Cleaner} (a backstop, not a way to manage resources: an unclosed {@link Run} pins
 * its generation's memory until then), which logs the leak as a warning through the
 * {@link System.Logger} named {@code dev.wharf}. The cleaning action holds only the
 * handle's {@link Life} (native pointer, free function, parents' lives), never the handle.
 *
 * <p>Code that holds the locks of several handles at once takes them in creation order
 * (parents are always older than their dependents), so two such calls cannot deadlock with
 * each other: see {@link #withPointers}.
 *
 * @param <P> the SWIG type of the native pointer
 */
abstract class NativeHandle<P> implements AutoCloseable {
  private static final AtomicLong CREATED = new AtomicLong();
  static final System.Logger LOG = System.getLogger("dev.wharf");
  private static final Cleaner CLEANER = Cleaner.create();

  private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
  private final List<NativeHandle<?>> parents; // distinct, unmodifiable
  private final long creationOrder = CREATED.getAndIncrement();
  private final Life<P> life;
  private final Cleaner.Cleanable cleanable; // null for a handle nobody but the binding owns

  /**
   * The native object's state, apart from the Java handle (the Cleaner's action must not
   * reach the handle, or the handle would never become unreachable).
   */
  static final class Life<P> implements Runnable {
    private final Consumer<P> free; // null: nothing to free (the object belongs to someone else)
    private final List<Life<?>> parents;
    private volatile String name;   // for the leak's message
    private P pointer;              // guarded by this; null once freed
    private boolean closed;         // guarded by this
    private int refs;               // operations in progress + dependents; guarded by this

    Life(P pointer, Consumer<P> free, List<Life<?>> parents, String name) {
      this.pointer = pointer;
      this.free = free;
      this.parents = parents;
      this.name = name;
    }

    /** Begins an operation: the pointer, with a reference held until {@link #release()}. */
    synchronized P acquire(NativeHandle<?> handle) {
      if (closed) {
        throw new IllegalStateException(handle.describe() + " has been closed and cannot be used any more");
      }
      refs++;
      return pointer;
    }

    /** Counts a dependent; the caller holds a reference (an operation), so it is not freed. */
    synchronized void addDependent() {
      refs++;
    }

    /** Ends an operation, or a dependent is gone: frees the native object if it was the last user of a closed handle. */
    void release() {
      P toFree;
      synchronized (this) {
        refs--;
        if (refs != 0) return;
        notifyAll(); // closeAndWait
        if (!closed || pointer == null) return;
        toFree = pointer;
        pointer = null;
      }
      try {
        freeNow(toFree);
      } catch (RuntimeException | Error e) {
        LOG.log(System.Logger.Level.WARNING, "wharf: freeing " + name + " after its last user let go failed", e);
      }
    }

    synchronized boolean isClosed() {
      return closed;
    }

    /**
     * Marks the handle closed and frees the native object now if nothing uses it (throwing
     * what the free throws), else leaves that to the last user. Never waits.
     */
    void close() {
      P toFree;
      synchronized (this) {
        if (closed) return;
        closed = true;
        if (refs != 0) return;
        toFree = pointer;
        pointer = null;
      }
      freeNow(toFree);
    }

    /**
     * Marks the handle closed, waits until no operation uses it, then frees it: only for
     * objects someone else ends right afterwards (a fold's run), whose operations are
     * binding code that never waits for anything.
     */
    void closeAndWait() {
      P toFree;
      boolean interrupted = false;
      synchronized (this) {
        closed = true;
        while (refs != 0) {
          try {
            wait();
          } catch (InterruptedException e) {
            interrupted = true;
          }
        }
        toFree = pointer;
        pointer = null;
      }
      if (interrupted) Thread.currentThread().interrupt();
      if (toFree != null) freeNow(toFree);
    }

    private void freeNow(P toFree) {
      try {
        if (free != null) free.accept(toFree);
      } finally {
        releaseParents(0);
      }
    }

    /** Tells parents i.. that this dependent is gone, each even when an earlier one throws. */
    private void releaseParents(int i) {
      if (i == parents.size()) return;
      try {
        parents.get(i).release();
      } finally {
        releaseParents(i + 1);
      }
    }

    /** The Cleaner's action: the handle became unreachable (or close() unregistered it). */
    @Override
    public void run() {
      if (isClosed()) return;
      LOG.log(System.Logger.Level.WARNING, "wharf: " + name + " was garbage-collected without close(); closing it"
          + " now (close every Wharf handle explicitly, with try-with-resources)");
      try {
        close();
      } catch (RuntimeException | Error e) {
        LOG.log(System.Logger.Level.WARNING, "wharf: closing the leaked " + name + " failed", e);
      }
    }
  }

  /**
   * Takes ownership of {@code pointer}, freed with {@code free}, for a handle that depends
   * on no other. {@code free} must not refer to the handle (the leak backstop holds it);
   * null means the object is not the handle's to free, and then there is no backstop.
   */
  NativeHandle(P pointer, Consumer<P> free) {
    this(pointer, free, Collections.emptyList());
  }

  /**
   * As {@link #NativeHandle(Object, Consumer)}. When {@code parent} is not null, this handle
   * counts as its dependent; the caller must have created the native object while holding
   * a reference to the parent (inside {@link #withPointer}), so the parent is known to be
   * alive.
   */
  NativeHandle(P pointer, Consumer<P> free, NativeHandle<?> parent) {
    this(pointer, free, parent == null ? Collections.emptyList() : Collections.singletonList(parent));
  }

  /**
   * As {@link #NativeHandle(Object, Consumer)}, as a dependent of every handle of
   * {@code parents} (duplicates count once). Each parent must be known to be alive: used by
   * the caller (inside {@link #withPointer} or {@link #withPointers}), or a parent of a
   * handle the caller uses (a closed parent's native object lives while that handle does).
   */
  NativeHandle(P pointer, Consumer<P> free, List<? extends NativeHandle<?>> parents) {
    Objects.requireNonNull(pointer, "pointer");
    this.parents = Collections.unmodifiableList(distinct(parents));
    List<Life<?>> lives = new ArrayList<>(this.parents.size());
    for (NativeHandle<?> p : this.parents) lives.add(p.life);
    this.life = new Life<>(pointer, free, lives, getClass().getSimpleName());
    for (NativeHandle<?> p : this.parents) p.life.addDependent();
    this.cleanable = free == null ? null : CLEANER.register(this, life);
  }

  private static List<NativeHandle<?>> distinct(List<? extends NativeHandle<?>> handles) {
    Map<NativeHandle<?>, Boolean> seen = new IdentityHashMap<>();
    List<NativeHandle<?>> out = new ArrayList<>(handles.size());
    for (NativeHandle<?> h : handles) {
      if (seen.put(Objects.requireNonNull(h, "parent"), Boolean.TRUE) == null) out.add(h);
    }
    return out;
  }

  /** Names the handle in the leak backstop's message; call once the subclass can {@link #describe()}. */
  final void nameForLeaks() {
    life.name = describe();
  }

  /** The handles this one depends on (distinct, in the order given at construction). */
  final List<NativeHandle<?>> parents() {
    return parents;
  }

  /** What this handle is, for messages: "WharfRuntime", "Container 'model'", ... */
  abstract String describe();

  /** Runs {@code op} with the native pointer, a reference held and the read lock. */
  final <R> R withPointer(Function<P, R> op) {
    ReentrantReadWriteLock.ReadLock read = lock.readLock();
    read.lock();
    try {
      P p = life.acquire(this);
      try {
        return op.apply(p);
      } finally {
        life.release();
      }
    } finally {
      read.unlock();
      // The native object may borrow memory this Java object keeps reachable (a constant
      // map's buffers): keep it reachable until the native call has returned.
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Runs {@code op} with the native pointer and the write lock (no other operation runs).
   *
   * @throws IllegalStateException when the calling thread is itself using this handle (a
   *     fold callback of an update that reads it): waiting would never end
   */
  final <R> R withPointerExclusive(Function<P, R> op) {
    if (lock.getReadHoldCount() > 0) {
      throw new IllegalStateException(describe() + " cannot be modified by a thread that is using it"
          + " (from a fold callback of an update that reads it, for example)");
    }
    ReentrantReadWriteLock.WriteLock write = lock.writeLock();
    write.lock();
    try {
      P p = life.acquire(this);
      try {
        return op.apply(p);
      } finally {
        life.release();
      }
    } finally {
      write.unlock();
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Runs {@code op} while holding the read locks (and references) of every handle of
   * {@code handles} (each open, else {@link IllegalStateException} naming the first closed
   * one), taken in creation order so that concurrent multi-handle calls cannot deadlock.
   * {@code op} reads the pointers it needs with {@link #pointerWhileLocked()}.
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
   * handle's read lock (and so a reference: the object is not freed, even if it was closed
   * meanwhile).
   */
  final P pointerWhileLocked() {
    if (lock.getReadHoldCount() == 0 && !lock.isWriteLockedByCurrentThread()) {
      throw new IllegalStateException(describe() + ": pointer read without holding its lock");
    }
    P p = life.acquire(this);
    life.release(); // the caller's own reference keeps it
    return p;
  }

  /**
   * Whether {@link #close()} has been called.
   *
   * @return true once this handle has been closed
   */
  public final boolean isClosed() {
    return life.isClosed();
  }

  /**
   * Releases this handle. The native object is freed now, or, while operations on other
   * threads are in progress or handles created from this one are still open, by the last of
   * them; {@code close()} itself never waits. Closing again is a no-op.
   */
  @Override
  public void close() {
    try {
      life.close();
    } finally {
      if (cleanable != null) cleanable.clean(); // closed: the backstop only unregisters
    }
  }

  /**
   * Closes this handle and waits for operations in progress on other threads: for a
   * handle whose native object its owner ends right after (a fold's run).
   */
  final void closeAndWait() {
    life.closeAndWait();
  }
}
