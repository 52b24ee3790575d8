#!/usr/bin/env bash
# Unpacks Debian trixie's libonnxruntime-dev (headers only, ~85 KB) into DEST, with apt state kept
# in DEST/apt: nothing is installed into the system. ORT 1.21 headers (API 21) work against the
# newer runtime the Python package ships: the C API is versioned and backward compatible.
set -euo pipefail
dest=$1
state="$dest/apt"
mkdir -p "$state/lists/partial" "$state/cache/partial" "$state/sources"
cat > "$state/sources/trixie.sources" <<SOURCES
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$state/sources" -o "Dir::State::Lists=$state/lists"
      -o "Dir::Cache=$state/cache" -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
apt-get "${opts[@]}" update -qq
(cd "$state" && apt-get "${opts[@]}" download libonnxruntime-dev)
dpkg -x "$state"/libonnxruntime-dev_*.deb "$dest"
echo "fetch-ort-headers: unpacked $(basename "$state"/libonnxruntime-dev_*.deb) into $dest"
