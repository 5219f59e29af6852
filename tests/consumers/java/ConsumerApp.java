// SPDX-License-Identifier: Apache-2.0
// A Java program outside the Wharf tree, compiled and run with nothing but the installed jar
// on its class path (tests/consumers/java_consumer.sh): it loads a safetensors file
// (w = [1, 2, 3, 4]), serves it, updates w, swaps and reads w back through a run.
import dev.wharf.*;
import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.Arrays;

public class ConsumerApp {
  public static void main(String[] args) {
    float[] fresh = {5f, 6f, 7f, 8f};
    try (WharfRuntime runtime = WharfRuntime.create(RuntimeOptions.builder().backend(Backend.HOST).build());
         ConstantMap file = ConstantMap.loadSafetensors(Path.of(args[0]));
         Container model = Container.fromMap(runtime, file, "consumer");
         ConstantMap update = ConstantMap.create()) {
      update.put("w", fresh, 4);
      model.update(update);
      model.swap();
      try (Run run = model.beginRun()) {
        float[] w = new float[4];
        FloatBuffer view = run.tensor("w").asByteBuffer().asFloatBuffer();
        view.get(w);
        System.out.println("wharf " + Wharf.version() + ", generation " + run.generation() + ": w = "
            + Arrays.toString(w) + " (native library from " + Wharf.nativeLibrary() + ")");
        if (!Arrays.equals(w, fresh)) System.exit(1);
      }
    }
  }
}
