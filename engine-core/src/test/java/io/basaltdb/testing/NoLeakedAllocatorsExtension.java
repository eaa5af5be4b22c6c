package io.basaltdb.testing;

import io.basaltdb.internal.memory.SlabAllocator;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Registered for every test class (junit-platform.properties turns on autodetection): fails the
 * class if it leaves an off-heap allocator open, i.e. native memory nobody will free. Leaked blocks
 * inside an allocator are caught by the allocator itself when it closes (with allocation stacks in
 * debug mode, which the suite runs with).
 */
public final class NoLeakedAllocatorsExtension implements BeforeAllCallback, AfterAllCallback {
  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(NoLeakedAllocatorsExtension.class);

  /** Allocators and lazy-trie spaces open. */
  private static int open() {
    return SlabAllocator.openAllocators() + io.basaltdb.internal.hashindex.TrieSpace.openSpaces();
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    context.getStore(NS).put("open", open());
  }

  @Override
  public void afterAll(ExtensionContext context) {
    int before = context.getStore(NS).get("open", Integer.class);
    int after = open();
    if (after > before) {
      throw new AssertionError(
          context.getDisplayName()
              + " left "
              + (after - before)
              + " off-heap allocator(s) or trie space(s) open: close every SkipList/allocator/trie a test creates");
    }
  }
}
