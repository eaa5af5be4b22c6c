/**
 * Basalt's binding for the YCSB harness ({@code site.ycsb.DB}): {@link
 * io.basaltdb.ycsb.BasaltClient}.
 */
package io.basaltdb.ycsb;
