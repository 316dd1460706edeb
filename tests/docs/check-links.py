#!/usr/bin/env python3
"""check-links.py - every relative link of the project's Markdown resolves.

Walks the repository's *.md files (README.md, docs/, proto/PROTOCOL.md,
deploy/README.md, the README files under tests/) and checks each relative
link and reference definition: the file or directory it names exists
inside the repository, and its #anchor, when the target is Markdown, is a
heading (or an explicit <a name> / id) of that file, with the anchors
GitHub makes: lower case, punctuation dropped, each space a hyphen, a
repeated heading suffixed -1, -2, ... Links inside fenced code blocks and
code spans are not links. Absolute URLs (https:, mailto:, ...) are not
fetched. A file path quoted in a code span outside fenced code
(`common/stages/sl_agg.c`: a path from the repository root into one of
its source folders) must exist too, unless it is a pattern (<, *, {, $).

    tests/docs/check-links.py [ROOT]      check ROOT (default: the repository)
    tests/docs/check-links.py --self-test check the checker on made-up files

Prints one line per broken link (file:line: target: why) and exits 1 when
there is one; `make check-docs` runs it (and its self-test) from `make test`.
"""
import os
import re
import sys
import tempfile
import unicodedata
import urllib.parse

SKIP_DIRS = {".git", "build", "node_modules"}          # never project docs
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*$")
CLOSING_HASHES = re.compile(r"[ \t]+#+$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
AUTOLINK = re.compile(r"<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*)>")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"|\sid=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# A path from the repository root quoted in prose: `common/base/sl_buf.h`.
QUOTED_PATH = re.compile(r"^(?:common|services|proto|tests|deploy|tools|docs)/[A-Za-z0-9_./-]*$")
MD_LINK_TEXT = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)")


def slug (text):
    """GitHub's anchor for a heading's text (github-slugger's rules)."""
    text = MD_LINK_TEXT.sub (r"\1", text)               # a link counts by its text
    text = text.replace ("`", "").replace ("*", "")     # code and emphasis marks
    text = re.sub (r"<[^>]+>", "", text)                # inline HTML tags
    out = []
    for c in text.strip ().lower ():
        if c == " ":
            out.append ("-")
        elif c in "-_" or unicodedata.category (c) [0] in "LNM":
            out.append (c)
    return "".join (out)


def scan (path):
    """The anchors of a Markdown file, its links as (line, target), and the
    repository paths its prose quotes as (line, path)."""
    anchors, links, quoted, seen = set (), [], [], {}
    fence = None
    with open (path, encoding="utf-8") as f:
        for number, line in enumerate (f, 1):
            m = FENCE.match (line)
            if fence:
                if m and m.group (1) [0] == fence [0] and len (m.group (1)) >= len (fence):
                    fence = None
                continue
            if m:
                fence = m.group (1)
                continue
            for a, b in HTML_ANCHOR.findall (line):
                anchors.add (a or b)
            h = HEADING.match (line)
            if h:
                base = slug (CLOSING_HASHES.sub ("", h.group (2)))
                count = seen.get (base, 0)
                seen [base] = count + 1
                anchors.add (base if count == 0 else "%s-%d" % (base, count))
            d = REF_DEF.match (line)
            if d:
                links.append ((number, d.group (1).strip ("<>")))
                continue
            for span in CODE_SPAN.finditer (line):
                if QUOTED_PATH.match (span.group (2).strip ()):
                    quoted.append ((number, span.group (2).strip ()))
            text = CODE_SPAN.sub ("", line)
            for target in INLINE_LINK.findall (text):
                links.append ((number, target.strip ("<>")))
            for target in AUTOLINK.findall (text):
                links.append ((number, target))
    return anchors, links, quoted


def markdown_files (root):
    for here, dirs, files in os.walk (root):
        dirs [:] = sorted (d for d in dirs if d not in SKIP_DIRS)
        for name in sorted (files):
            if name.endswith (".md"):
                yield os.path.join (here, name)


def check (root):
    """Every broken link under root, as 'file:line: target: why' lines."""
    root = os.path.realpath (root)
    files = list (markdown_files (root))
    scanned = {os.path.realpath (p): scan (p) for p in files}
    errors, count = [], 0
    for path in files:
        rel = os.path.relpath (path, root)
        for number, quoted in scanned [os.path.realpath (path)] [2]:
            count += 1
            if not os.path.exists (os.path.join (root, quoted)):
                errors.append ("%s:%d: `%s`: no such file (quoted)" % (rel, number, quoted))
        for number, target in scanned [os.path.realpath (path)] [1]:
            if SCHEME.match (target) or target.startswith ("//"):
                continue                                # not a relative link
            count += 1
            where, _, anchor = target.partition ("#")
            where = urllib.parse.unquote (where)
            if where.startswith ("/"):
                dest = os.path.join (root, where.lstrip ("/"))
            elif where:
                dest = os.path.join (os.path.dirname (path), where)
            else:
                dest = path
            dest = os.path.realpath (dest)
            if dest != root and not dest.startswith (root + os.sep):
                errors.append ("%s:%d: %s: outside the repository" % (rel, number, target))
                continue
            if not os.path.exists (dest):
                errors.append ("%s:%d: %s: no such file" % (rel, number, target))
                continue
            if not anchor or not dest.endswith (".md"):
                continue
            if dest not in scanned:                     # a Markdown file in a skipped folder
                scanned [dest] = scan (dest)
            if urllib.parse.unquote (anchor) not in scanned [dest] [0]:
                errors.append ("%s:%d: %s: no heading '#%s' in %s"
                               % (rel, number, target, anchor, os.path.relpath (dest, root)))
    return files, count, errors


def self_test ():
    """The checker finds what it must and passes what it must."""
    cases = {
        "README.md": "# Top\n\n## Any client — to any provider\n\n### `hb` (1): heart\n\n"
                     "## Again\n\n## Again\n\n"
                     "[ok](#any-client--to-any-provider) [ok](#hb-1-heart) [ok](#again-1)\n"
                     "[ok](docs/a.md#deep-section) [ok](docs/) [ok](docs/a.md)\n"
                     "[bad](#nowhere) [bad](docs/b.md) [bad](docs/a.md#Deep-Section)\n"
                     "[bad](../outside.md) [ok](https://example.com/x#y)\n"
                     "`[not a link](missing.md)`\n\n```\n[not a link](missing.md)\n`docs/gone.c`\n```\n"
                     "[ref]: docs/missing.md\n"
                     "`docs/a.md` `docs/gone.c` `docs/<name>.c` `build/bin` `docs/gone.c:12`\n",
        "docs/a.md": "# A\n\n## Deep section\n\n[ok](../README.md#top) [bad](../README.md#again-2)\n",
    }
    with tempfile.TemporaryDirectory () as root:
        for name, text in cases.items ():
            os.makedirs (os.path.join (root, os.path.dirname (name)), exist_ok=True)
            with open (os.path.join (root, name), "w", encoding="utf-8") as f:
                f.write (text)
        _, count, errors = check (root)
    wanted = ["README.md:13: #nowhere: no heading",
              "README.md:13: docs/b.md: no such file",
              "README.md:13: docs/a.md#Deep-Section: no heading",
              "README.md:14: ../outside.md: outside the repository",
              "README.md:21: docs/missing.md: no such file",
              "README.md:22: `docs/gone.c`: no such file (quoted)",
              "docs/a.md:5: ../README.md#again-2: no heading"]
    missed = [w for w in wanted if not any (e.startswith (w) for e in errors)]
    extra = [e for e in errors if not any (e.startswith (w) for w in wanted)]
    for line in missed:
        print ("self-test: not reported: " + line)
    for line in extra:
        print ("self-test: reported wrongly: " + line)
    if missed or extra or count != 15:
        print ("check-links self-test: FAILED (%d links and paths seen, 15 expected)" % count)
        return 1
    print ("check-links self-test: ok (7 broken links and paths of 15 found, none wrongly)")
    return 0


def main (argv):
    if argv [1:] == ["--self-test"]:
        return self_test ()
    root = argv [1] if len (argv) > 1 else os.path.join (os.path.dirname (os.path.abspath (__file__)), "..", "..")
    files, count, errors = check (root)
    for line in errors:
        print (line)
    if errors:
        print ("check-links: %d broken of %d relative links and quoted paths in %d Markdown files" % (len (errors), count, len (files)))
        return 1
    print ("check-links: %d relative links and quoted paths in %d Markdown files, every one resolves" % (count, len (files)))
    return 0


if __name__ == "__main__":
    sys.exit (main (sys.argv))
