#!/usr/bin/env python3
"""Sections of docs/performance.md that separate benchmarks own.

Each benchmark script writes its section between `<!-- NAME:begin -->` and
`<!-- NAME:end -->`, so rerunning one benchmark leaves the others' results.

  doc_section.py put DOC NAME      # section text on stdin: replace or append
  doc_section.py keep OLD NEW      # copy OLD's sections into NEW (bench/run.sh
                                   # regenerates the whole document)
"""
import re
import sys

SECTION = re.compile(r"<!-- ([a-z0-9-]+):begin -->.*?<!-- \1:end -->", re.S)


def put(text, name, section):
    section = section.strip("\n")
    if not section.startswith(f"<!-- {name}:begin -->") or not section.endswith(f"<!-- {name}:end -->"):
        sys.exit(f"doc_section: the text must be wrapped in the {name} begin/end markers")
    for match in SECTION.finditer(text):
        if match.group(1) == name:
            return text[: match.start()] + section + text[match.end():]
    return text.rstrip("\n") + "\n\n" + section + "\n"


def main(argv):
    if len(argv) == 4 and argv[1] == "put":
        path, name = argv[2], argv[3]
        try:
            text = open(path).read()
        except FileNotFoundError:
            text = ""
        open(path, "w").write(put(text, name, sys.stdin.read()))
    elif len(argv) == 4 and argv[1] == "keep":
        try:
            old = open(argv[2]).read()
        except FileNotFoundError:
            return
        text = open(argv[3]).read()
        for match in SECTION.finditer(old):
            text = put(text, match.group(1), match.group(0))
        open(argv[3], "w").write(text)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
