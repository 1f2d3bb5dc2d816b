#!/usr/bin/env bash
# clusters/loopback_ssh.sh: OPT-IN (no test or CI runs it). Lets `ray up clusters/local.yaml` reach
# this machine over SSH, as Ray's local provider insists on, even for one machine.
#
#   bash clusters/loopback_ssh.sh           # set up the loopback SSH (idempotent, re-runnable)
#   bash clusters/loopback_ssh.sh --demo    # set up, then ray up / ray submit the smoke sweep / ray down
#   bash clusters/loopback_ssh.sh --undo    # take it all away again
#
# Needs root (to apt-get install openssh-server + rsync and start an sshd on port 22), or an sshd
# already answering on 127.0.0.1:22 that accepts the key below. Ray's SSH runner has no port
# setting, hence port 22. The setup:
#  1. installs openssh-server and rsync if missing (with a temporary policy-rc.d so the package
#     never starts its own sshd on 0.0.0.0);
#  2. makes ~/.ssh/psedual_loopback (ed25519, no passphrase) and adds its .pub to authorized_keys;
#  3. starts a separate sshd from /etc/ssh/psedual-loopback/sshd_config: ListenAddress 127.0.0.1,
#     keys only, AllowUsers you, and `SetEnv PSEDUAL_VENV=<repo>/.venv RAY_AUTH_MODE=disabled`;
#  4. adds 127.0.0.1 to ~/.ssh/known_hosts (ssh-keyscan);
#  5. appends a marked, guarded block to ~/.bashrc that activates $PSEDUAL_VENV only when it is
#     set, i.e. only in sessions of that sshd. Ray runs every remote command, `python` of
#     `ray submit` included, as `bash --login -c -i 'source ~/.bashrc; ...'`, and /etc/profile
#     resets PATH, so a startup file is the one place a venv can be put on that PATH;
#  6. checks `ssh -i ~/.ssh/psedual_loopback $USER@127.0.0.1 true` and which python/ray it finds.
# --demo also refuses if a Ray is already running here (`ray up`/`ray down` run `ray stop`,
# which stops every Ray of this user), then runs, from the repo root, with a temp copy of
# clusters/local.yaml whose ssh_user is you, and results in a fresh /tmp/psedual-loopback-results.*:
#   ray up -y --disable-usage-stats; ray submit ... tune.py --space psedual-cluster/search_spaces/smoke.yaml
#   --address auto --storage ...; ray down -y (also on failure). `ray submit` runs
#   `python ~/tune.py` in the head's home, so --space is relative to ~ (the repo is ~/psedual-cluster).
# Undo (--undo): stops that sshd, deletes /etc/ssh/psedual-loopback, the ~/.bashrc block, the
# authorized_keys line, the 127.0.0.1 known_hosts entries and what ray up/submit left in ~
# (psedual-cluster/, tune.py, ray_bootstrap_config.yaml, ray_bootstrap_key.pem). It keeps the
# key pair and the packages: `rm ~/.ssh/psedual_loopback{,.pub}`, `apt-get remove openssh-server`.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${PSEDUAL_VENV:-$REPO/.venv}
SSH_USER=$(id -un)
KEY=$HOME/.ssh/psedual_loopback
CONF_DIR=/etc/ssh/psedual-loopback
CONF=$CONF_DIR/sshd_config
PIDFILE=/run/psedual-loopback-sshd.pid
BEGIN_MARK='# >>> psedual loopback (clusters/loopback_ssh.sh --undo removes this block) >>>'
END_MARK='# <<< psedual loopback <<<'
SSH_OPTS=(-i "$KEY" -o BatchMode=yes -o ConnectTimeout=5 -o IdentitiesOnly=yes)

say() { printf '[loopback] %s\n' "$*"; }
die() { printf '[loopback] error: %s\n' "$*" >&2; exit 1; }
as_root() { [ "$(id -u)" -eq 0 ] || die "$1 needs root (or an sshd on 127.0.0.1:22 that accepts $KEY.pub)"; }
our_sshd_pid() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null && cat "$PIDFILE"; }
port22_open() { (exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null; }
ssh_ok() { ssh "${SSH_OPTS[@]}" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
               "$SSH_USER@127.0.0.1" true 2>/dev/null; }
drop_block() {  # delete our marked block from ~/.bashrc, if there
    [ -f "$HOME/.bashrc" ] && grep -qxF "$BEGIN_MARK" "$HOME/.bashrc" || return 0
    local tmp; tmp=$(mktemp)
    awk -v b="$BEGIN_MARK" -v e="$END_MARK" '$0==b{skip=1} !skip{print} $0==e{skip=0}' "$HOME/.bashrc" >"$tmp"
    cat "$tmp" >"$HOME/.bashrc" && rm -f "$tmp"
}

install_packages() {
    local missing=()
    [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
    command -v rsync >/dev/null || missing+=(rsync)
    command -v ssh-keyscan >/dev/null || missing+=(openssh-client)
    [ ${#missing[@]} -eq 0 ] && { say "packages: openssh-server, rsync already installed"; return; }
    as_root "installing ${missing[*]}"
    say "apt-get install ${missing[*]}"
    local policy_made=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then  # keep the package from starting sshd on 0.0.0.0:22
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
        policy_made=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    [ $policy_made -eq 0 ] || rm -f /usr/sbin/policy-rc.d
}

make_key() {
    mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh"
    if [ -f "$KEY" ]; then say "key: $KEY exists"; else
        ssh-keygen -q -t ed25519 -N '' -C "psedual-loopback $SSH_USER@$(hostname)" -f "$KEY"
        say "key: made $KEY"
    fi
    touch "$HOME/.ssh/authorized_keys" && chmod 600 "$HOME/.ssh/authorized_keys"
    if grep -qxF "$(cat "$KEY.pub")" "$HOME/.ssh/authorized_keys"; then say "authorized_keys: has the key"
    else cat "$KEY.pub" >>"$HOME/.ssh/authorized_keys"; say "authorized_keys: added $KEY.pub"; fi
}

start_sshd() {
    local pid; pid=$(our_sshd_pid || true)
    if [ -z "$pid" ] && port22_open; then
        ssh_ok || die "something else listens on 127.0.0.1:22 and refuses $KEY; stop it or authorize the key"
        say "sshd: an existing sshd on 127.0.0.1:22 accepts the key; not starting another"
        say "  (remote python/ray come from its PATH unless it sets PSEDUAL_VENV=$VENV, see below)"
        return
    fi
    as_root "starting sshd"
    mkdir -p "$CONF_DIR" /run/sshd && chmod 700 "$CONF_DIR" && chmod 755 /run/sshd
    [ -f "$CONF_DIR/ssh_host_ed25519_key" ] ||
        ssh-keygen -q -t ed25519 -N '' -C psedual-loopback-host -f "$CONF_DIR/ssh_host_ed25519_key"
    local new; new=$(mktemp)
    cat >"$new" <<EOF
# written by $REPO/clusters/loopback_ssh.sh: SSH on 127.0.0.1 only, for ray up clusters/local.yaml
ListenAddress 127.0.0.1
Port 22
HostKey $CONF_DIR/ssh_host_ed25519_key
PidFile $PIDFILE
AllowUsers $SSH_USER
PermitRootLogin prohibit-password
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile .ssh/authorized_keys
UsePAM no
X11Forwarding no
MaxSessions 30
MaxStartups 30:30:60
SetEnv PSEDUAL_VENV=$VENV RAY_AUTH_MODE=disabled
Subsystem sftp internal-sftp
EOF
    local changed=1
    if [ -f "$CONF" ] && cmp -s "$new" "$CONF"; then changed=0; rm -f "$new"; else mv "$new" "$CONF"; chmod 600 "$CONF"; fi
    /usr/sbin/sshd -t -f "$CONF"
    if [ -n "$pid" ] && [ $changed -eq 0 ]; then say "sshd: running (pid $pid), $CONF unchanged"
    elif [ -n "$pid" ]; then kill -HUP "$pid"; sleep 1; say "sshd: reloaded (pid $pid) with new $CONF"
    else
        /usr/sbin/sshd -f "$CONF"
        for _ in 1 2 3 4 5 6 7 8 9 10; do port22_open && break; sleep 0.5; done
        say "sshd: started, pid $(cat "$PIDFILE"), listening on 127.0.0.1:22 only ($CONF)"
    fi
}

trust_host() {
    local kh=$HOME/.ssh/known_hosts scanned
    touch "$kh" && chmod 600 "$kh"
    scanned=$(ssh-keyscan -T 5 -t ed25519 127.0.0.1 2>/dev/null | grep -v '^#') || die "ssh-keyscan 127.0.0.1 failed"
    if ssh-keygen -F 127.0.0.1 -f "$kh" 2>/dev/null | grep -qF "$(cut -d' ' -f2- <<<"$scanned")"; then
        say "known_hosts: has 127.0.0.1"
    else
        ssh-keygen -R 127.0.0.1 -f "$kh" >/dev/null 2>&1 || true
        printf '%s\n' "$scanned" >>"$kh" && say "known_hosts: added 127.0.0.1"
    fi
}

add_bashrc_hook() {
    drop_block
    cat >>"$HOME/.bashrc" <<EOF
$BEGIN_MARK
# Only in sessions of the loopback sshd, which sets PSEDUAL_VENV (SetEnv in $CONF):
# Ray's local provider runs \`ray\` and \`python\` there through a login shell.
if [ -n "\${PSEDUAL_VENV-}" ] && [ -f "\$PSEDUAL_VENV/bin/activate" ]; then . "\$PSEDUAL_VENV/bin/activate"; fi
$END_MARK
EOF
    say "~/.bashrc: guarded block present (acts only when PSEDUAL_VENV is set)"
}

check() {
    ssh "${SSH_OPTS[@]}" "$SSH_USER@127.0.0.1" true || die "ssh -i $KEY $SSH_USER@127.0.0.1 true failed"
    say "check: ssh -i $KEY $SSH_USER@127.0.0.1 true: ok"
    local found
    found=$(ssh "${SSH_OPTS[@]}" "$SSH_USER@127.0.0.1" \
        "bash --login -c -i 'source ~/.bashrc; command -v python ray; echo RAY_AUTH_MODE=\${RAY_AUTH_MODE-unset}'" 2>/dev/null | tail -3)
    say "check: Ray's remote login shell finds: $(tr '\n' ' ' <<<"$found")"
    grep -qxF "$VENV/bin/python" <<<"$found" || say "warning: remote python is not $VENV/bin/python"
}

undo() {
    local pid; pid=$(our_sshd_pid || true)
    if [ -n "$pid" ]; then kill "$pid"; say "sshd: stopped pid $pid"; fi
    rm -rf "$CONF_DIR" "$PIDFILE" && say "removed $CONF_DIR"
    drop_block && say "~/.bashrc: block removed"
    if [ -f "$KEY.pub" ] && [ -f "$HOME/.ssh/authorized_keys" ]; then
        grep -vxF "$(cat "$KEY.pub")" "$HOME/.ssh/authorized_keys" >"$HOME/.ssh/authorized_keys.tmp" || true
        cat "$HOME/.ssh/authorized_keys.tmp" >"$HOME/.ssh/authorized_keys" && rm -f "$HOME/.ssh/authorized_keys.tmp"
        say "authorized_keys: key line removed"
    fi
    [ -f "$HOME/.ssh/known_hosts" ] && ssh-keygen -R 127.0.0.1 -f "$HOME/.ssh/known_hosts" >/dev/null 2>&1 || true
    rm -rf "$HOME/psedual-cluster" "$HOME/tune.py" "$HOME/ray_bootstrap_config.yaml" "$HOME/ray_bootstrap_key.pem"
    say "removed the ray up/submit copies in ~; kept $KEY (rm $KEY $KEY.pub) and the packages"
}

demo() {
    local ray=$VENV/bin/ray
    if pgrep -x raylet >/dev/null || pgrep -x gcs_server >/dev/null; then
        die "a Ray is running on this machine; ray up/down would stop it (ray stop). Stop it first."
    fi
    local tmp storage; tmp=$(mktemp -d /tmp/psedual-loopback-yaml.XXXXXX)
    storage=$(mktemp -d /tmp/psedual-loopback-results.XXXXXX)
    sed "s/^\(  ssh_user:\) YOUR_USER/\1 $SSH_USER/" "$REPO/clusters/local.yaml" >"$tmp/local.yaml"
    grep -q "ssh_user: $SSH_USER" "$tmp/local.yaml" || die "could not set ssh_user in $tmp/local.yaml"
    cd "$REPO"  # file_mounts' `.` is the working directory
    export RAY_AUTH_MODE=disabled
    local t0 t1 t2 t3 rc=0
    down() { "$ray" down -y "$tmp/local.yaml" || true; }
    trap 'say "failed; running ray down"; down' ERR
    trap 'say "interrupted; running ray down"; down; exit 130' INT TERM
    say "== ray up -y --disable-usage-stats $tmp/local.yaml"
    t0=$(date +%s); "$ray" up -y --disable-usage-stats "$tmp/local.yaml"; t1=$(date +%s)
    say "wall: ray up $((t1 - t0)) s"
    say "== ray submit $tmp/local.yaml tune.py --space psedual-cluster/search_spaces/smoke.yaml --address auto --storage $storage"
    "$ray" submit "$tmp/local.yaml" tune.py --space psedual-cluster/search_spaces/smoke.yaml \
        --address auto --storage "$storage" || rc=$?
    t2=$(date +%s); say "wall: ray submit $((t2 - t1)) s (exit $rc)"
    trap - ERR INT TERM
    say "== ray down -y $tmp/local.yaml"
    down; t3=$(date +%s)
    say "wall: up $((t1 - t0)) s, submit $((t2 - t1)) s, down $((t3 - t2)) s; results in $storage"
    rm -rf "$tmp"
    return $rc
}

case "${1:-}" in
    "" | --demo)
        install_packages; make_key; start_sshd; trust_host; add_bashrc_hook; check
        say "ready: ray up clusters/local.yaml with ssh_user: $SSH_USER (sshd left running; --undo stops it)"
        if [ "${1:-}" = --demo ]; then demo; fi ;;
    --undo) undo ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
    *) die "unknown argument $1 (try --help)" ;;
esac
