#!/bin/sh
# A session with the pqdb command on a small store: keys made, a store created and filled from a
# JSON Lines file, a checkpoint signed; status without and with the key, verify, migrate to
# another suite (retiring the old key generation), then status and verify again.
# Usage: sh session.sh [WORKDIR]      (default: a new temporary directory)
# PQDB names the command (default `npx pqdb`).
set -eu

work=${1:-$(mktemp -d)}
pqdb=${PQDB:-npx pqdb}
store=$work/store
keys=$work/keys

step() { printf '\n$ pqdb %s\n' "$*"; $pqdb "$@"; }

mkdir -p "$keys" && chmod 700 "$keys"
step keygen --out "$keys/recipient"
step keygen --out "$keys/signer" --signer
step init "$store" --recipient "$keys/recipient.pub" --unlock "$keys/recipient" --suite gcmsiv-hkdf256
i=1
while [ "$i" -le 20 ]; do
  printf '{"id":"note-%d","value":{"title":"note %d","body":"%s"}}\n' "$i" "$i" "$(printf '%*s' "$i" '' | tr ' ' x)"
  i=$((i + 1))
done > "$work/notes.jsonl"
step import "$store" notes "$work/notes.jsonl" --format jsonl --schema title:string,body:string \
  --unlock "$keys/recipient"
step checkpoint "$store" --signer "$keys/signer" --unlock "$keys/recipient"

# Without keys: what the manifest shows to anyone (generations, envelopes, checkpoints).
step status "$store"
# With the recipient secret key: the manifest authenticated, collections and suites, records counted.
step status "$store" --unlock "$keys/recipient"
# Every page, record, leaf, checkpoint signature and proof; exit 0 when everything holds.
step verify "$store" --unlock "$keys/recipient" --signer-public "$keys/signer.pub"
# Move every record to the CNSA 2.0 suite while the store stays usable, sign a checkpoint, and
# retire the old key generation (its pages deleted, its root destroyed).
step migrate "$store" --to cnsa2-gcm-hkdf384-commit --retire \
  --unlock "$keys/recipient" --signer "$keys/signer" --signer-public "$keys/signer.pub"
step status "$store" --unlock "$keys/recipient"
step verify "$store" --unlock "$keys/recipient" --signer-public "$keys/signer.pub"
printf '\nsession done: %s\n' "$work"
