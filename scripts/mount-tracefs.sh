#!/usr/bin/env bash
# Mounts tracefs at /sys/kernel/tracing when it is absent (fresh machines of
# this kind boot without it). Needs root; harmless when already mounted.
set -euo pipefail
if mountpoint -q /sys/kernel/tracing 2>/dev/null && [[ -e /sys/kernel/tracing/uprobe_events ]]; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "mount-tracefs: tracefs is not mounted; as root run: mount -t tracefs nodev /sys/kernel/tracing" >&2
  exit 1
fi
mount -t tracefs nodev /sys/kernel/tracing
echo "mount-tracefs: mounted tracefs at /sys/kernel/tracing"
