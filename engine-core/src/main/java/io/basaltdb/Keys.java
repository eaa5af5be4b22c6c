package io.basaltdb;

/** Argument checks shared by the public API. Thread-safety: stateless. */
final class Keys {
  private Keys() {}

  static void checkKey(byte[] key) {
    if (key == null) throw new InvalidArgumentException("key must not be null");
    if (key.length > Options.MAX_KEY_SIZE) {
      throw new InvalidArgumentException(
          "key of " + key.length + " bytes is over the " + Options.MAX_KEY_SIZE + "-byte limit; nothing was written");
    }
  }

  static void checkExpiry(long expiresAtMillis) {
    if (expiresAtMillis < 0) {
      throw new InvalidArgumentException("an expiry of " + expiresAtMillis + ": give ms since the epoch, or 0 for never");
    }
  }

  static void checkValue(byte[] value, int max) {
    if (value == null) throw new InvalidArgumentException("value must not be null (use an empty array, or delete)");
    if (value.length > max) {
      throw new InvalidArgumentException("value of " + value.length + " bytes is over the store's maxValueSize of "
          + max + " bytes; nothing was written (raise Options.maxValueSize, up to " + Options.MAX_VALUE_SIZE_LIMIT + ")");
    }
  }
}
