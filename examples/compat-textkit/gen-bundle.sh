#!/bin/sh
# gen-bundle.sh regenerates task/repo.bundle, the oracle's copy of the
# textkit repository, from the files under repo/. Author, committer, dates
# and configuration are fixed, so the base commit id printed at the end is
# the same on every machine (task.json pins it as repo.base). The bundle's
# pack bytes may differ between git versions, which changes the task digest
# but not the commit; the generated bundle is checked in.
#
# Usage: sh gen-bundle.sh   (from any directory; needs git >= 2.31)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null TZ=UTC LC_ALL=C
export GIT_AUTHOR_NAME="textkit maintainers" GIT_AUTHOR_EMAIL="maintainers@textkit.invalid"
export GIT_COMMITTER_NAME="textkit maintainers" GIT_COMMITTER_EMAIL="maintainers@textkit.invalid"
export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"

mkdir -p "$HOME" "$tmp/repo"
cp -R "$here/repo/." "$tmp/repo/"
# Only content and the executable bit reach git; make the modes explicit.
find "$tmp/repo" -type f -exec chmod 0644 {} +
cd "$tmp/repo"
git init -q -b main
git -c core.autocrlf=false -c core.fileMode=true add -A
git -c commit.gpgSign=false commit -q -m "textkit 0.3.0"
git bundle create -q --version=2 "$tmp/repo.bundle" main
mv "$tmp/repo.bundle" "$here/task/repo.bundle"
git rev-parse HEAD
