#!/usr/bin/python3
"""unit.docs.files: docs/architecture.md names every source file, and only files that exist.

    docs_files.py SRC_DIR

Every .c and .h file under the component folders (gateway/, fnstore/,
controller/, common/, policies/, bench/, tests/, deploy/) must appear in a
file table of docs/architecture.md: a table under a heading "### `FOLDER/`"
whose rows begin with the file names, in backticks, relative to FOLDER.
Every file such a row names must exist. In docs/architecture.md and
docs/threads.md, a path in backticks (`gateway/gw_meta.c`) must exist, and a
bare source name (`gw_meta.c`) must be the name of a source file; a name in
angle brackets (`<glpk.h>`) is a library's and is not checked.

Before it checks the tree, the script checks itself on a small fake tree
(each way of failing must be caught). Exit 0 when both pass, 1 otherwise.
"""

import os
import re
import sys
import tempfile

FOLDERS = ("gateway", "fnstore", "controller", "common", "policies", "bench", "tests", "deploy")
SKIP_DIRS = {"node_modules", "seeds", "__pycache__"}
SOURCE_EXT = (".c", ".h")
MAP_DOC = "docs/architecture.md"
REF_DOCS = ("docs/architecture.md", "docs/threads.md")

HEADING = re.compile(r"^#{1,6}\s")
FOLDER_HEADING = re.compile(r"^###\s+`([A-Za-z0-9_./-]+)/`\s*$")
TICKED = re.compile(r"`([^`\s]+)`")
PATH_REF = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(c|h|py|sh|cmake|md|json)$")
SOURCE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.(c|h)$")


def source_files(root):
    """Repository-relative paths of every .c and .h file under FOLDERS."""
    out = set()
    for top in FOLDERS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
            for f in files:
                if f.endswith(SOURCE_EXT):
                    out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def table_rows(text):
    """{line: (folder, first cell)} for every row of a folder table."""
    folder, rows = None, {}
    for n, line in enumerate(text.splitlines(), 1):
        if HEADING.match(line):
            m = FOLDER_HEADING.match(line)
            folder = m.group(1) if m else None
            continue
        if folder is None or not line.startswith("|"):
            continue
        cells = line.split("|")
        if len(cells) < 3 or set(cells[1].strip()) <= set("-: "):
            continue  # not a row, or the separator
        rows[n] = (folder, cells[1])
    return rows


def table_files(rows):
    """(path, line) for every file a folder table's first cells name."""
    return [(folder + "/" + name, n)
            for n, (folder, cell) in sorted(rows.items()) for name in TICKED.findall(cell)]


def quoted_refs(text, rows):
    """(token, line) for every backticked file path or source name, but the
    first cells of folder tables (those name files relative to their folder)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if n in rows:
            line = line.replace(rows[n][1], "", 1)
        for tok in TICKED.findall(line):
            if PATH_REF.match(tok) and ("/" in tok or SOURCE_NAME.match(tok)):
                out.append((tok, n))
    return out


def check(root):
    """The problems found in the tree at root, one line each."""
    problems = []
    path = os.path.join(root, MAP_DOC)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return ["%s: cannot read: %s" % (MAP_DOC, e.strerror)]
    sources = source_files(root)
    named = table_files(table_rows(text))
    named_paths = {p for p, _ in named}
    for p, n in named:
        if not os.path.exists(os.path.join(root, p)):
            problems.append("%s:%d: names %s, which does not exist" % (MAP_DOC, n, p))
    for p in sorted(sources - named_paths):
        problems.append("%s: no file table names %s" % (MAP_DOC, p))
    basenames = {os.path.basename(p) for p in sources}
    for doc in REF_DOCS:
        try:
            with open(os.path.join(root, doc), encoding="utf-8") as f:
                dtext = f.read()
        except OSError:
            continue  # only the map is required
        for tok, n in quoted_refs(dtext, table_rows(dtext)):
            if "/" in tok:
                ok = os.path.exists(os.path.join(root, tok))
            else:
                ok = tok in basenames
            if not ok:
                problems.append("%s:%d: `%s` names no file" % (doc, n, tok))
    return problems


def self_test():
    """Each failure the check must catch, on a fake tree. [] when all are caught."""
    failures = []
    with tempfile.TemporaryDirectory(prefix="docs_files.") as root:
        def write(rel, body=""):
            full = os.path.join(root, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(body)

        for rel in ("gateway/a.c", "gateway/a.h", "common/include/b.h", "common/src/b.c",
                    "tests/unit/x/t.c", "deploy/s3rver/node_modules/n.h", "tests/fuzz/seeds/s/z.c"):
            write(rel)
        good = ("# Map\n\n## Files\n\n### `gateway/`\n\n| file | owns |\n| --- | --- |\n"
                "| `a.h`, `a.c` | a |\n\n### `common/`\n\n| file | owns |\n| --- | --- |\n"
                "| `include/b.h`, `src/b.c` | b |\n\n### `tests/unit/x/`\n\n"
                "| file | owns |\n| --- | --- |\n| `t.c` | t |\n\n## Prose\n\n"
                "See `gateway/a.c`, `a.h`, `<glpk.h>` and `meta/redo.log`.\n")
        cases = [
            ("a complete map", good, 0),
            ("a source file missing", good.replace("| `t.c` | t |\n", ""), 1),
            ("a row naming a file that is gone", good.replace("`a.h`, `a.c`", "`a.h`, `a.c`, `gone.c`"), 1),
            ("a path in prose that is gone", good + "Also `gateway/zz.c`.\n", 1),
            ("a bare source name that is gone", good + "Also `zz.h`.\n", 1),
            ("a table outside a folder heading", good.replace("### `tests/unit/x/`", "### Tests"), 1),
        ]
        for what, doc, want in cases:
            write(MAP_DOC, doc)
            got = check(root)
            if len(got) != want:
                failures.append("self-test, %s: want %d problem(s), got %s" % (what, want, got))
    return failures


def main(argv):
    if len(argv) != 2:
        print("usage: docs_files.py SRC_DIR", file=sys.stderr)
        return 2
    problems = self_test() + check(argv[1])
    for p in problems:
        print(p)
    if problems:
        return 1
    print("ok: %d source files named in %s" % (len(source_files(argv[1])), MAP_DOC))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
