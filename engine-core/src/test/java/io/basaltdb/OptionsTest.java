package io.basaltdb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every option setter, found by reflection so a new one cannot be missed: a null refused with
 * {@link InvalidArgumentException} at once (not a bare NullPointerException later), every value
 * kept by {@link Options#copy}, and every knob named in {@link Options#toString}.
 */
class OptionsTest {
  /** The public setters: {@code Options name(T)} methods, but {@link Options#set}. */
  static List<Method> setters() {
    List<Method> out = new ArrayList<>();
    for (Method m : Options.class.getMethods()) {
      if (m.getReturnType() == Options.class
          && m.getParameterCount() == 1
          && !m.getName().equals("set")) out.add(m);
    }
    return out;
  }

  @Test
  void everyReferenceSetter_refusesNull() throws Exception {
    int checked = 0;
    for (Method m : setters()) {
      if (m.getParameterTypes()[0].isPrimitive()) continue;
      InvocationTargetException e =
          assertThrows(
              InvocationTargetException.class,
              () -> m.invoke(Options.defaults(), new Object[] {null}),
              m.getName() + "(null) was accepted");
      assertTrue(
          e.getCause() instanceof InvalidArgumentException,
          m.getName() + "(null) threw " + e.getCause());
      assertTrue(
          e.getCause().getMessage().contains(m.getName()),
          "the message names the option: " + e.getCause().getMessage());
      checked++;
    }
    assertTrue(checked >= 2, "syncMode and clock at least, found " + checked);
    assertThrows(InvalidArgumentException.class, () -> Options.defaults().set(null, "1"));
    assertThrows(InvalidArgumentException.class, () -> Options.defaults().set("memoryQuota", null));
  }

  @Test
  void everySetter_isCopiedAndNamedInToString() throws Exception {
    Options changed = Options.defaults();
    String before = Options.defaults().toString();
    for (Method m : setters()) {
      Class<?> t = m.getParameterTypes()[0];
      Method getter = Options.class.getMethod(m.getName());
      Object v = getter.invoke(changed);
      Object other =
          t == int.class
              ? (Object) ((Integer) v + 1)
              : t == long.class
                  ? (Object) ((Long) v + 1)
                  : t == double.class
                      ? (Object) ((Double) v / 2)
                      : t == boolean.class
                          ? (Object) !(Boolean) v
                          : t == SyncMode.class
                              ? (v == SyncMode.NONE ? SyncMode.SYNC : SyncMode.NONE)
                              : t == java.util.function.LongSupplier.class
                                  ? (java.util.function.LongSupplier) () -> 42L
                                  : t == EventListener.class ? new EventListener() {} : null;
      if (other == null)
        throw new AssertionError("no test value for option " + m.getName() + " of type " + t);
      m.invoke(changed, other);
      Object copied = getter.invoke(changed.copy());
      assertEquals(getter.invoke(changed), copied, m.getName() + " is not copied");
      if (t != java.util.function.LongSupplier.class && t != EventListener.class) {
        assertTrue(
            before.contains(m.getName() + "="),
            "toString does not name " + m.getName() + ": " + before);
      }
    }
    assertNotEquals(before, changed.toString());
  }
}
