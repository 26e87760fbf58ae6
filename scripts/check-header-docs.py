#!/usr/bin/env python3
"""scripts/check-header-docs.py — list the public functions of include/agentnest/*.h whose
comment lacks what STYLE.md asks of every public function: its ownership of returned memory
(a pointer result or a pointer-to-pointer out-parameter), its errors (an int result), its
units (a size, length, timeout or count parameter), its thread-safety and the standard it
follows.  The comment of a function is the one just above it, or above the run of prototypes
it belongs to (no blank line in between); thread-safety and the standard may also be said once
in the file's head comment, for every function of the file.

A word search, so a hint, not a verdict: a line it prints is a comment to read.  Prints
`FILE:LINE FUNCTION: what is missing`, then a count; exit status 0 always (it is a list).
Usage: scripts/check-header-docs.py [REPO]   (default: the repository this script is in)."""
import os
import re
import sys

OWNERSHIP = r'constant|free|owned|owner|caller|static|borrow|valid until|valid while|release|close|heap|malloc|points? into|the table|lives as long'
ERRORS = r'returns as|-e[a-z]+|errno|error|fail|refus|returns? 0|0 on success|negative|< 0|-1'
UNITS = r'\bms\b|millisecond|µs|second|bytes?|\bkib\b|\bmib\b|units?|count|number|entries|characters'
THREADS = r'thread|signal-safe|reentrant'
STANDARD = (r'\boci\b|rfc ?\d|posix|runtime-spec|json|runc|\bcdi\b|kernel|\(\d\)|linux|spec|mcp|openapi|http|'
            r'cgroup|utf-8|sha-?256|tar|landlock|seccomp|namespace|pep ')
PROTO = re.compile(r'^(?!typedef|static|#|\s|struct \w+ \{|enum \w+ \{)[\w\s\*]*?\b(an_\w+)\s*\(')
SIZED = re.compile(r'\b(u?int(8|16|32|64)_t|size_t|ssize_t|unsigned|long|int)\s+\**\w*'
                   r'(ms|_s\b|timeout|bytes|len|size|limit|max|grace|by|count|lifetime)\w*')


def comment_above(lines, i):
    """The comment ending on the line above i, skipping up over a run of prototypes."""
    k = i - 1
    while k >= 0:
        s = lines[k].strip()
        if s.endswith('*/'):
            j = k
            while j >= 0 and '/*' not in lines[j]:
                j -= 1
            return ' '.join(lines[j:k + 1])
        if s.endswith(';') or s.endswith(',') or (s and lines[k].startswith(' ')):
            k -= 1   # part of the previous prototype of the same group
            continue
        return ''
    return ''


def check(path):
    src = open(path, encoding='utf-8').read()
    head = re.match(r'\s*/\*.*?\*/', src, re.S)
    head = head.group(0).lower() if head else ''
    lines = src.split('\n')
    out = []
    i = 0
    while i < len(lines):
        m = PROTO.match(lines[i])
        if not m:
            i += 1
            continue
        name = m.group(1)
        j, proto = i, lines[i]
        while not proto.rstrip().endswith((';', '{')) and j + 1 < len(lines):
            j += 1
            proto += ' ' + lines[j].strip()
        if proto.rstrip().endswith('{'):   # an inline definition: not a prototype to document
            i = j + 1
            continue
        c = comment_above(lines, i).lower()
        ret = proto.split(name)[0]
        miss = []
        if not c:
            miss.append('no comment')
        else:
            if ('*' in ret or '**' in proto) and not re.search(OWNERSHIP, c):
                miss.append('ownership')
            if re.match(r'\s*(int|ssize_t)\b', ret) and not re.search(ERRORS, c):
                miss.append('errors')
            if SIZED.search(proto.split('(', 1)[1]) and not re.search(UNITS, c):
                miss.append('units')
            if not re.search(THREADS, c + ' ' + head):
                miss.append('thread-safety')
            if not re.search(STANDARD, c + ' ' + head):
                miss.append('standard')
        if miss:
            out.append('%s:%d %s: %s' % (os.path.relpath(path), i + 1, name, ', '.join(miss)))
        i = j + 1
    return out


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    inc = os.path.join(repo, 'include', 'agentnest')
    rows = []
    for f in sorted(os.listdir(inc)):
        if f.endswith('.h'):
            rows += check(os.path.join(inc, f))
    for r in rows:
        print(r)
    print('%d functions with something missing' % len(rows))


if __name__ == '__main__':
    main()
