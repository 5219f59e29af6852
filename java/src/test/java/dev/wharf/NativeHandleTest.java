// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.Test;

/**
 * The lifecycle every handle shares, on a fake native object that records its frees: freed
 * exactly once, parents freed after their dependents, close never waits for calls in progress.
 */
public class NativeHandleTest {
  private final List<String> freed = Collections.synchronizedList(new ArrayList<>());

  private final class Fake extends NativeHandle<String> {
    Fake(String name, Fake parent) {
      this(name, parent, null);
    }

    Fake(String name, Fake parent, RuntimeException failOnFree) {
      super(name, recorder(freed, failOnFree), parent);
    }

    /** A dependent of several parents; the caller holds their locks (withPointers). */
    Fake(List<Fake> parents, String name) {
      super(name, recorder(freed, null), parents);
    }

    /** Creates a dependent the way the API classes do: under this handle's lock. */
    Fake child(String name) {
      return withPointer(p -> new Fake(name, this));
    }

    @Override
    String describe() {
      return "Fake";
    }
  }

  /** A free function that records the pointer in {@code freed} (and then throws {@code failOnFree}). */
  private static Consumer<String> recorder(List<String> freed, RuntimeException failOnFree) {
    return pointer -> {
      freed.add(pointer);
      if (failOnFree != null) throw failOnFree;
    };
  }

  @Test
  public void closeFreesExactlyOnce() {
    Fake h = new Fake("h", null);
    assertEquals("h", h.withPointer(p -> p));
    h.close();
    h.close();
    assertEquals(Arrays.asList("h"), freed);
    assertTrue(h.isClosed());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> h.withPointer(p -> p));
    assertEquals("Fake has been closed and cannot be used any more", e.getMessage());
    assertThrows(IllegalStateException.class, () -> h.withPointerExclusive(p -> p));
  }

  @Test
  public void parentClosedFirstIsFreedAfterItsLastDependent() {
    Fake runtime = new Fake("runtime", null);
    Fake container = runtime.child("container");
    Fake run1 = container.child("run1");
    Fake run2 = container.child("run2");
    runtime.close();
    container.close();
    assertTrue(freed.isEmpty());
    assertThrows(IllegalStateException.class, () -> runtime.withPointer(p -> p));
    assertThrows(IllegalStateException.class, () -> container.withPointer(p -> p));
    assertEquals("run1", run1.withPointer(p -> p)); // dependents keep working
    run1.close();
    assertEquals(Arrays.asList("run1"), freed);
    run2.close();
    assertEquals(Arrays.asList("run1", "run2", "container", "runtime"), freed);
    runtime.close();
    container.close();
    run2.close();
    assertEquals(4, freed.size());
  }

  @Test
  public void openParentIsNotFreedByItsDependents() {
    Fake container = new Fake("container", null);
    container.child("run").close();
    assertEquals(Arrays.asList("run"), freed);
    assertFalse(container.isClosed());
    container.close();
    assertEquals(Arrays.asList("run", "container"), freed);
  }

  @Test
  public void failingFreeStillClosesAndReleasesTheParent() {
    Fake container = new Fake("container", null);
    Fake run = container.withPointer(p -> new Fake("run", container, new WharfException(
        WharfException.Code.DEVICE_ERROR, "recording failed")));
    container.close();
    WharfException e = assertThrows(WharfException.class, run::close);
    assertEquals(WharfException.Code.DEVICE_ERROR, e.code());
    assertTrue(run.isClosed());
    run.close(); // no second free, no second exception
    assertEquals(Arrays.asList("run", "container"), freed);
  }

  /**
   * close() never waits: the handle is closed at once (new calls throw), and the native
   * object is freed by the last call in progress when it returns.
   */
  @Test
  public void closeNeverWaitsTheLastCallInProgressFrees() throws Exception {
    Fake h = new Fake("h", null);
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Thread user = new Thread(() -> h.withPointer(p -> {
      inside.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return p;
    }));
    user.start();
    assertTrue(inside.await(10, TimeUnit.SECONDS));
    h.close(); // returns at once
    assertTrue(h.isClosed());
    assertThrows(IllegalStateException.class, () -> h.withPointer(p -> p));
    assertTrue("freed under a call in progress", freed.isEmpty());
    release.countDown();
    user.join(10_000);
    assertFalse(user.isAlive());
    assertEquals(Arrays.asList("h"), freed);
  }

  /** A handle closed inside its own call (a fold closing its container) is freed when the call returns. */
  @Test
  public void closeInsideOwnCallIsFreedWhenTheCallReturns() {
    Fake h = new Fake("h", null);
    h.withPointer(p -> {
      h.close();
      assertTrue(freed.isEmpty());
      return p;
    });
    assertEquals(Arrays.asList("h"), freed);
  }

  /** closeAndWait (a fold's run) waits for the calls other threads have in progress. */
  @Test
  public void closeAndWaitWaitsForCallsInProgress() throws Exception {
    Fake h = new Fake("h", null);
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Thread user = new Thread(() -> h.withPointer(p -> {
      inside.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return p;
    }));
    user.start();
    assertTrue(inside.await(10, TimeUnit.SECONDS));
    Thread closer = new Thread(h::closeAndWait);
    closer.start();
    closer.join(200);
    assertTrue("closeAndWait() returned while a call was in progress", closer.isAlive());
    assertTrue(freed.isEmpty());
    release.countDown();
    closer.join(10_000);
    user.join(10_000);
    assertFalse(closer.isAlive());
    assertEquals(Arrays.asList("h"), freed);
  }

  @Test
  public void dependentOfSeveralParentsHoldsEachUntilItIsFreed() {
    Fake runtime = new Fake("runtime", null);
    Fake store = runtime.child("store");
    List<Fake> containerParents = Arrays.asList(runtime, store, runtime); // duplicates count once
    Fake container = NativeHandle.withPointers(containerParents, () -> new Fake(containerParents, "container"));
    assertEquals(2, container.parents().size());
    List<Fake> sessionParents = Arrays.asList(container, runtime);
    Fake session = NativeHandle.withPointers(sessionParents, () -> new Fake(sessionParents, "session"));
    List<Fake> runParents = Arrays.asList(container, session);
    Fake run = NativeHandle.withPointers(runParents, () -> new Fake(runParents, "run"));
    runtime.close();
    store.close();
    container.close();
    session.close();
    assertTrue(freed.isEmpty());
    run.close();
    assertEquals(Arrays.asList("run", "session", "container", "store", "runtime"), freed);
  }

  @Test
  public void withPointersHoldsEveryLockAndRefusesClosedHandles() {
    Fake a = new Fake("a", null);
    Fake b = new Fake("b", null);
    assertEquals("ba", NativeHandle.withPointers(Arrays.asList(b, a),
        () -> b.pointerWhileLocked() + a.pointerWhileLocked()));
    IllegalStateException unlocked = assertThrows(IllegalStateException.class, a::pointerWhileLocked);
    assertTrue(unlocked.getMessage(), unlocked.getMessage().contains("without holding its lock"));
    b.close();
    assertThrows(IllegalStateException.class, () -> NativeHandle.withPointers(Arrays.asList(a, b), () -> "x"));
    a.close();
    assertEquals(Arrays.asList("b", "a"), freed);
  }

  @Test
  public void withPointersLocksInCreationOrder() throws Exception {
    Fake older = new Fake("older", null);
    Fake newer = new Fake("newer", null);
    CountDownLatch newerLocked = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Thread holder = new Thread(() -> newer.withPointerExclusive(p -> {
      newerLocked.countDown();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return p;
    }));
    holder.start();
    assertTrue(newerLocked.await(10, TimeUnit.SECONDS));
    // Named newer first, but the older lock is taken first: the call holds it while it
    // waits for the newer one.
    Thread both = new Thread(() -> NativeHandle.withPointers(Arrays.asList(newer, older), () -> null));
    both.start();
    Thread writer = new Thread(() -> older.withPointerExclusive(p -> p));
    Thread.sleep(100);
    writer.start();
    writer.join(200);
    assertTrue("the older handle's lock was not held while waiting for the newer one", writer.isAlive());
    release.countDown();
    holder.join(10_000);
    both.join(10_000);
    writer.join(10_000);
    assertFalse(both.isAlive());
    assertFalse(writer.isAlive());
    older.close();
    newer.close();
  }
}
