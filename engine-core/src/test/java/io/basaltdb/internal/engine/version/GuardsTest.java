package io.basaltdb.internal.engine.version;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link Guards}: which keys are candidates, and the guard a key falls in. */
class GuardsTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aCandidateOfALevel_isACandidateOfEveryDeeperLevel_andDensityFollowsTheBits() {
    Random rnd = new Random(7);
    int n = 200_000;
    int[] count = new int[KeyspaceFiles.MAX_LEVELS];
    for (int i = 0; i < n; i++) {
      byte[] key = new byte[8 + rnd.nextInt(32)];
      rnd.nextBytes(key);
      for (int l = 1; l < KeyspaceFiles.MAX_LEVELS; l++) {
        boolean c = Guards.isCandidate(key, l, 6, 2);
        if (c) count[l]++;
        if (c && l < KeyspaceFiles.MAX_LEVELS - 1)
          assertTrue(Guards.isCandidate(key, l + 1, 6, 2), "nested");
      }
    }
    for (int l = 4;
        l < KeyspaceFiles.MAX_LEVELS;
        l++) { // 2^6, 2^8, 2^10 keys per guard: enough samples
      double want = n / Math.pow(2, 6 + (KeyspaceFiles.MAX_LEVELS - 1 - l) * 2);
      assertTrue(
          Math.abs(count[l] - want) < 0.15 * want,
          "level " + l + ": " + count[l] + " candidates, want ~" + want);
    }
    assertTrue(!Guards.isCandidate(new byte[0], 6, 1, 0), "the empty key is never a guard");
  }

  @Test
  void guardOf_countsTheGuardKeysNotAboveTheKey_theSentinelHoldingWhatIsBelowThemAll() {
    Guards g = Guards.EMPTY.withAdded(5, List.of(b("m"), b("d")));
    assertEquals(0, g.guardOf(5, b("a")));
    assertEquals(1, g.guardOf(5, b("d")), "a guard key starts its guard");
    assertEquals(1, g.guardOf(5, b("lzz")));
    assertEquals(2, g.guardOf(5, b("m")));
    assertEquals(2, g.guardOf(5, b("zzz")));
    assertEquals(0, g.guardOf(6, b("zzz")), "another level has no guards");
    assertEquals(2, g.count(5));
  }

  @Test
  void withAdded_sortsAndIgnoresDuplicates_andLeavesTheOriginalAlone() {
    Guards g = Guards.EMPTY.withAdded(6, List.of(b("k"), b("c")));
    Guards h = g.withAdded(6, List.of(b("c"), b("z"), b("a"), b("z")));
    assertEquals(2, g.count(6));
    assertEquals(4, h.count(6));
    assertEquals("a", new String(h.key(6, 1), StandardCharsets.UTF_8));
    assertEquals("z", new String(h.key(6, 4), StandardCharsets.UTF_8));
    assertSame(h, h.withAdded(3, List.of()));
    assertEquals(
        Guards.EMPTY.withAdded(6, List.of(b("a"), b("c"), b("k"), b("z"))), h, "equal by keys");
  }

  @Test
  void unsortedOrEmptyKeys_areRefused() {
    List<byte[]> none = List.of();
    assertThrows(
        IllegalArgumentException.class,
        () -> Guards.of(List.of(none, none, none, none, none, none, List.of(b("b"), b("a")))));
    assertThrows(
        IllegalArgumentException.class,
        () -> Guards.of(List.of(none, none, none, none, none, none, List.of(new byte[0]))));
    assertThrows(
        IllegalArgumentException.class,
        () -> Guards.of(List.of(List.of(b("a")), none, none, none, none, none, none)));
  }
}
