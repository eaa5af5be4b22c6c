# Sourced by the bin/ scripts once $java is set: the array `flags` of the JVM flag files this JDK needs,
# jvm.flags always and jvm-23.flags on JDK 23 and later (docs/operations.md, "JVM flags").
# shellcheck shell=bash
flags=("@$PWD/jvm.flags")
jdk_major=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p')
if [ -n "$jdk_major" ] && [ "$jdk_major" -ge 23 ]; then flags+=("@$PWD/jvm-23.flags"); fi
