package io.basaltdb.internal.memory;

import io.basaltdb.BasaltException;

/**
 * An allocator was closed while blocks were still allocated from it: some owner lost track of
 * memory. In debug mode the message lists the leaked blocks and the cause carries where the first
 * was allocated.
 *
 * <p>Thread-safety: immutable.
 */
public final class MemoryLeakException extends BasaltException {
  private static final long serialVersionUID = 1L;

  public MemoryLeakException(String message, Throwable firstAllocation) {
    super(message, firstAllocation);
  }
}
