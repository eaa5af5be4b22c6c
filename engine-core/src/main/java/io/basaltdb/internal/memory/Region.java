package io.basaltdb.internal.memory;

import io.basaltdb.MemoryLimitException;
import java.util.Map;
import java.util.TreeMap;

/**
 * The one reserved range of virtual address space that every allocator's chunks and large blocks
 * come from, so that any off-heap block can be named by a 32-bit reference: its offset from {@link
 * #BASE} in 8-byte units ({@link #ref}, {@link #address}). The skiplist stores such references in
 * its towers, which leaves room next to each one for part of the successor's key (docs/format.md).
 * Pebble's {@code arenaskl} does the same with offsets into one arena.
 *
 * <p>The range is reserved once per JVM, lazily, with {@code mmap(MAP_NORESERVE)} and {@code
 * MADV_HUGEPAGE}, called through jffi ({@link Libc}): it costs address space only, and pages are
 * backed on first touch. Its size is {@code -Dbasalt.memory.region} (bytes, with an optional k/m/g
 * suffix; default and maximum 32g, the most a 32-bit reference in 8-byte units can name). Freed
 * spans go back to the operating system with {@code MADV_DONTNEED} and are reused, coalesced, first
 * fit. Offset 0 is never handed out, so reference 0 is null. Where mmap is unavailable (not Linux)
 * the range is one {@code malloc} of the configured size.
 *
 * <p>Thread-safety: {@link #allocate} and {@link #free} are synchronized on the class; {@link #ref}
 * and {@link #address} are pure arithmetic.
 */
public final class Region {
  /** Unit of a reference: blocks are 8-byte aligned. */
  public static final int REF_SHIFT = 3;

  public static final long MAX_SIZE = (1L << 32) << REF_SHIFT;
  static final long PAGE = 4096;
  private static final long HUGE_PAGE = 2L << 20;
  private static final int PROT_READ_WRITE = 0x3;
  private static final int MAP_PRIVATE_ANONYMOUS_NORESERVE = 0x22 | 0x4000;
  private static final int MADV_DONTNEED = 4;
  private static final int MADV_HUGEPAGE = 14;

  /** First byte of the range (2 MiB-aligned). Reference r names address {@code BASE + (r << 3)}. */
  public static final long BASE;

  public static final long SIZE;
  private static final boolean MAPPED;

  static {
    long size = parseSize(System.getProperty("basalt.memory.region", "32g"));
    long base = 0;
    boolean mapped = false;
    if (System.getProperty("os.name", "").startsWith("Linux") && Libc.LOADED) {
      for (long s = size;
          s >= (256L << 20) && base == 0;
          s >>>= 1) { // strict overcommit may refuse
        long raw = Libc.mmap(s + HUGE_PAGE, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS_NORESERVE);
        if (raw != -1 && raw != 0) {
          base = (raw + HUGE_PAGE - 1) & -HUGE_PAGE;
          if (base > raw) Libc.munmap(raw, base - raw);
          long tail = raw + s + HUGE_PAGE - (base + s);
          if (tail > 0) Libc.munmap(base + s, tail);
          Libc.madvise(base, s, MADV_HUGEPAGE); // advice only: without THP the mapping still works
          size = s;
          mapped = true;
        }
      }
    }
    if (base == 0) {
      base = (Mem.osAllocate(size + HUGE_PAGE) + HUGE_PAGE - 1) & -HUGE_PAGE; // never freed
    }
    BASE = base;
    SIZE = size;
    MAPPED = mapped;
  }

  /** Free spans by start address -> length, coalesced. Guarded by the class monitor. */
  private static final TreeMap<Long, Long> FREE = new TreeMap<>();

  /** Everything at or past this offset has never been handed out. Guarded by the class monitor. */
  private static long top = HUGE_PAGE; // offset 0 stays unused: reference 0 is null

  /** Bytes currently handed out. Guarded by the class monitor. */
  private static long inUse;

  private Region() {}

  /** The 32-bit reference of an address inside the range (0 for address 0). */
  public static long ref(long address) {
    if (Mem.DEBUG
        && address != 0
        && (address - BASE < HUGE_PAGE || address - BASE >= SIZE || (address & 7) != 0)) {
      throw new IllegalStateException(
          "address 0x"
              + Long.toHexString(address)
              + " is not an 8-byte aligned "
              + "address inside the region");
    }
    return address == 0 ? 0 : (address - BASE) >>> REF_SHIFT;
  }

  /** The address a non-zero reference names. */
  public static long address(long ref) {
    return BASE + (ref << REF_SHIFT);
  }

  /**
   * A span of {@code bytes} (rounded up to 4 KiB) aligned to {@code align} (a power of two, at
   * least 4 KiB), zero-filled or holding whatever its previous user left.
   *
   * @throws MemoryLimitException if the range has no such span left
   */
  static synchronized long allocate(long bytes, long align) {
    long len = roundToPage(bytes);
    for (Map.Entry<Long, Long> e : FREE.entrySet()) {
      long start = e.getKey();
      long end = start + e.getValue();
      long at = (start + align - 1) & -align;
      if (at + len <= end) {
        FREE.remove(start);
        if (at > start) FREE.put(start, at - start);
        if (end > at + len) FREE.put(at + len, end - (at + len));
        inUse += len;
        return BASE + at;
      }
    }
    long at = (top + align - 1) & -align;
    if (at + len > SIZE) {
      throw new MemoryLimitException(
          "the off-heap region of "
              + SIZE
              + " bytes is exhausted ("
              + inUse
              + " bytes in use, "
              + len
              + " requested); raise -Dbasalt.memory.region (at most 32g)");
    }
    if (at > top) addFree(top, at - top);
    top = at + len;
    inUse += len;
    return BASE + at;
  }

  /** Returns a span from {@link #allocate}; its pages go back to the operating system. */
  static synchronized void free(long address, long bytes) {
    long len = roundToPage(bytes);
    long at = address - BASE;
    if (at < HUGE_PAGE || at + len > top || (at & (PAGE - 1)) != 0) {
      throw new IllegalStateException(
          "free of 0x"
              + Long.toHexString(address)
              + " ("
              + bytes
              + " bytes), which the region did not hand out");
    }
    Map.Entry<Long, Long> before = FREE.floorEntry(at);
    Long after = FREE.ceilingKey(at);
    if ((before != null && before.getKey() + before.getValue() > at)
        || (after != null && after < at + len)) {
      throw new IllegalStateException("double free of region span 0x" + Long.toHexString(address));
    }
    if (MAPPED) Libc.madvise(address, len, MADV_DONTNEED);
    inUse -= len;
    addFree(at, len);
  }

  /**
   * {@code mmap}, {@code munmap} and {@code madvise} of the C library, called through jffi, the
   * native layer under jnr-ffi: jnr-ffi's generated bindings (Chronicle's {@code PosixAPI}) took
   * 200-850 ms to load at the first open of a store in a JVM, a tenth of a short YCSB load; these
   * take about 60 ms. Not loaded (no jffi library for this platform): the range is malloc'd.
   */
  private static final class Libc {
    static final boolean LOADED;
    private static final long MMAP, MUNMAP, MADVISE;
    private static final com.kenai.jffi.CallContext MMAP_CALL, MUNMAP_CALL, MADVISE_CALL;

    static {
      long mmap = 0, munmap = 0, madvise = 0;
      com.kenai.jffi.CallContext mmapCall = null, munmapCall = null, madviseCall = null;
      boolean loaded = false;
      try {
        com.kenai.jffi.Library libc = com.kenai.jffi.Library.getDefault();
        mmap = libc.getSymbolAddress("mmap");
        munmap = libc.getSymbolAddress("munmap");
        madvise = libc.getSymbolAddress("madvise");
        com.kenai.jffi.Type ptr = com.kenai.jffi.Type.POINTER;
        com.kenai.jffi.Type size = com.kenai.jffi.Type.ULONG;
        com.kenai.jffi.Type i32 = com.kenai.jffi.Type.SINT;
        mmapCall = call(ptr, ptr, size, i32, i32, i32, com.kenai.jffi.Type.SLONG);
        munmapCall = call(i32, ptr, size);
        madviseCall = call(i32, ptr, size, i32);
        loaded = mmap != 0 && munmap != 0 && madvise != 0;
      } catch (LinkageError | RuntimeException e) { // jffi has no native library for this platform
        loaded = false;
      }
      MMAP = mmap;
      MUNMAP = munmap;
      MADVISE = madvise;
      MMAP_CALL = mmapCall;
      MUNMAP_CALL = munmapCall;
      MADVISE_CALL = madviseCall;
      LOADED = loaded;
    }

    private static com.kenai.jffi.CallContext call(
        com.kenai.jffi.Type result, com.kenai.jffi.Type... params) {
      return com.kenai.jffi.CallContext.getCallContext(
          result, params, com.kenai.jffi.CallingConvention.DEFAULT, false);
    }

    /** An anonymous mapping of {@code length} bytes anywhere; -1 (MAP_FAILED) if refused. */
    static long mmap(long length, int prot, int flags) {
      return com.kenai.jffi.Invoker.getInstance()
          .invokeL6(MMAP_CALL, MMAP, 0, length, prot, flags, -1, 0);
    }

    static int munmap(long address, long length) {
      return (int)
          com.kenai.jffi.Invoker.getInstance().invokeL2(MUNMAP_CALL, MUNMAP, address, length);
    }

    static int madvise(long address, long length, int advice) {
      return (int)
          com.kenai.jffi.Invoker.getInstance()
              .invokeL3(MADVISE_CALL, MADVISE, address, length, advice);
    }
  }

  /** Whether the range is a reserved mapping (Linux, jffi loaded), not one malloc. */
  static boolean mapped() {
    return MAPPED;
  }

  /** Bytes of the range handed out and not yet freed. */
  public static synchronized long inUse() {
    return inUse;
  }

  static long roundToPage(long bytes) {
    return (bytes + PAGE - 1) & -PAGE;
  }

  private static void addFree(long at, long len) {
    Map.Entry<Long, Long> before = FREE.floorEntry(at);
    if (before != null && before.getKey() + before.getValue() == at) {
      at = before.getKey();
      len += before.getValue();
      FREE.remove(at);
    }
    Long after = FREE.get(at + len);
    if (after != null) {
      FREE.remove(at + len);
      len += after;
    }
    if (at + len == top) {
      top = at; // the tail returns to never-used space
    } else {
      FREE.put(at, len);
    }
  }

  static long parseSize(String s) {
    String t = s.trim().toLowerCase(java.util.Locale.ROOT);
    long mult = 1;
    char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
    if (last == 'k' || last == 'm' || last == 'g') {
      mult = last == 'k' ? 1L << 10 : last == 'm' ? 1L << 20 : 1L << 30;
      t = t.substring(0, t.length() - 1);
    }
    long v;
    try {
      v = Long.parseLong(t) * mult;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          "-Dbasalt.memory.region=" + s + " is not a size such as 8g or 512m");
    }
    if (v < (256L << 20) || v > MAX_SIZE) {
      throw new IllegalArgumentException(
          "-Dbasalt.memory.region=" + s + " must be between 256m and 32g");
    }
    return v;
  }
}
