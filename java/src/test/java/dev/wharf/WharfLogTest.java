// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * Issue 23, "logging lands where each ecosystem looks": the library's log lines reach the
 * System.Logger "dev.wharf" (here through java.util.logging, the JDK's default backend).
 */
public class WharfLogTest {
  private final List<LogRecord> records = Collections.synchronizedList(new ArrayList<>());
  private final Logger logger = Logger.getLogger("dev.wharf"); // held: JUL keeps loggers weakly
  private Level previous;
  private final Handler handler = new Handler() {
    @Override
    public void publish(LogRecord record) {
      records.add(record);
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  };

  @Before
  public void capture() {
    previous = logger.getLevel();
    logger.setLevel(Level.ALL);
    logger.addHandler(handler);
    logger.setUseParentHandlers(false);
  }

  @After
  public void restore() {
    Wharf.logToStderr();
    logger.removeHandler(handler);
    logger.setUseParentHandlers(true);
    logger.setLevel(previous);
  }

  /** The messages of the records at {@code level} that contain {@code fragment}. */
  private List<String> seen(Level level, String fragment) {
    List<String> out = new ArrayList<>();
    synchronized (records) {
      for (LogRecord r : records) {
        if (r.getLevel().equals(level) && r.getMessage().contains(fragment)) out.add(r.getMessage());
      }
    }
    return out;
  }

  @Test
  public void libraryLinesReachTheSystemLoggerAtTheirLevel() {
    Wharf.logToSystemLogger(System.Logger.Level.DEBUG);
    try (WharfRuntime runtime = TestSupport.hostRuntime();
         ConstantMap weights = ConstantMap.create()) {
      weights.put("w", new float[] {1f, 2f}, 2);
      try (Container c = Container.fromMap(runtime, weights, "logged")) {
        c.update(weights); // logs its phase timings at debug, as the load did
      }
      // System.Logger DEBUG is java.util.logging FINE.
      List<String> lines = seen(Level.FINE, "container 'logged': update of 1 constants");
      assertEquals(lines.toString(), 2, lines.size());

      // Below the minimum level: nothing; after logToStderr: nothing.
      Wharf.logToSystemLogger(System.Logger.Level.INFO);
      try (Container c = Container.fromMap(runtime, weights, "quiet")) {
        c.update(weights);
      }
      Wharf.logToStderr();
      Wharf.logToSystemLogger(System.Logger.Level.DEBUG);
      Wharf.logToStderr();
      try (Container c = Container.fromMap(runtime, weights, "stderr")) {
        c.update(weights);
      }
      assertTrue(seen(Level.FINE, "'quiet'").isEmpty());
      assertTrue(seen(Level.FINE, "'stderr'").isEmpty());
    }
  }

  @Test
  public void levelsMapBothWays() {
    assertEquals(System.Logger.Level.DEBUG, WharfLog.level(0));
    assertEquals(System.Logger.Level.INFO, WharfLog.level(1));
    assertEquals(System.Logger.Level.WARNING, WharfLog.level(2));
    assertEquals(System.Logger.Level.ERROR, WharfLog.level(3));
    assertEquals(0, WharfLog.wharfLevel(System.Logger.Level.ALL));
    assertEquals(0, WharfLog.wharfLevel(System.Logger.Level.TRACE));
    assertEquals(1, WharfLog.wharfLevel(System.Logger.Level.INFO));
    assertEquals(2, WharfLog.wharfLevel(System.Logger.Level.WARNING));
    assertEquals(3, WharfLog.wharfLevel(System.Logger.Level.ERROR));
    assertEquals(4, WharfLog.wharfLevel(System.Logger.Level.OFF));
  }
}
