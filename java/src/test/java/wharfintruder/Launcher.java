// SPDX-License-Identifier: Apache-2.0
package wharfintruder;

/**
 * Run by {@code dev.wharf.SealingTest} in a child JVM whose class path is the binding's jar
 * followed by the test classes: it uses the public API (so package dev.wharf is defined from
 * the jar), then loads {@code dev.wharf.SealingIntruder}, a class declared in dev.wharf in
 * another class path entry. A sealed jar makes the class loader refuse it; without the seal,
 * the intruder reaches the package-private JNI layer and ends a run twice.
 */
public final class Launcher {
  private Launcher() {}

  public static void main(String[] args) throws Exception {
    System.out.println("binding " + dev.wharf.Wharf.version());
    try {
      Class.forName("dev.wharf.SealingIntruder").getMethod("main", String[].class).invoke(null, (Object) args);
      System.out.println("the intruder ran");
    } catch (SecurityException refused) {
      System.out.println("OK refused: " + refused);
    }
  }
}
