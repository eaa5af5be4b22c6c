package io.basaltdb.example;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.basaltdb.testing.NoLeakedAllocatorsExtension;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's Java example compiles (it is {@link ReadmeExample}), runs, and is in the README
 * verbatim.
 */
@ExtendWith(NoLeakedAllocatorsExtension.class)
class ReadmeExampleTest {
  @Test
  void theExample_runs(@TempDir Path dir) {
    assertEquals(
        3,
        ReadmeExample.run(dir.resolve("data")),
        "the feed of a put, a delete... and a batch's two");
  }

  @Test
  void theReadme_holdsTheExampleVerbatim() throws Exception {
    Path root = Path.of("").toAbsolutePath().getParent(); // tests run in engine-core
    List<String> source =
        Files.readAllLines(
            root.resolve("engine-core/src/test/java/io/basaltdb/example/ReadmeExample.java"));
    int begin = source.indexOf("    // README begin"), end = source.indexOf("    // README end");
    assertTrue(begin >= 0 && end > begin);
    StringBuilder block = new StringBuilder("```java\n");
    for (String line : source.subList(begin + 1, end)) {
      block
          .append(line.length() >= 4 ? line.substring(4) : line.strip())
          .append('\n'); // the method's indent
    }
    block.append("```");
    String readme = Files.readString(root.resolve("README.md"));
    assertTrue(
        readme.contains(block),
        "README.md must hold ReadmeExample's lines between its markers, as:\n" + block);
  }
}
