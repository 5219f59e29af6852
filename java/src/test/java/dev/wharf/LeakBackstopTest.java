// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Issue 23, defect 7: a handle that becomes unreachable without close() is closed by a
 * Cleaner, which logs the leak (System.Logger "dev.wharf", here through java.util.logging).
 * Before, a forgotten Run pinned its generation for as long as the container lived.
 */
public class LeakBackstopTest {
  private final List<String> warnings = Collections.synchronizedList(new ArrayList<>());
  private final Handler handler = new Handler() {
    @Override
    public void publish(LogRecord record) {
      warnings.add(record.getMessage());
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  private final Logger logger = Logger.getLogger("dev.wharf"); // held: JUL keeps loggers weakly

  @Before
  public void capture() {
    logger.addHandler(handler);
    logger.setUseParentHandlers(false); // the expected warnings stay out of the test log
  }

  @After
  public void release() {
    logger.removeHandler(handler);
    logger.setUseParentHandlers(true);
  }

  private boolean logged(String fragment) {
    synchronized (warnings) {
      for (String w : warnings) {
        if (w.contains(fragment)) return true;
      }
    }
    return false;
  }

  /** Collects garbage until {@code fragment} was logged (at most about 10 s). */
  private boolean collectUntilLogged(String fragment) throws InterruptedException {
    for (int i = 0; i < 200 && !logged(fragment); i++) {
      System.gc();
      Thread.sleep(50);
    }
    return logged(fragment);
  }

  /** Begins a run and drops it without closing it. */
  private static void forgetARun(Container c) {
    c.beginRun();
  }

  @Test
  public void aForgottenRunIsEndedAndItsGenerationReclaimed() throws Exception {
    int n = 1 << 18; // 1 MiB of F32
    long bytes = 4L * n;
    try (WharfRuntime runtime = TestSupport.hostRuntime();
         ConstantMap weights = ConstantMap.create()) {
      weights.put("w", TestSupport.iota(n, 0f), n);
      try (Container c = Container.fromMap(runtime, weights, "leaky")) {
        forgetARun(c);
        for (int i = 0; i < 3; i++) { // the forgotten run's generation is neither active nor inactive
          c.update(weights);
          c.swap();
        }
        c.freeInactive();
        runtime.synchronize();
        assertEquals("the forgotten run pins its generation", 2 * bytes,
            runtime.memoryStats().current(MemoryTag.CONSTANTS));
        assertTrue("no leak was logged: " + warnings,
            collectUntilLogged("Run of Container 'leaky' (generation 1) was garbage-collected without close()"));
        runtime.synchronize();
        c.freeInactive(); // reclaims what ended runs released
        assertEquals("the generation of the forgotten run was not reclaimed", bytes,
            runtime.memoryStats().current(MemoryTag.CONSTANTS));
      }
    }
  }

  /** A runtime, a container and a run, none of them closed (locals of a frame that ends). */
  private static void forgetEverything() {
    WharfRuntime runtime = TestSupport.hostRuntime();
    try (ConstantMap weights = ConstantMap.create()) {
      weights.put("w", new float[] {1f}, 1);
      Container c = Container.fromMap(runtime, weights, "forgotten");
      c.beginRun();
    }
  }

  @Test
  public void forgottenParentsAndChildrenAreAllFreed() throws Exception {
    forgetEverything(); // nothing refers to the runtime, the container or the run any more
    assertTrue("no leak was logged: " + warnings, collectUntilLogged("WharfRuntime was garbage-collected"));
    assertTrue(collectUntilLogged("Container 'forgotten' was garbage-collected"));
    assertTrue(collectUntilLogged("Run of Container 'forgotten'"));
  }

  @Test
  public void closedHandlesAreNotReported() throws Exception {
    try (WharfRuntime runtime = TestSupport.hostRuntime();
         ConstantMap weights = ConstantMap.create()) {
      weights.put("w", new float[] {1f}, 1);
      try (Container c = Container.fromMap(runtime, weights, "tidy")) {
        c.beginRun().close();
      }
    }
    for (int i = 0; i < 10; i++) {
      System.gc();
      Thread.sleep(20);
    }
    assertTrue("closed handles were reported: " + warnings, !logged("tidy"));
  }
}
