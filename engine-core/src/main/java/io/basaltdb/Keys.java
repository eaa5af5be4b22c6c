package io.basaltdb;

/** Argument checks shared by the public API. Thread-safety: stateless. */
final class Keys {
  private Keys() {}

  static void checkKey(byte[] key) {
    if (key == null) throw new InvalidArgumentException("key must not be null");
    if (key.length > Options.MAX_KEY_SIZE) {
      throw new InvalidArgumentException(
          "key of "
              + key.length
              + " bytes is over the "
              + Options.MAX_KEY_SIZE
              + "-byte limit; nothing was written");
    }
  }

  /** A key given as the bytes between a buffer's position and its limit. */
  static void checkKey(java.nio.ByteBuffer key) {
    if (key == null) throw new InvalidArgumentException("key must not be null");
    if (key.remaining() > Options.MAX_KEY_SIZE) {
      throw new InvalidArgumentException(
          "key of "
              + key.remaining()
              + " bytes is over the "
              + Options.MAX_KEY_SIZE
              + "-byte limit; nothing was written");
    }
  }

  /** A value given as the bytes between a buffer's position and its limit. */
  static void checkValue(java.nio.ByteBuffer value, int max) {
    if (value == null)
      throw new InvalidArgumentException("value must not be null (use an empty buffer, or delete)");
    checkValueLength(value.remaining(), max);
  }

  /** A buffer a get writes its value into. */
  static void checkOutput(java.nio.ByteBuffer out) {
    if (out == null) throw new InvalidArgumentException("value buffer must not be null");
    if (out.isReadOnly())
      throw new InvalidArgumentException(
          "value buffer is read-only; a get writes the value into it");
  }

  static void checkExpiry(long expiresAtMillis) {
    if (expiresAtMillis < 0) {
      throw new InvalidArgumentException(
          "an expiry of " + expiresAtMillis + ": give ms since the epoch, or 0 for never");
    }
  }

  static void checkValue(byte[] value, int max) {
    if (value == null)
      throw new InvalidArgumentException("value must not be null (use an empty array, or delete)");
    checkValueLength(value.length, max);
  }

  static void checkValueLength(int length, int max) {
    if (length > max) {
      throw new InvalidArgumentException(
          "value of "
              + length
              + " bytes is over the store's maxValueSize of "
              + max
              + " bytes; nothing was written (raise Options.maxValueSize, up to "
              + Options.MAX_VALUE_SIZE_LIMIT
              + ")");
    }
  }
}
