/**
 * The key index's sorted string tables (seed 000, section 3: the LSM index of keys to document
 * locations; LevelDB's table_format is the model). A {@link
 * io.basaltdb.internal.sstable.TableWriter} writes records in key order into data blocks with
 * prefix-compressed keys and restart points, then a bloom filter, a meta block, an index block and
 * a fixed-size footer; a {@link io.basaltdb.internal.sstable.TableReader} serves point lookups and
 * {@link io.basaltdb.internal.sstable.TableIterator}s over it, forward and backward. Every byte of
 * a table is covered by a CRC32C; damage surfaces as {@link io.basaltdb.CorruptionException}. The
 * byte layout is in docs/format.md, "SSTable", mirrored by the constants of {@code Format}.
 *
 * <p>A table is one of two formats, named by its footer's version: a block table (above), or an
 * HB+-trie table (seed 003; format version 7): the same data blocks of records, found through a
 * {@link io.basaltdb.internal.sstable.TrieBuilder trie} of navigation pages instead of an index
 * block ({@code TrieIndex}). {@link io.basaltdb.internal.sstable.TableReader} dispatches on it, so
 * iterators, batched reads and corruption handling are the same for both.
 *
 * <p>Records are {@code (key, seqno, docSize, tombstone, hint)}, one per key; keys are byte arrays
 * of 0 to 64 KiB compared as unsigned bytes ({@link
 * io.basaltdb.internal.sstable.KeyRecord#compareKeys}).
 */
package io.basaltdb.internal.sstable;
