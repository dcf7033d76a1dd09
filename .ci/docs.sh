#!/usr/bin/env bash
# Docs that cannot drift from the tree:
#  1. every relative link in README.md and docs/*.md names a file that exists, and its #anchor a
#     heading of that file (GitHub's slugs: lower case, punctuation dropped, spaces → '-');
#  2. every `docs/NAME.md#anchor` a comment, script or doc cites names a heading of that file;
#  3. the README's module map (the one map; docs/architecture.md details it) names every folder of
#     Sources/ and every folder one level inside App/, Domain/ and Store/.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - <<'PY'
import os, re, sys
problems = []

def slug(heading):
    text = re.sub(r"[`*_]", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")

def anchors(path):
    found, seen, fenced = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        for explicit in re.findall(r'<a (?:name|id)="([^"]+)"', line):
            found.add(explicit)
    return found

import subprocess
tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
documents = [f for f in tracked if f.endswith(".md") and os.path.exists(f)]
for document in documents:
    text = open(document, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(document), path)) if path else document
        if not os.path.exists(resolved):
            problems.append(f"{document}: link to {target}: no file {resolved}")
            continue
        if anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            problems.append(f"{document}: link to {target}: no heading #{anchor} in {resolved}")

# Citations in code and scripts: `docs/NAME.md#anchor` (design.md's own "#anchor" explains the form).
for name in tracked:
    if not name.endswith((".swift", ".js", ".sh", ".py", ".yaml", ".html", ".md")) or not os.path.exists(name):
        continue
    text = open(name, encoding="utf-8", errors="replace").read()
    for path, anchor in re.findall(r"(docs/[\w.-]+\.md)#([\w-]+)", text):
        if anchor != "anchor" and os.path.exists(path) and anchor not in anchors(path):
            problems.append(f"{name}: cites {path}#{anchor}: no such heading")

readme = open("README.md", encoding="utf-8").read()
block = re.search(r"## Where the code is.*?```\n(.*?)```", readme, re.S)
if not block:
    problems.append("README.md: no module map under '## Where the code is'")
else:
    mapped = block.group(1)
    folders = [d for d in os.listdir("Sources") if os.path.isdir(os.path.join("Sources", d))]
    for parent in ("App", "Domain", "Store"):
        folders += [d for d in os.listdir(os.path.join("Sources", parent)) if os.path.isdir(os.path.join("Sources", parent, d))]
    for folder in sorted(set(folders)):
        if not re.search(r"(^|[\s(,])" + re.escape(folder) + r"/", mapped, re.M):
            problems.append(f"README.md module map: Sources folder {folder}/ is not named")

if problems:
    print("\n".join(problems))
    sys.exit(f"docs: {len(problems)} problem(s)")
print(f"docs: links and anchors resolve in {len(documents)} files; the module map names every Sources folder")
PY
