package io.basaltdb;

/**
 * A complete backup of a disk store ({@link Basalt#backup(java.nio.file.Path)}): a directory
 * holding a checkpoint of the store, every file with its size and checksum listed in its marker,
 * restorable with {@link Basalt#restore}.
 *
 * @param seqno the last write it holds: every write up to this seqno and none after (every write
 *     acknowledged before the backup began)
 * @param createdMillis when its checkpoint was taken, in milliseconds since the epoch
 * @param files the files it holds
 * @param bytes the bytes of those files
 * @param bytesCopied the bytes the backup copied (0 for a restore's or a verification's answer)
 * @param bytesLinked the bytes the backup shares, by hard links, with the store or an earlier
 *     backup
 *     <p>Thread-safety: immutable.
 */
public record Backup(
    long seqno, long createdMillis, int files, long bytes, long bytesCopied, long bytesLinked) {}
