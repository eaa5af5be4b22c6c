/**
 * Basalt's binding for the YCSB harness ({@code site.ycsb.DB}). The binding arrives with the durable
 * engine; this module builds now so the reactor is complete.
 */
package io.basaltdb.ycsb;
