#!/bin/sh
# Installs hearth's two programs, `hearth` and `hearthd`, from the newest
# release into ~/.local/bin (or $HEARTH_INSTALL_DIR), after checking that
# the release key signed the release's SHA256SUMS and that each program
# matches its digest there. Nothing is installed when a check fails.
#
#   curl -fsSL RELEASES/latest/download/install.sh | sh
#
# The release workflow writes the release address and key into the copy it
# publishes; this source copy takes them from HEARTH_RELEASES_URL and
# HEARTH_RELEASE_KEY instead. Needs curl or wget, gzip, openssl (3.0 or
# newer, for Ed25519) and sha256sum or shasum.
set -eu

address="__HEARTH_RELEASES_URL__"
key="__HEARTH_RELEASE_KEY__"
case "$address" in __*) address="${HEARTH_RELEASES_URL:-}" ;; esac
case "$key" in __*) key="${HEARTH_RELEASE_KEY:-}" ;; esac
into="${HEARTH_INSTALL_DIR:-$HOME/.local/bin}"

fail() {
    echo "install.sh: $*; nothing was installed" >&2
    exit 1
}

[ -n "$address" ] || fail "no release address (set HEARTH_RELEASES_URL)"
[ -n "$key" ] || fail "no release key (set HEARTH_RELEASE_KEY)"
command -v openssl >/dev/null 2>&1 || fail "openssl is needed to check the release's signature"
command -v gzip >/dev/null 2>&1 || fail "gzip is needed to unpack the programs"

case "$(uname -m)" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) fail "releases are built for x86_64 and aarch64, not $(uname -m): build hearth from source" ;;
esac
case "$(uname -s)" in
    Linux) target="$arch-unknown-linux-musl" ;;
    Darwin) target="$arch-apple-darwin" ;;
    *) fail "releases are built for Linux and macOS, not $(uname -s): build hearth from source" ;;
esac

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT INT TERM

fetch() {
    if command -v curl >/dev/null 2>&1; then
        curl -fsSL --retry 2 -o "$work/$1" "${address%/}/latest/download/$1" || fail "cannot download $1"
    elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$work/$1" "${address%/}/latest/download/$1" || fail "cannot download $1"
    else
        fail "curl or wget is needed to download the release"
    fi
}

digest() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        shasum -a 256 "$1" | cut -d' ' -f1
    fi
}

fetch SHA256SUMS
fetch SHA256SUMS.sig
# An Ed25519 public key in PEM: the fixed 12-byte SubjectPublicKeyInfo
# prefix (a whole number of base64 groups) followed by the 32-byte key.
printf -- '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA%s\n-----END PUBLIC KEY-----\n' "$key" >"$work/key.pem"
openssl base64 -d -A -in "$work/SHA256SUMS.sig" -out "$work/signature" 2>/dev/null ||
    fail "the release's signature is not base64"
openssl pkeyutl -verify -pubin -inkey "$work/key.pem" -rawin -in "$work/SHA256SUMS" \
    -sigfile "$work/signature" >/dev/null 2>&1 ||
    fail "the release's signature does not verify with the release key"

check() {
    listed="$(awk -v name="$1" '$2 == name { print $1 }' "$work/SHA256SUMS")"
    [ -n "$listed" ] || fail "the release lists no $1"
    [ "$(digest "$work/$1")" = "$listed" ] || fail "$1 does not match the digest the release lists"
}

fetch release.txt
check release.txt
for program in hearthd hearth; do
    fetch "$program-$target.gz"
    check "$program-$target.gz"
    gzip -dc "$work/$program-$target.gz" >"$work/$program" || fail "$program does not unpack"
    chmod 755 "$work/$program"
    "$work/$program" --version >/dev/null 2>&1 || fail "the new $program does not run here"
done

mkdir -p "$into"
for program in hearthd hearth; do
    cp "$work/$program" "$into/.$program.new"
    mv -f "$into/.$program.new" "$into/$program"
done
echo "installed $(head -n 1 "$work/release.txt") into $into"
case ":$PATH:" in
    *":$into:"*) ;;
    *) echo "add $into to your PATH (for example in ~/.profile: export PATH=\"$into:\$PATH\")" ;;
esac
echo "next: hearth setup"
