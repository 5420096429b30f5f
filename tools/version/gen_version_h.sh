#!/usr/bin/env bash
# Writes ember/version.h from a VERSION file holding MAJOR.MINOR.PATCH (and nothing else).
set -euo pipefail
v="$(tr -d '[:space:]' < "$1")"
if [[ ! "$v" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
  echo "gen_version_h: '$1' holds '$v', not MAJOR.MINOR.PATCH" >&2
  exit 1
fi
cat <<H
/* Generated from VERSION by tools/version/gen_version_h.sh: do not edit. */
#ifndef EMBER_VERSION_H_
#define EMBER_VERSION_H_
#define EMBER_VERSION_MAJOR ${BASH_REMATCH[1]}
#define EMBER_VERSION_MINOR ${BASH_REMATCH[2]}
#define EMBER_VERSION_PATCH ${BASH_REMATCH[3]}
#define EMBER_VERSION_STRING "${v}"
#endif /* EMBER_VERSION_H_ */
H
