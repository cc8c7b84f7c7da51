#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# campaign_ssh.sh POKELAB CAMPAIGN MODULE.o: tools/campaign --sshlogin against
# this machine over loopback (docs/testing.md, "Campaigns"). Starts an sshd of
# its own on a free 127.0.0.1 port with a throwaway host key and authorized
# key (stopped at exit), then:
#  - transfer mode: 6 runs (seeds 1-2 x default, a BUSTED policy and a
#    module policy) over ssh, the program and the module copied to a
#    directory of the test with --basefile: the table's counts, the records'
#    host commands naming the copied program and module, the replays naming
#    this machine's, the copies removed after;
#  - --remote-pokelab: the program at its own path, on the ssh host and on
#    this machine (":") together;
#  - transfer mode with ":" refused.
# Needs openssh-server, openssh-client, rsync and GNU parallel; exit 77 (meson:
# skipped) naming the package when one is missing. Not in the default setup:
#   meson test -C build --setup ssh --suite ssh
. "$(dirname "$0")/lib.sh"
campaign=$2
module=$(realpath "$3")
pokelab=$(realpath "$pokelab")
sshd=$(command -v sshd || echo /usr/sbin/sshd)
for need in "$sshd:openssh-server" ssh:openssh-client ssh-keygen:openssh-client rsync:rsync \
	    parallel:parallel; do
	command -v "${need%%:*}" >/dev/null && continue
	echo "campaign_ssh.sh: needs ${need%%:*} (Debian: apt-get install ${need#*:})"
	exit 77
done

# sshd's privilege separation directory, as the package's service would make it
made_run=
if [ ! -d /run/sshd ] && [ "$(id -u)" -eq 0 ]; then
	mkdir -p /run/sshd && made_run=1
fi
sshd_pid=
stop() {
	[ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null && wait "$sshd_pid" 2>/dev/null
	[ -n "$made_run" ] && rmdir /run/sshd 2>/dev/null
	rm -rf "$dir"
}
trap stop EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key" || fail "ssh-keygen (host key)"
ssh-keygen -q -t ed25519 -N '' -f "$dir/id" || fail "ssh-keygen (user key)"
cp "$dir/id.pub" "$dir/authorized_keys"
cat >"$dir/sshd_config" <<EOF
ListenAddress 127.0.0.1:$port
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
AllowUsers $(id -un)
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
EOF
echo "pokelab-loopback $(cat "$dir/host_key.pub")" >"$dir/known_hosts"
cat >"$dir/ssh_config" <<EOF
Host pokelab-loopback
	HostName 127.0.0.1
	Port $port
	User $(id -un)
	HostKeyAlias pokelab-loopback
	IdentityFile $dir/id
	IdentitiesOnly yes
	UserKnownHostsFile $dir/known_hosts
	StrictHostKeyChecking yes
	BatchMode yes
	LogLevel ERROR
EOF
"$sshd" -D -e -f "$dir/sshd_config" 2>"$dir/sshd.out" &
sshd_pid=$!
ssh="ssh -F $dir/ssh_config"
for _ in $(seq 50); do
	$ssh pokelab-loopback true 2>/dev/null && break
	kill -0 "$sshd_pid" 2>/dev/null || fail "sshd did not start"
	sleep 0.1
done
$ssh pokelab-loopback true 2>"$dir/ssh.out" || fail "no ssh login on 127.0.0.1:$port"

# row TABLE POLICY RUNS FAILURES REPORTS: TABLE has that row
row() {
	grep -qE "^\| $2 +\| +$3 \| +[0-9.]+ \| +$4 \| +0 \| $5 \|$" "$1" ||
		fail "no row '$2 $3 $4 $5' in $1: $(cat "$1")"
}

# Transfer mode: the copies run, the replays name this machine's program and module.
remote=$dir/remote
"$campaign" run --pokelab "$pokelab" --module "$module" --ssh "$ssh" \
	--sshlogin pokelab-loopback --remote-dir "$remote" --seeds 1-2 --durations 2 \
	--policies default --policy 'broken:pokelab.busted=no-sync-2' \
	--policy 'mod:--cpus 4 --nohz-full 2-3 --ct-defer v7 --module MODULE.o' -j 2 \
	--results "$dir/t.jsonl" >"$dir/t.out" 2>&1
[ $? -eq 1 ] || fail "the transfer campaign did not exit 1 (its BUSTED runs)"
row "$dir/t.out" default 2 0 -
row "$dir/t.out" broken 2 2 "torn fetch x2"
# (the module runs' verdicts are torture's business: 2 s is short for the companions)
grep -qE "^\| mod +\| +2 \|" "$dir/t.out" || fail "no row of 2 module runs"
# the replay: the host's command as it booted (--cpus), with this machine's program
grep -q "^    $pokelab torture --seed 1 --duration 2 --cpus 4 pokelab.busted=no-sync-2$" \
	"$dir/t.out" || fail "no replay of the host's command with this machine's pokelab"
python3 - "$dir/t.jsonl" "$remote" "$module" "$pokelab" <<'EOF' || fail "the records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
remote, module, pokelab = sys.argv[2:]
assert len(recs) == 6, recs
for r in recs:
	# the host ran the copy (torture names itself by /proc/self/exe)
	assert r['host_argv'][0] == remote + '/pokelab', r['host_argv']
	assert r['argv'][0] == pokelab, r['argv']
mods = [r for r in recs if r['policy'] == 'mod']
assert all(r['options']['module'] == remote + '/' + module.split('/')[-1] for r in mods), mods
assert all(r['argv'][r['argv'].index('--module') + 1] == module for r in mods), mods
assert all(r['argv'][1:4] == ['torture', '--seed', str(r['seed'])] for r in recs), recs
EOF
left=$(find "$remote" -type f 2>/dev/null)
[ -z "$left" ] || fail "the transferred files were left: $left"

# --remote-pokelab: the program at its own path, here (":") and over ssh.
"$campaign" run --pokelab "$pokelab" --remote-pokelab "$pokelab" --ssh "$ssh" \
	--sshlogin pokelab-loopback --sshlogin : --seeds 1-4 --durations 2 -j 1 \
	--results "$dir/s.jsonl" >"$dir/s.out" 2>&1 || fail "the shared-path campaign failed"
row "$dir/s.out" default 4 0 -
[ "$(wc -l <"$dir/s.jsonl")" -eq 4 ] || fail "expected 4 records"

# Transfer mode cannot name this machine as ":".
"$campaign" run --pokelab "$pokelab" --sshlogin pokelab-loopback,: --seeds 1 \
	--durations 2 >"$dir/colon.out" 2>&1
[ $? -eq 2 ] || fail "transfer mode with ':' was not refused"
grep -q 'name it by ssh' "$dir/colon.out" || fail "the refusal: $(cat "$dir/colon.out")"
exit 0
