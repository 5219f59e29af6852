#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Java binding's publishing files beside the jar java/build.sh made, for a Maven
# repository (`make dist` puts them in the release archive's share/java/):
#
#   java/dist.sh BUILD_DIR
#
# writes, under BUILD_DIR/java:
#   wharf-VERSION-sources.jar   every source compiled into the jar: java/src/main/java and
#                               the SWIG-generated package-private classes (gen/)
#   wharf-VERSION-javadoc.jar   the API docs java/build.sh generated (javadoc/)
#   wharf-VERSION.pom           coordinates dev.wharf:wharf:VERSION, the license, no dependencies
# Run java/build.sh BUILD_DIR first. Install all four into a local Maven repository with
#   mvn install:install-file -Dfile=wharf-VERSION.jar -DpomFile=wharf-VERSION.pom \
#     -Dsources=wharf-VERSION-sources.jar -Djavadoc=wharf-VERSION-javadoc.jar
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$(cd "$1" && pwd)/java
VERSION=$(awk '/^#define WHARF_VERSION_(MAJOR|MINOR|PATCH) /{v = v (v == "" ? "" : ".") $3} END{print v}' \
  "$ROOT/include/wharf/wharf.h")
JAR="$OUT/wharf-$VERSION.jar"
for need in "$JAR" "$OUT/gen" "$OUT/javadoc/index.html"; do
  [ -e "$need" ] || { echo "java/dist.sh: $need not found; build the jar first: java/build.sh $1" >&2; exit 2; }
done
if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/jar" ]; then
  JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v jar)")")")
fi
JARTOOL="$JAVA_HOME/bin/jar"

# Sources: the same two trees build.sh compiles, laid out by package.
SRC="$OUT/sources-root"
rm -rf "$SRC" && mkdir -p "$SRC/dev/wharf"
cp -r "$ROOT/java/src/main/java/." "$SRC/"
cp "$OUT"/gen/*.java "$SRC/dev/wharf/"
"$JARTOOL" --create --file "$OUT/wharf-$VERSION-sources.jar" -C "$SRC" .
rm -rf "$SRC"
"$JARTOOL" --create --file "$OUT/wharf-$VERSION-javadoc.jar" -C "$OUT/javadoc" .

# The POM: what a Maven or Gradle build needs to depend on the jar. It has no dependencies:
# the jar carries its native libraries (native/linux-x86_64/).
cat > "$OUT/wharf-$VERSION.pom" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.wharf</groupId>
  <artifactId>wharf</artifactId>
  <version>$VERSION</version>
  <packaging>jar</packaging>
  <name>Wharf</name>
  <description>Java 17 binding of Wharf's C API (package dev.wharf): GPU-resident weights with hot updates, runs and sessions. The jar carries libwharf for linux-x86_64.</description>
  <licenses>
    <license>
      <name>Apache-2.0</name>
      <url>https://www.apache.org/licenses/LICENSE-2.0.txt</url>
      <distribution>repo</distribution>
    </license>
  </licenses>
</project>
EOF
echo "built $OUT/wharf-$VERSION-sources.jar, wharf-$VERSION-javadoc.jar, wharf-$VERSION.pom (dev.wharf:wharf:$VERSION)"
