#!/bin/sh
# EMBER_LOG_ENABLED=0 must remove log strings from the binary, not just skip printing them.
# Arguments: the log_switch test binary built with logging, then the one built without.
set -eu
with_log=$1
without_log=$2
if ! grep -q EMBER_STRIP_SENTINEL "$with_log"; then
  echo "FAIL: the sentinel is missing even with logging on ($with_log): this check would prove nothing"
  exit 1
fi
if grep -q EMBER_STRIP_SENTINEL "$without_log"; then
  echo "FAIL: $without_log still holds the log text although EMBER_LOG_ENABLED=0"
  exit 1
fi
echo "ok: the log text is in the logging build and absent with EMBER_LOG_ENABLED=0"
