#!/usr/bin/env python3
"""check-layers.py - every #include follows the order of common/LAYERS.

common/LAYERS lists the folders of the libraries from the bottom up, one
a line (proto/ among them, services/ on top); a file may include files of
its own folder and of the folders listed before it, never of one listed
after it. A folder's subfolders are part of it (common/dialects/openai/
is common/dialects). Checked, for every .c and .h file under the listed
folders:

  - each quoted #include is a path from the repository root (the Makefile
    passes -I.), into a listed folder: its own or one below it;
  - a program's folder (services/<name>/) includes nothing of another
    program's folder (a library two programs use lives in common/), nor
    anything under tests/;

and, for the order itself and what mirrors it:

  - every folder of common/ is listed, once, and every folder listed
    exists;
  - docs/architecture.md's layout section lists the folders of common/ in
    the order of the file;
  - a unit test names the file it tests, on the same path:
    tests/unit/<dir>/test_<name>[_<aspect>].c beside <dir>/<name>.c or .h,
    or tests/unit/<dir>/test_<folder>.c for a suite of the whole folder.

Includes inside comments and string literals are not includes. There is no
list of exceptions: an include against the order is fixed in the code.

    tests/layers/check-layers.py [ROOT]      check ROOT (default: the repository)
    tests/layers/check-layers.py --self-test check the checker on made-up files

Prints one line per fault (file:line: what) and exits 1 when there is one;
`make check-layers` runs it (and its self-test) from `make test`.
"""
import os
import re
import sys
import tempfile

LAYERS = os.path.join ("common", "LAYERS")
ARCHITECTURE = os.path.join ("docs", "architecture.md")
LAYOUT_HEADING = "## Layout of the repository"
SERVICES = "services"
TESTS = "tests"
UNIT = os.path.join ("tests", "unit")
SOURCE = (".c", ".h")
SKIP_DIRS = {".git", "build", "node_modules"}
INCLUDE = re.compile (r"^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\"")
INCLUDE_HEAD = re.compile (r"^[ \t]*#[ \t]*include[ \t]*$")
# A folder of common/ in the layout section: two spaces, its name, a slash.
LAYOUT_FOLDER = re.compile (r"^  ([A-Za-z0-9_]+)/(?:\s|$)")


def read_layers (root):
    """The folders of common/LAYERS in order, with the line of each, and the
    faults of the file itself."""
    layers, faults, seen = [], [], set ()
    path = os.path.join (root, LAYERS)
    if not os.path.isfile (path):
        return [], ["%s:1: no such file: the order of the libraries is missing" % LAYERS]
    with open (path, encoding="utf-8") as f:
        for number, line in enumerate (f, 1):
            words = line.split ("#", 1) [0].split ()
            if not words:
                continue
            folder = words [0].rstrip ("/")
            if folder in seen:
                faults.append ("%s:%d: %s is listed twice" % (LAYERS, number, folder))
                continue
            seen.add (folder)
            layers.append ((folder, number))
            if not os.path.isdir (os.path.join (root, folder)):
                faults.append ("%s:%d: %s: no such folder" % (LAYERS, number, folder))
    common = os.path.join (root, "common")
    for name in sorted (os.listdir (common)) if os.path.isdir (common) else []:
        folder = "common/" + name
        if os.path.isdir (os.path.join (common, name)) and folder not in seen:
            faults.append ("%s:1: %s is not listed: say where it stands in the order" % (LAYERS, folder))
    return layers, faults


def strip_comments (text):
    """text with its comments and string and character literals blanked,
    line breaks kept (so line numbers stay); the file name of an #include
    line is kept."""
    out, i, n, line_start = [], 0, len (text), 0
    while i < n:
        c = text [i]
        if c == "\n":
            line_start = i + 1
        if text.startswith ("/*", i):
            end = text.find ("*/", i + 2)
            end = n if end < 0 else end + 2
        elif text.startswith ("//", i):
            end = text.find ("\n", i)
            end = n if end < 0 else end
        elif c == "\"" and INCLUDE_HEAD.match (text [line_start:i]):
            end = text.find ("\"", i + 1)
            end = n if end < 0 else end + 1
            out.append (text [i:end])
            i = end
            continue
        elif c in "\"'":
            end = i + 1
            while end < n and text [end] not in (c, "\n"):
                end += 2 if text [end] == "\\" else 1
            end = min (end + 1, n) if end < n and text [end] == c else end
        else:
            out.append (c)
            i += 1
            continue
        blank = re.sub (r"[^\n]", " ", text [i:end])
        if "\n" in blank:
            line_start = i + blank.rindex ("\n") + 1
        out.append (blank)
        i = end
    return "".join (out)


def layer_of (path, layers):
    """The listed folder a path from the root belongs to (the longest that
    holds it), or None."""
    best = None
    for folder, _ in layers:
        if path == folder or path.startswith (folder + "/"):
            if best is None or len (folder) > len (best):
                best = folder
    return best


def service_of (path):
    """services/<name>/... -> name, else None."""
    parts = path.split ("/")
    return parts [1] if len (parts) > 2 and parts [0] == SERVICES else None


def source_files (root, top):
    for here, dirs, files in os.walk (os.path.join (root, top)):
        dirs [:] = sorted (d for d in dirs if d not in SKIP_DIRS)
        for name in sorted (files):
            if name.endswith (SOURCE):
                yield os.path.relpath (os.path.join (here, name), root).replace (os.sep, "/")


def check_includes (root, layers):
    """(includes seen, files seen, faults) over every source of the listed
    folders."""
    rank = {folder: i for i, (folder, _) in enumerate (layers)}
    tops = {folder.split ("/") [0] for folder, _ in layers} | {TESTS}
    tops_seen, files, count, faults = set (), 0, 0, []
    for folder, _ in layers:
        top = folder.split ("/") [0]
        if top in tops_seen or not os.path.isdir (os.path.join (root, top)):
            continue
        tops_seen.add (top)
        for path in source_files (root, top):
            own = layer_of (path, layers)
            if own is None:
                continue                        #  an unlisted folder: reported as such
            files += 1
            with open (os.path.join (root, path), encoding="utf-8", errors="replace") as f:
                text = strip_comments (f.read ())
            for number, line in enumerate (text.split ("\n"), 1):
                m = INCLUDE.match (line)
                if not m:
                    continue
                count += 1
                target = m.group (1)
                fault = _include_fault (path, own, target, layers, rank, tops)
                if fault:
                    faults.append ("%s:%d: includes %s: %s" % (path, number, target, fault))
    return count, files, faults


def _include_fault (path, own, target, layers, rank, tops):
    """Why path (of folder own) may not include target, or None."""
    if target.split ("/") [0] not in tops or target.startswith ("/") or "/../" in "/" + target + "/":
        return "not a path from the repository root"
    if target.startswith (TESTS + "/"):
        return "a test's file; code never includes tests"
    theirs = layer_of (target, layers)
    if theirs is None:
        return "in no folder of %s" % LAYERS
    if rank [theirs] > rank [own]:
        return "%s is above %s in %s" % (theirs, own, LAYERS)
    mine, other = service_of (path), service_of (target)
    if mine and other and mine != other:
        return "another program's folder (services/%s): a library two programs use lives in common/" % other
    return None


def check_layout (root, layers):
    """docs/architecture.md's layout section lists the folders of common/
    in the order of common/LAYERS."""
    path = os.path.join (root, ARCHITECTURE)
    wanted = [folder.split ("/", 1) [1] for folder, _ in layers if folder.startswith ("common/")]
    if not os.path.isfile (path):
        return ["%s:1: no such file" % ARCHITECTURE]
    listed, in_section, in_block = [], False, False
    with open (path, encoding="utf-8") as f:
        for number, line in enumerate (f, 1):
            if line.startswith ("#") and not in_block:
                in_section = line.rstrip () == LAYOUT_HEADING
                continue
            if in_section and line.startswith ("```"):
                in_block = not in_block
                continue
            if in_section and in_block:
                m = LAYOUT_FOLDER.match (line)
                if m:
                    listed.append ((m.group (1), number))
    if not listed:
        return ["%s:1: no folder of common/ in its section '%s'" % (ARCHITECTURE, LAYOUT_HEADING [3:])]
    faults = []
    for i, (name, number) in enumerate (listed):
        if i >= len (wanted) or name != wanted [i]:
            faults.append ("%s:%d: the layout lists common/%s where %s has %s"
                           % (ARCHITECTURE, number, name, LAYERS,
                              "common/" + wanted [i] if i < len (wanted) else "no more folders"))
            return faults                       #  one misplaced folder shifts the rest
    for name in wanted [len (listed):]:
        faults.append ("%s:%d: the layout does not list common/%s" % (ARCHITECTURE, listed [-1] [1], name))
    return faults


def check_mirror (root):
    """(unit tests seen, faults): each names a file on its own path."""
    unit = os.path.join (root, UNIT)
    count, faults = 0, []
    for path in source_files (root, UNIT) if os.path.isdir (unit) else []:
        name = os.path.basename (path)
        if not (name.startswith ("test_") and name.endswith (".c")):
            continue                            #  a fixture the tests share
        count += 1
        folder = os.path.dirname (path) [len (UNIT) + 1:]
        stem = name [len ("test_"):-len (".c")]
        if stem == os.path.basename (folder):
            continue                            #  the suite of the whole folder
        parts = stem.split ("_")
        if not any (os.path.isfile (os.path.join (root, folder, "_".join (parts [:k]) + ext))
                    for k in range (len (parts), 0, -1) for ext in SOURCE):
            faults.append ("%s:1: tests no file: no %s/%s.c or .h (nor one its name begins with)"
                           % (path, folder, stem))
    return count, faults


def check (root):
    """(summary, faults) for the tree at root."""
    layers, faults = read_layers (root)
    includes, files, include_faults = check_includes (root, layers)
    tests, mirror_faults = check_mirror (root)
    faults += include_faults + (check_layout (root, layers) if layers else []) + mirror_faults
    summary = "%d includes in %d files, %d layers, %d unit tests" % (includes, files, len (layers), tests)
    return summary, faults


def self_test ():
    """The checker finds what it must and passes what it must."""
    files = {
        "common/LAYERS": "# the order\ncommon/base\nproto   # the codec\ncommon/http\ncommon/dialects\n"
                         "common/gone\ncommon/stages\ncommon/base\nservices\n",
        "common/base/sl_a.h": "#include <stdio.h>\n#include \"common/base/sl_b.h\"\n",
        "common/base/sl_b.c": "#include \"common/base/sl_a.h\"\n#include \"common/http/sl_h.h\"\n",
        "common/http/sl_h.h": "",
        "common/http/sl_h.c": "#include \"common/base/sl_a.h\"\n"
                              "#  include \"proto/sl_msg.h\"\n"
                              "/* #include \"common/stages/sl_s.h\" */\n"
                              "// #include \"common/stages/sl_s.h\"\n"
                              "/* a comment\n#include \"common/stages/sl_s.h\"\n*/\n"
                              "static const char *s = \"#include \\\"common/stages/sl_s.h\\\"\";\n"
                              "static const char c = '\"';\n"
                              "static const char *g = \"a/*\";\n"
                              "#include \"common/stages/sl_s.h\"\n"
                              "#include \"sl_local.h\"\n",
        "common/dialects/sl_d.h": "",
        "common/dialects/openai/sl_o.c": "#include \"common/dialects/sl_d.h\"\n"
                                         "#include \"common/stages/sl_s.h\"\n",
        "common/stages/sl_s.h": "#include \"common/dialects/sl_d.h\"\n#include \"common/base/../stages/sl_s.h\"\n",
        "common/extra/sl_x.c": "#include \"common/stages/sl_s.h\"\n",
        "proto/sl_msg.h": "",
        "proto/sl_msg.c": "#include \"proto/sl_msg.h\"\n#include \"common/http/sl_h.h\"\n",
        "services/alpha/sl_a.h": "",
        "services/alpha/main.c": "#include \"services/alpha/sl_a.h\"\n#include \"services/beta/sl_b.h\"\n"
                                 "#include \"common/stages/sl_s.h\"\n#include \"tests/unit/fixture.h\"\n",
        "services/beta/sl_b.h": "#include \"services/beta/sl_b.h\"\n",
        "tests/unit/fixture.h": "",
        "tests/unit/common/base/test_sl_a.c": "",
        "tests/unit/common/base/test_sl_a_props.c": "",
        "tests/unit/common/base/test_sl_zz.c": "",
        "tests/unit/common/dialects/test_dialects.c": "",
        "tests/unit/common/dialects/openai/test_sl_o.c": "",
        "docs/architecture.md": "# A\n\n## Layout of the repository\n\n```\ncommon/   the libraries\n"
                                "  base/     base\n  dialects/ dialects\n  http/     http\n```\n",
    }
    wanted = ["common/LAYERS:6: common/gone: no such folder",
              "common/LAYERS:8: common/base is listed twice",
              "common/LAYERS:1: common/extra is not listed",
              "common/base/sl_b.c:2: includes common/http/sl_h.h: common/http is above common/base",
              "common/http/sl_h.c:11: includes common/stages/sl_s.h: common/stages is above common/http",
              "common/http/sl_h.c:12: includes sl_local.h: not a path from the repository root",
              "common/dialects/openai/sl_o.c:2: includes common/stages/sl_s.h: common/stages is above common/dialects",
              "common/stages/sl_s.h:2: includes common/base/../stages/sl_s.h: not a path",
              "proto/sl_msg.c:2: includes common/http/sl_h.h: common/http is above proto",
              "services/alpha/main.c:2: includes services/beta/sl_b.h: another program's folder",
              "services/alpha/main.c:4: includes tests/unit/fixture.h: a test's file",
              "docs/architecture.md:8: the layout lists common/dialects where common/LAYERS has common/http",
              "tests/unit/common/base/test_sl_zz.c:1: tests no file"]
    with tempfile.TemporaryDirectory () as root:
        for name, text in files.items ():
            os.makedirs (os.path.join (root, os.path.dirname (name)), exist_ok=True)
            with open (os.path.join (root, name), "w", encoding="utf-8") as f:
                f.write (text)
        summary, faults = check (root)
    missed = [w for w in wanted if not any (e.startswith (w) for e in faults)]
    extra = [e for e in faults if not any (e.startswith (w) for w in wanted)]
    for line in missed:
        print ("self-test: not reported: " + line)
    for line in extra:
        print ("self-test: reported wrongly: " + line)
    expected = "18 includes in 12 files, 7 layers, 5 unit tests"
    if missed or extra or summary != expected:
        print ("check-layers self-test: FAILED (%s; %s expected)" % (summary, expected))
        return 1
    print ("check-layers self-test: ok (%d faults of %s found, none wrongly)" % (len (wanted), expected))
    return 0


def main (argv):
    if argv [1:] == ["--self-test"]:
        return self_test ()
    root = argv [1] if len (argv) > 1 else os.path.join (os.path.dirname (os.path.abspath (__file__)), "..", "..")
    summary, faults = check (os.path.realpath (root))
    for line in faults:
        print (line)
    if faults:
        print ("check-layers: %d faults (%s)" % (len (faults), summary))
        return 1
    print ("check-layers: %s: every include follows %s, every unit test mirrors its file" % (summary, LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit (main (sys.argv))
