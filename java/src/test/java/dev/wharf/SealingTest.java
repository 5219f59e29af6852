// SPDX-License-Identifier: Apache-2.0
package dev.wharf;

import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import org.junit.Test;

/**
 * Issue 23, defect 8: the jar seals package dev.wharf, so a class declared in that package
 * elsewhere cannot reach the package-private JNI layer; and the JNI layer frees a handle at
 * most once through one proxy anyway. Both run in child JVMs (a double end crashed the JVM).
 */
public class SealingTest {
  @Test
  public void aClassPlantedInThePackageIsRefusedBySealing() throws Exception {
    String jar = System.getProperty("wharf.test.sealedJar");
    String classes = System.getProperty("wharf.test.classes");
    assertNotNull("java/test.sh passes -Dwharf.test.sealedJar", jar);
    assertNotNull("java/test.sh passes -Dwharf.test.classes", classes);
    ChildJvm.Result r = ChildJvm.run(jar + java.io.File.pathSeparator + classes, "wharfintruder.Launcher", 60);
    r.assertOk("refused");
    assertTrue(r.output, r.output.contains("sealing violation"));
  }

  @Test
  public void endingARunTwiceThroughTheJniLayerEndsItOnce() throws Exception {
    ChildJvm.run(null, "dev.wharf.SealingIntruder", 60).assertOk("ended a run twice");
  }
}
