// SPDX-License-Identifier: Apache-2.0
// A Java program outside the Wharf tree, built and run by java/test.sh with nothing but the
// jar on its class path: it writes a safetensors file, loads it into a container, reads a
// weight in a run, updates it from a Java array, swaps, and checks what runs see.
import dev.wharf.*;
import java.nio.file.Path;

public class ConsumerApp {
  public static void main(String[] args) {
    Path file = Path.of(args[0]);
    try (ConstantMap weights = ConstantMap.create()) {
      weights.put("layers.0.weight", new float[] {1f, 2f, 3f, 4f}, 2, 2);
      weights.put("layers.0.bias", new float[] {0.5f, -0.5f}, 2);
      weights.save(file);
    }
    System.out.println("loaded from " + Wharf.nativeLibrary());
    System.out.println("libwharf " + Wharf.version());
    try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).build());
         ConstantMap loaded = ConstantMap.loadSafetensors(file);
         Container model = Container.fromMap(runtime, loaded, "consumer")) {
      try (Run before = model.beginRun()) {
        check(before.tensor("layers.0.weight").asByteBuffer().asFloatBuffer().get(1) == 2f, "first value");
        try (ConstantMap patch = ConstantMap.create()) {
          patch.put("layers.0.weight", new float[] {10f, 20f, 30f, 40f}, 2, 2);
          model.update(patch);
        }
        model.swap();
        try (Run after = model.beginRun()) {
          check(after.tensor("layers.0.weight").asByteBuffer().asFloatBuffer().get(1) == 20f, "updated value");
          check(after.generation() > before.generation(), "generation");
        }
        check(before.tensor("layers.0.weight").asByteBuffer().asFloatBuffer().get(1) == 2f, "old run's value");
      }
    }
    System.out.println("consumer: OK");
  }

  private static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError("consumer: " + what + " is wrong");
  }
}
