// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs a reproducer in a child JVM, so that a crash (SIGSEGV in native code) or a deadlock
 * fails the test instead of ending or hanging the whole suite.
 */
final class ChildJvm {
  private ChildJvm() {}

  /** What a child printed and how it ended. */
  static final class Result {
    final int exitCode; // -1 when it was killed after the timeout
    final String output;

    Result(int exitCode, String output) {
      this.exitCode = exitCode;
      this.output = output;
    }

    /**
     * Asserts that the child exited with 0, printed {@code "OK " + what}, and that
     * -Xcheck:jni reported no JNI misuse (java/test.sh checks the same in the main JVM).
     */
    void assertOk(String what) {
      assertTrue("the child JVM (" + what + ") failed with exit code " + exitCode + ":\n" + output,
          exitCode == 0 && output.contains("OK " + what));
      assertTrue("-Xcheck:jni reported JNI misuse in the child JVM (" + what + "):\n" + output,
          !output.contains("WARNING in native method") && !output.contains("WARNING: JNI local refs"));
    }
  }

  /**
   * Runs {@code mainClass} with {@code args} in a JVM of the same installation, with
   * {@code classPath} (null: this JVM's class path), -Xcheck:jni and -ea, waiting at most
   * {@code timeoutSeconds}.
   */
  static Result run(String classPath, String mainClass, long timeoutSeconds, String... args)
      throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(Arrays.asList(
        Paths.get(System.getProperty("java.home"), "bin", "java").toString(), "-ea", "-Xcheck:jni",
        "-XX:ErrorFile=" + Paths.get(System.getProperty("java.io.tmpdir"), "wharf-child-hs_err_%p.log"), "-cp",
        classPath == null ? System.getProperty("java.class.path") : classPath, mainClass));
    command.addAll(Arrays.asList(args));
    Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    Thread reader = new Thread(() -> {
      try (InputStream in = child.getInputStream()) {
        in.transferTo(out);
      } catch (IOException ignored) {
        // the child is gone; what was read is kept
      }
    });
    reader.start();
    int exit = -1;
    if (child.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      exit = child.exitValue();
    } else {
      child.destroyForcibly();
      child.waitFor();
    }
    reader.join();
    return new Result(exit, out.toString(StandardCharsets.UTF_8));
  }
}
