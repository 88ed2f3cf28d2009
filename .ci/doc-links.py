"""Every relative Markdown link in the documents named reaches a file of
the repository, and its #anchor one of that file's headings (GitHub's
anchors: lower case, punctuation dropped, spaces as hyphens)."""
import pathlib
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path):
    found = set()
    fence = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        heading = re.match(r"^#{1,6} (.*)", line)
        if heading and not fence:
            text = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            found.add(text.replace(" ", "-"))
    return found


failed = False
for name in sys.argv[1:]:
    document = pathlib.Path(name)
    for target in LINK.findall(document.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        reached = (document.parent / file).resolve() if file else document.resolve()
        if not reached.exists():
            print(f"doc-references: {name} links to {target}, which does not exist")
            failed = True
        elif anchor and reached.suffix == ".md" and anchor not in anchors(reached):
            print(f"doc-references: {name} links to {target}, a heading {file or name} does not have")
            failed = True
sys.exit(1 if failed else 0)
