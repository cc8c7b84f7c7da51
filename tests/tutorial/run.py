#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# run.py SRC: run docs/tutorial.md ("Prototype a patch") in a copy of the
# tree at SRC and check that its output still says what the tutorial says.
#
# The copy holds SRC's tracked files as they are now, committed to a fresh
# git repository there (the tutorial's `git checkout` puts an edit back).
# In the tutorial, a ```console block holds "$ COMMAND" lines, each
# followed by the lines its output (stdout and stderr) must contain: one
# output line per shown line, "..." matching anything, the parts in order.
# "# exit N" after a command says it must exit N (default 0). A
# "<!-- tutorial-file: PATH -->" line puts the code block after it at PATH.
import os
import re
import shutil
import subprocess
import sys
import tempfile


def blocks(md):
    """(kind, payload) in order: ('file', (path, text)) or ('cmd', (cmd, status, want))."""
    lines = md.split('\n')
    i = 0
    pending_file = None
    while i < len(lines):
        m = re.match(r'<!-- tutorial-file: (\S+) -->', lines[i])
        if m:
            pending_file = m.group(1)
        elif lines[i].startswith('```'):
            kind = lines[i][3:].strip()
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith('```'):
                body.append(lines[i])
                i += 1
            if pending_file:
                yield 'file', (pending_file, '\n'.join(body) + '\n')
                pending_file = None
            elif kind == 'console':
                cmd = None
                for b in body:
                    if b.startswith('$ '):
                        if cmd:
                            yield 'cmd', cmd
                        c = b[2:]
                        status = 0
                        m = re.search(r'\s+# exit (\d+)$', c)
                        if m:
                            status = int(m.group(1))
                            c = c[:m.start()]
                        cmd = (c, status, [])
                    elif cmd and b.strip():
                        cmd[2].append(b)
                if cmd:
                    yield 'cmd', cmd
        i += 1


def matches(want, line):
    pos = 0
    for part in want.split('...'):
        k = line.find(part, pos)
        if k < 0:
            return False
        pos = k + len(part)
    return True


def main():
    src = os.path.abspath(sys.argv[1])
    # the kernel-tree section edits a copy of the reference 7.3 tree beside the
    # checkout: without it, skipped (77) in one line, as tests/port_patch does
    ref = os.path.join(src, '..', 'shared', 'reference', 'upstream', '7.3')
    if not os.path.isdir(ref):
        print(f'tutorial: {os.path.normpath(ref)}: no reference Linux 7.3 tree beside the '
              'checkout; skipped', file=sys.stderr)
        return 77
    tmp = tempfile.mkdtemp(prefix='pokelab-tutorial.')
    tree = os.path.join(tmp, 'tree')
    try:
        files = subprocess.run(['git', '-C', src, 'ls-files', '-z'], check=True,
                               capture_output=True).stdout.split(b'\0')
        for f in files:
            if not f:
                continue
            f = f.decode()
            if not os.path.isfile(os.path.join(src, f)):
                continue
            os.makedirs(os.path.dirname(os.path.join(tree, f)), exist_ok=True)
            shutil.copy2(os.path.join(src, f), os.path.join(tree, f))
        git = ['git', '-C', tree, '-c', 'user.name=tutorial', '-c', 'user.email=t@localhost']
        subprocess.run(git[:3] + ['init', '-q'], check=True)
        subprocess.run(git + ['add', '-A'], check=True)
        subprocess.run(git + ['commit', '-q', '-m', 'tutorial copy'], check=True)

        # $LINUX: a git copy of the reference Linux 7.3 tree beside the checkout
        ref = os.path.join(src, '..', 'shared', 'reference', 'upstream', '7.3')
        linux = os.path.join(tmp, 'linux')
        shutil.copytree(ref, linux)
        for d, _, fs in os.walk(linux):
            os.chmod(d, 0o755)
            for f in fs:
                os.chmod(os.path.join(d, f), 0o644)
        lgit = ['git', '-C', linux, '-c', 'user.name=tutorial', '-c', 'user.email=t@localhost']
        subprocess.run(lgit[:3] + ['init', '-q'], check=True)
        subprocess.run(lgit + ['add', '-A'], check=True)
        subprocess.run(lgit + ['commit', '-q', '-m', 'Linux 7.3 (reference files)'], check=True)
        env = dict(os.environ, LINUX=linux)

        with open(os.path.join(tree, 'docs/tutorial.md')) as f:
            md = f.read()
        n = 0
        for kind, payload in blocks(md):
            if kind == 'file':
                path, text = payload
                with open(os.path.join(tree, path), 'w') as f:
                    f.write(text)
                print(f'tutorial: wrote {path}', flush=True)
                continue
            cmd, status, want = payload
            n += 1
            print(f'tutorial: $ {cmd}', flush=True)
            r = subprocess.run(['sh', '-c', cmd], cwd=tree, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
            out = r.stdout.split('\n')
            if r.returncode != status:
                sys.stderr.write(f'tutorial: "{cmd}" exited {r.returncode}, the tutorial '
                                 f'says {status}\n' + '\n'.join(out[-30:]) + '\n')
                return 1
            for w in want:
                if not any(matches(w, line) for line in out):
                    sys.stderr.write(f'tutorial: "{cmd}": no output line like "{w}"\n' +
                                     '\n'.join(out[-30:]) + '\n')
                    return 1
        print(f'tutorial: {n} commands ran and said what docs/tutorial.md shows')
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
