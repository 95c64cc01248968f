#!/bin/sh
# The container's entrypoint (see Dockerfile).
#
# Started as root (the image's default user), it makes the data and log folders writable
# for the app's user, then runs the command as that user. This is what makes
# `docker compose up` work on a fresh Linux host: Docker creates missing bind-mounted
# folders (./data, ./logs) owned by root, and the app must never run as root.
# Started as any other user (e.g. Kubernetes with runAsUser), it runs the command as is.
set -eu

APP_USER="${SWITCHBOARD_APP_USER:-switchboard}"  # the user the Dockerfile creates
DATA_DIR="${SWITCHBOARD_DATA_DIR:-/app/data}"

# The data dir holds the database, uploads, artifacts and keys: the app's user only.
private_data_dir() {
    chmod 700 "$DATA_DIR" 2>/dev/null \
        || echo "warning: could not make $DATA_DIR private (chmod 700); other users may read it" >&2
}

if [ "$(id -u)" != "0" ]; then
    if [ -d "$DATA_DIR" ] && [ -O "$DATA_DIR" ]; then
        private_data_dir
    fi
    exec "$@"
fi

uid="$(id -u "$APP_USER")"
gid="$(id -g "$APP_USER")"
for dir in "$DATA_DIR" "${SWITCHBOARD_LOG_DIR:-/app/logs}"; do
    mkdir -p "$dir" || true
    # Only what is not the app's already, so a large data dir costs a walk, not a rewrite.
    if ! find "$dir" \( ! -user "$uid" -o ! -group "$gid" \) -exec chown "$uid:$gid" {} + 2>/dev/null; then
        echo "warning: could not give $dir to uid $uid (read-only or root-squashed mount?);" \
             "the app will say what it cannot write" >&2
    fi
done
private_data_dir

if command -v setpriv >/dev/null 2>&1; then
    exec setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"
fi
# No setpriv (util-linux) in this base image: drop privileges with the image's Python.
exec python3 -c 'import os, sys
os.setgroups([]); os.setgid(int(sys.argv[2])); os.setuid(int(sys.argv[1]))
os.execvp(sys.argv[3], sys.argv[3:])' "$uid" "$gid" "$@"
