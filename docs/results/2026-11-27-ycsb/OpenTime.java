import io.basaltdb.*;
import java.nio.file.*;
public class OpenTime {
  public static void main(String[] a) throws Exception {
    long t0 = System.nanoTime();
    Path d = Files.createTempDirectory("ot");
    try (Basalt db = Basalt.open(d, Options.defaults().memoryQuota(32L << 20).syncMode(SyncMode.PERIODIC))) {
      long t1 = System.nanoTime();
      db.keyspace("default").put("k".getBytes(), "v".getBytes());
      long t2 = System.nanoTime();
      System.out.printf("open %.1f ms, first put %.1f ms%n", (t1 - t0) / 1e6, (t2 - t1) / 1e6);
    }
    long t3 = System.nanoTime();
    System.out.printf("total with close %.1f ms%n", (t3 - t0) / 1e6);
  }
}
