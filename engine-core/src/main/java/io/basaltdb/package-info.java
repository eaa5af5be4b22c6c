/**
 * Basalt's public API. Everything outside this package lives under {@code io.basaltdb.internal} and
 * may change without notice.
 */
package io.basaltdb;
