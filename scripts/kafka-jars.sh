#!/usr/bin/env bash
# Resolve Apache Kafka's jars (jvm/pom.xml) with Maven into a cache folder and print that
# folder. A second run with the same pom only prints it. Fails with one clear line when
# Maven or its registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' jvm/pom.xml)
sum=$(sha256sum jvm/pom.xml | cut -c1-12)
dest=${KAFKALITE_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/kafkalite/kafka-$version-$sum}
if [ ! -f "$dest/.complete" ]; then
  command -v mvn >/dev/null 2>&1 || { echo "kafka-jars: mvn (Maven) is not installed" >&2; exit 1; }
  mkdir -p "$(dirname "$dest")" || { echo "kafka-jars: cannot create $(dirname "$dest")" >&2; exit 1; }
  rm -rf "$dest.tmp"
  if ! mvn -q -B -f jvm/pom.xml dependency:copy-dependencies \
      -DoutputDirectory="$dest.tmp" >"${dest}.log" 2>&1; then
    echo "kafka-jars: Maven could not resolve Kafka $version's jars (see $dest.log)" >&2
    exit 1
  fi
  rm -rf "$dest" && mv "$dest.tmp" "$dest" && touch "$dest/.complete"
fi
echo "$dest"
