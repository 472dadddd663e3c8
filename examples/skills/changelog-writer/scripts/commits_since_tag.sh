#!/usr/bin/env bash
# List commits since the latest tag (or a given ref), grouped by Conventional Commit type.
# Usage: commits_since_tag.sh [FROM_REF] [TO_REF]
set -euo pipefail

if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "not inside a git repository" >&2
  exit 2
fi

from="${1:-}"
to="${2:-HEAD}"
if [[ -z "$from" ]]; then
  from="$(git describe --tags --abbrev=0 "$to" 2>/dev/null || true)"
fi
if [[ -n "$from" ]]; then
  range="$from..$to"
  echo "# Changes in $range"
else
  range="$to"
  echo "# Changes up to $to (no tag found: whole history)"
fi

# One record per commit: hash, subject, body; separated by NUL-safe markers.
log="$(git log --no-merges --format='%h%x1f%s%x1f%b%x1e' "$range")"
if [[ -z "$log" ]]; then
  echo "no commits"
  exit 0
fi

declare -A groups
breaking=""
prs=""
order=(feat fix perf refactor docs test build ci chore revert other)
while IFS=$'\x1f' read -r -d $'\x1e' hash subject body; do
  hash="${hash#$'\n'}"
  type="other"
  is_breaking=""
  if [[ "$subject" =~ ^([a-z]+)(\([^\)]*\))?(!)?:\ (.*)$ ]]; then
    type="${BASH_REMATCH[1]}"
    [[ " ${order[*]} " == *" $type "* ]] || type="other"
    [[ -n "${BASH_REMATCH[3]}" ]] && is_breaking=1
  fi
  note="$(printf '%s\n' "$body" | sed -n 's/^BREAKING[ -]CHANGE: *//p' | head -1)"
  if [[ -n "$note" ]]; then
    breaking+="- $subject ($hash): $note"$'\n'
  elif [[ -n "$is_breaking" ]]; then
    breaking+="- $subject ($hash)"$'\n'
  fi
  if [[ "$subject" =~ \(#([0-9]+)\) ]]; then
    prs+="#${BASH_REMATCH[1]} "
  fi
  groups[$type]+="- $subject ($hash)"$'\n'
done <<<"$log"

if [[ -n "$breaking" ]]; then
  printf '\n## BREAKING CHANGES\n%s' "$breaking"
fi
for t in "${order[@]}"; do
  if [[ -n "${groups[$t]:-}" ]]; then
    printf '\n## %s\n%s' "$t" "${groups[$t]}"
  fi
done
if [[ -n "$prs" ]]; then
  printf '\n## Pull requests referenced\n%s\n' "$prs"
fi
