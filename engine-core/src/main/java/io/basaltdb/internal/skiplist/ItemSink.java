package io.basaltdb.internal.skiplist;

/**
 * Receives items (a node's key and value, off the heap) from a backup's scan or from the
 * collector's capture of unlinked nodes ({@link UnlinkCapture}); the addresses are valid only
 * during the call. Called by one thread at a time.
 */
public interface ItemSink {
  void item(long keyAddr, int keyLen, long valueAddr, int valueLen);
}
