#!/bin/sh
# A session with the pqdb command on a small store: status without and with the key, verify,
# migrate to another suite (retiring the old key generation), then status and verify again.
# Usage: sh session.sh [WORKDIR]      (default: a new temporary directory)
# PQDB names the command (default `npx pqdb`); the store is created by create-store.mjs.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
work=${1:-$(mktemp -d)}
pqdb=${PQDB:-npx pqdb}
store=$work/store
keys=$work/keys

step() { printf '\n$ pqdb %s\n' "$*"; $pqdb "$@"; }

node "$here/create-store.mjs" "$store" "$keys"

# Without keys: what the manifest shows to anyone (generations, envelopes, checkpoints).
step status "$store"
# With the recipient secret key: the manifest authenticated, collections and suites, records counted.
step status "$store" --unlock "$keys/recipient.key"
# Every page, record, leaf, checkpoint signature and proof; exit 0 when everything holds.
step verify "$store" --unlock "$keys/recipient.key" --signer-public "$keys/signer.pub"
# Move every record to the CNSA 2.0 suite while the store stays usable, sign a checkpoint, and
# retire the old key generation (its pages deleted, its root destroyed).
step migrate "$store" --to cnsa2-gcm-hkdf384-commit --retire \
  --unlock "$keys/recipient.key" --signer "$keys/signer.key" --signer-public "$keys/signer.pub"
step status "$store" --unlock "$keys/recipient.key"
step verify "$store" --unlock "$keys/recipient.key" --signer-public "$keys/signer.pub"
printf '\nsession done: %s\n' "$work"
