package io.basaltdb.internal.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The engine's packages stay layered (package-info of {@code io.basaltdb.internal.engine}): each
 * subpackage uses only those before it in {@link #LAYERS}, none uses the top package, and each has
 * its design block. Read from the sources: a use of a type of another package needs an import or a
 * qualified name, both of which show in the text (comments left out: a link in a comment is no
 * use).
 */
class EnginePackagesTest {
  /** The subpackages, each allowed to use only those before it. */
  static final List<String> LAYERS =
      List.of("base", "writecache", "version", "gc", "backup", "hashed", "read", "index", "write");

  private static final Path ROOT = Path.of("src/main/java/io/basaltdb/internal/engine");
  private static final Pattern USE =
      Pattern.compile("io\\.basaltdb\\.internal\\.engine(?:\\.([a-z]+))?\\.[A-Z]");

  /** Package (a layer's name, or "top") to the packages its main sources use. */
  static Map<String, Set<String>> uses() throws IOException {
    Map<String, Set<String>> uses = new TreeMap<>();
    List<Path> sources;
    try (Stream<Path> s = Files.walk(ROOT)) {
      sources = s.filter(p -> p.toString().endsWith(".java")).toList();
    }
    for (Path p : sources) {
      Path rel = ROOT.relativize(p);
      String pkg = rel.getNameCount() == 1 ? "top" : rel.getName(0).toString();
      String code =
          Files.readString(p).replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "");
      Set<String> mine = uses.computeIfAbsent(pkg, k -> new TreeSet<>());
      Matcher m = USE.matcher(code);
      while (m.find()) {
        String other = m.group(1) == null ? "top" : m.group(1);
        if (!other.equals(pkg)) mine.add(other);
      }
    }
    return uses;
  }

  @Test
  void eachSubpackageUsesOnlyTheLayersBeforeIt_andNoneUsesTheTopPackage() throws IOException {
    Map<String, Set<String>> uses = uses();
    assertEquals(
        new TreeSet<>(LAYERS),
        new TreeSet<>(uses.keySet().stream().filter(k -> !k.equals("top")).toList()),
        "every subpackage is a layer and every layer a subpackage: " + uses);
    List<String> wrong = new ArrayList<>();
    for (String pkg : LAYERS) {
      for (String used : uses.get(pkg)) {
        int at = LAYERS.indexOf(used);
        if (at < 0 || at >= LAYERS.indexOf(pkg)) wrong.add(pkg + " uses " + used);
      }
    }
    assertTrue(
        wrong.isEmpty(),
        "layers used out of order (or the top package used): " + wrong + "; all uses: " + uses);
  }

  @Test
  void everyEnginePackageHasItsDesignBlock() throws IOException {
    for (String pkg : LAYERS) {
      Path info = ROOT.resolve(pkg).resolve("package-info.java");
      assertTrue(Files.exists(info), "no package-info.java for " + pkg);
      assertTrue(
          Files.readString(info).contains("Used by"), pkg + "'s design block says who may use it");
    }
    assertTrue(
        Files.exists(ROOT.resolve("package-info.java")),
        "the top package's block names the layers");
  }

  @Test
  void theUsesCheckedAreThoseTheSourcesHave() throws IOException {
    // Guards the first test against passing on nothing found.
    Map<String, Set<String>> uses = uses();
    assertTrue(
        uses.get("top").containsAll(LAYERS),
        "the facade assembles every layer: " + uses.get("top"));
    assertTrue(
        uses.get("write").contains("version") && uses.get("read").contains("writecache"),
        "uses are found: " + uses);
  }
}
