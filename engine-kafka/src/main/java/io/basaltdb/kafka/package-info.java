/**
 * Basalt as a Kafka Streams state store: {@link io.basaltdb.kafka.BasaltStores} supplies key-value,
 * window and session stores, {@link io.basaltdb.kafka.BasaltDslStoreSuppliers} moves every DSL
 * store of an application to them, and every store of an application instance shares one Basalt
 * ({@link io.basaltdb.kafka.BasaltConfig}). Kafka does the distribution: partitions, changelog
 * topics, standby replicas and rebalancing. See docs/kafka-streams.md.
 */
package io.basaltdb.kafka;
