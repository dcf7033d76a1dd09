#!/usr/bin/env python3
"""The web client's module rules (docs/web-client.md#modules), checked without a browser: every
`import { a, b } from './x.js'` in Public/js names a module that exists and exports a, b; the import
graph has no cycle; the group page's section views (group-*.js) never import group.js or each other;
dom.js imports nothing; each module parses (node --check, when node is installed); and the service worker's app shell (Public/sw.js SHELL) lists every module.
Run by .ci/browser.sh before the browser scenario. Usage: imports.py [PUBLIC_DIR]"""
import os
import re
import shutil
import subprocess
import sys

public = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "Public")
js = os.path.join(public, "js")
modules = sorted(f for f in os.listdir(js) if f.endswith(".js"))
IMPORT = re.compile(r"^(?:import|export)\s*\{([^}]*)\}\s*from\s*'\./([\w.-]+)'", re.M)
EXPORT = re.compile(r"^export\s+(?:async\s+)?(?:function|class|const|let)\s+(\w+)|^export\s*\{([^}]*)\}", re.M)

imports, exports, problems = {}, {}, []
for m in modules:
    text = open(os.path.join(js, m), encoding="utf-8").read()
    imports[m] = [(target, [n.strip().split(" as ")[0] for n in names.split(",") if n.strip()]) for names, target in IMPORT.findall(text)]
    exports[m] = {n for a, b in EXPORT.findall(text) for n in ([a] if a else [x.strip().split(" as ")[-1] for x in b.split(",") if x.strip()])}

for m in modules:
    for target, names in imports[m]:
        if target not in exports:
            problems.append(f"{m} imports ./{target}, which does not exist")
            continue
        for n in names:
            if n not in exports[target]:
                problems.append(f"{m} imports {n} from {target}, which does not export it")
        if m.startswith("group-") and (target == "group.js" or target.startswith("group-")):
            problems.append(f"{m} imports {target}: a section view gets the page, never imports it or another view")
if imports.get("dom.js"):
    problems.append("dom.js imports a module: its widgets depend on nothing")


def cycle_from(start):
    """A cycle through `start` as a list of modules, or None (depth-first over the import graph)."""
    stack = [(start, [start])]
    seen = set()
    while stack:
        node, path = stack.pop()
        for target, _ in imports.get(node, []):
            if target == start:
                return path + [start]
            if target not in seen:
                seen.add(target)
                stack.append((target, path + [target]))
    return None


for m in modules:
    c = cycle_from(m)
    if c:
        problems.append("import cycle: " + " → ".join(c))
        break

# Each module parses as a module (node, when installed: a syntax error would only show in the browser).
if shutil.which("node"):
    for m in modules:
        with open(os.path.join(js, m), "rb") as f:
            r = subprocess.run(["node", "--input-type=module", "--check"], stdin=f, capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"{m} does not parse: " + " ".join(r.stderr.strip().splitlines()[:4]))

sw = open(os.path.join(public, "sw.js"), encoding="utf-8").read()
shell = set(re.findall(r"'/js/([\w.-]+\.js)'", sw))
for m in modules:
    if m not in shell:
        problems.append(f"sw.js SHELL does not list /js/{m}: offline, the app would not load")

for p in problems:
    print("web-client modules:", p)
print(f"web-client modules: {len(modules)} modules, {sum(len(v) for v in imports.values())} imports, {len(problems)} problems")
sys.exit(1 if problems else 0)
