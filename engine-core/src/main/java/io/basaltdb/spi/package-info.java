/**
 * Service-provider interfaces: the points where an optional module (engine-io) plugs operating-system
 * facilities into the engine without the engine depending on it. Providers are found with
 * {@link java.util.ServiceLoader}.
 */
package io.basaltdb.spi;
