# Sourced by the bin/ scripts once $java is set: the array `flags` of the JVM flag files this JDK needs,
# jvm.flags always and jvm-23.flags on JDK 23 and later (docs/operations.md, "JVM flags").
# shellcheck shell=bash
if ! command -v "$java" > /dev/null 2>&1; then
  echo "no java at '$java': put a JDK 17 or newer on the PATH, or set JAVA_HOME" >&2
  exit 1
fi
flags=("@$PWD/jvm.flags")
jdk_major=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' || true)
if [ -n "$jdk_major" ] && [ "$jdk_major" -ge 23 ]; then flags+=("@$PWD/jvm-23.flags"); fi
