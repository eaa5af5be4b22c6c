/**
 * Service-provider interfaces: the points where an optional module (engine-io) plugs
 * operating-system facilities into the engine without the engine depending on it. Providers are
 * found with {@link java.util.ServiceLoader}. engine-io provides {@link
 * io.basaltdb.spi.NativeFileCalls} ({@code fallocate}); nothing provides a {@link
 * io.basaltdb.spi.ReadTransport} yet, so batched reads use the built-in pooled {@code FileChannel}
 * transport until engine-io's planned io_uring one exists.
 */
package io.basaltdb.spi;
