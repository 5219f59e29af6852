// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import java.util.ArrayList;
import java.util.List;
import org.junit.runner.Description;
import org.junit.runner.JUnitCore;
import org.junit.runner.notification.Failure;
import org.junit.runner.notification.RunListener;

/**
 * Runs the named JUnit 4 test classes, prints each failure, and ends with the line
 * "N passed, N failed". Exits with status 1 when a test failed, a class could not be
 * loaded, or no test ran at all.
 */
public final class TestMain {
  private TestMain() {}

  /** Counts tests that finished with and without failures. */
  private static final class Counter extends RunListener {
    int passed;
    int failed;
    int skipped;
    private boolean currentFailed;

    @Override
    public void testStarted(Description description) {
      currentFailed = false;
    }

    @Override
    public void testFailure(Failure failure) {
      failed++;
      currentFailed = true;
      System.out.println("FAIL " + failure.getTestHeader());
      System.out.print(trimmedTrace(failure.getTrace()));
    }

    @Override
    public void testAssumptionFailure(Failure failure) {
      skipped++;
      currentFailed = true;
      System.out.println("SKIP " + failure.getTestHeader() + ": " + failure.getMessage());
    }

    @Override
    public void testIgnored(Description description) {
      skipped++;
      System.out.println("SKIP " + description.getDisplayName() + " (@Ignore)");
    }

    @Override
    public void testFinished(Description description) {
      if (!currentFailed) passed++;
    }
  }

  /** A stack trace without the frames of reflection and JUnit's runners. */
  static String trimmedTrace(String trace) {
    StringBuilder out = new StringBuilder();
    for (String line : trace.split("\n")) {
      String frame = line.trim();
      if (frame.startsWith("at org.junit.") || frame.startsWith("at java.base/jdk.internal.reflect.")
          || frame.startsWith("at java.base/java.lang.reflect.") || frame.startsWith("at dev.wharf.TestMain.")) {
        continue;
      }
      out.append(line).append('\n');
    }
    return out.toString();
  }

  /**
   * Runs the tests.
   *
   * @param args fully qualified names of the test classes
   */
  public static void main(String[] args) {
    int loadFailures = 0;
    List<Class<?>> classes = new ArrayList<>();
    for (String name : args) {
      try {
        classes.add(Class.forName(name));
      } catch (ClassNotFoundException | LinkageError e) {
        loadFailures++;
        System.out.println("FAIL cannot load test class " + name + ": " + e);
      }
    }
    Counter counter = new Counter();
    JUnitCore core = new JUnitCore();
    core.addListener(counter);
    core.run(classes.toArray(new Class<?>[0]));

    int failed = counter.failed + loadFailures;
    if (counter.skipped > 0) System.out.println(counter.skipped + " skipped");
    if (counter.passed + failed == 0) {
      System.out.println("no tests ran");
      failed = 1;
    }
    System.out.println(counter.passed + " passed, " + failed + " failed");
    System.exit(failed == 0 ? 0 : 1);
  }
}
