#!/usr/bin/env bash
# Install the Lucene peer of benchmarks/bench_lucene.py; safe to run again (skips what is there).
#
#   bash benchmarks/install_lucene.sh            # pyserini 0.25.0 (Anserini 0.25.0, Lucene 9.9.1)
#   PYTHON=/path/to/python bash benchmarks/install_lucene.sh
#
# 1. a JDK 17 (java and javac): Debian's openjdk-17-jdk-headless through apt-get when missing;
# 2. pyserini 0.25.0 and pyjnius without their dependencies (pyserini's own list pulls torch,
#    faiss, transformers ...; BM25 needs none of them), plus numpy pandas scipy tqdm requests;
# 3. benchmarks/lucene/LuceneLoop.java compiled against the Anserini fatjar inside the pyserini
#    wheel (pyserini/resources/jars) into benchmarks/lucene/build/ (git-ignored).
set -euo pipefail
PYTHON=${PYTHON:-python}
HERE=$(cd "$(dirname "$0")" && pwd)

if ! command -v javac >/dev/null 2>&1; then
    echo "javac missing: installing openjdk-17-jdk-headless" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq openjdk-17-jdk-headless
fi
java_major=$(javac -version 2>&1 | sed -E 's/^javac ([0-9]+).*/\1/')
if [ "${java_major:-0}" -lt 11 ]; then
    echo "javac $java_major found; Anserini 0.25 needs Java 11 or later (17 tested)" >&2
    exit 1
fi

if ! "$PYTHON" -c "import importlib.metadata as m; assert m.version('pyserini') == '0.25.0'; import jnius_config" 2>/dev/null; then
    "$PYTHON" -m pip install --no-deps pyserini==0.25.0 pyjnius
fi
for module in numpy pandas scipy tqdm requests; do
    "$PYTHON" -c "import $module" 2>/dev/null || "$PYTHON" -m pip install "$module"
done

JAR=$("$PYTHON" -c "import glob, importlib.util, os; d = os.path.dirname(importlib.util.find_spec('pyserini').origin); print(sorted(glob.glob(os.path.join(d, 'resources', 'jars', 'anserini-*-fatjar.jar')))[-1])")
BUILD="$HERE/lucene/build"
if [ ! -f "$BUILD/LuceneLoop.class" ] || [ "$HERE/lucene/LuceneLoop.java" -nt "$BUILD/LuceneLoop.class" ]; then
    mkdir -p "$BUILD"
    javac -cp "$JAR" -d "$BUILD" "$HERE/lucene/LuceneLoop.java"
fi
echo "Lucene peer ready: $JAR, $BUILD/LuceneLoop.class"
