#!/usr/bin/env bash
# Every `import` of a module of this package or of a package product must be a dependency that
# Package.swift declares for the importing target (SwiftPM on Linux lets a transitive module be
# imported silently, which hides an upward arrow; docs/architecture.md#dependency-rule).
# The other direction too: a declared dependency that no file of the target imports, and an import
# of one of our modules that names none of that module's public declarations (a leftover), fail.
# And only App's bootstrap (AppConfig*.swift, Bootstrap.swift, Runtime/) may name a database engine:
# the rest of App reaches storage through the Storage protocol (docs/architecture.md#storage).
# Toolchain modules (Foundation, Dispatch, Synchronization, Testing, …) are not checked.
set -euo pipefail
cd "$(dirname "$0")/.."
swift package dump-package > .build/package.json
python3 - .build/package.json <<'PY'
import glob, json, os, re, sys

package = json.load(open(sys.argv[1]))
declared = {}
for target in package["targets"]:
    deps = set()
    for dep in target.get("dependencies", []):
        for kind in ("byName", "target", "product"):
            if kind in dep:
                deps.add(dep[kind][0])
    declared[target["name"]] = (target["type"], deps)
products = {"ArgumentParser", "Logging", "CoreMetrics", "Metrics", "Prometheus", "ServiceLifecycle"}
ours = set(declared) | products
imports = re.compile(r"^\s*(?:@\w+\s+)*(?:public |internal |package |private |fileprivate )?import (?:\w+ )?(\w+)")
def root(kind):
    return "Tests" if kind == "test" else ("Plugins" if kind == "plugin" else "Sources")

def files(name, kind):
    return sorted(glob.glob(os.path.join(root(kind), name, "**", "*.swift"), recursive=True))

# The names each of our Swift modules makes public: types, members, enum cases (a word-level
# over-approximation: an import is a leftover only when its file uses none of them).
declaration = re.compile(
    r"^\s*(?:public|open)\s+(?:[a-z]+\s+)*(?:class|struct|enum|protocol|actor|typealias)\s+([A-Za-z_]\w*)"
    r"|^(?:public|open)\s+(?:[a-z]+\s+)*(?:func|var|let)\s+([A-Za-z_]\w*)", re.M)
member = re.compile(r"^\s+(?:(?:public|open)\s+)?(?:[a-z]+\s+)*(?:func|var|let|case)\s+`?([A-Za-z_]\w*)", re.M)
exported = {}
members = {}
for name, (kind, _) in declared.items():
    if kind != "regular":
        continue
    names, found = set(), set()
    for path in files(name, kind):
        text = open(path, encoding="utf-8").read()
        names.update(a or b for a, b in declaration.findall(text))
        if re.search(r"\bpublic\s+(?:[a-z]+\s+)*(?:enum|struct|protocol|extension)\b", text):
            found.update(member.findall(text))
    exported[name], members[name] = names, found
# Members count too (a file may import a module only for an extension's member), so a file that
# uses a word one of them declares is given the benefit of the doubt: no false alarms, and a
# leftover that happens to share a member's name goes unnoticed.
for name in exported:
    exported[name] |= members[name]

bootstrap = re.compile(r"^Sources/App/(AppConfig[^/]*\.swift|Bootstrap\.swift|Runtime/)")
words = re.compile(r"[A-Za-z_]\w*")
failures = []
for name, (kind, deps) in sorted(declared.items()):
    imported = set()
    for path in files(name, kind):
        text = open(path, encoding="utf-8").read()
        used = set(words.findall(re.sub(r"^\s*(?:@\w+\s+)*(?:\w+ )?import .*$", "", text, flags=re.M)))
        for number, line in enumerate(text.split("\n"), 1):
            match = imports.match(line)
            if not match or match[1] not in ours or match[1] == name:
                continue
            module = match[1]
            imported.add(module)
            if module not in deps:
                failures.append(f"{path}:{number}: {name} imports {module}, which Package.swift does not declare")
            if module in exported and exported[module] and not (used & exported[module]):
                failures.append(f"{path}:{number}: imports {module} but names nothing it declares public")
            if name == "App" and module in ("SQLite", "Postgres") and not bootstrap.match(path):
                failures.append(f"{path}:{number}: App names the {module} engine outside its bootstrap")
    if kind in ("regular", "executable", "test"):
        for dep in sorted(deps - imported):
            if dep in ours and not dep.startswith("C") and dep != "EmbedMigrations":
                failures.append(f"Package.swift: {name} declares {dep}, which no file of {name} imports")
print("\n".join(failures) or f"imports: every target imports only what it declares ({len(declared)} targets)")
sys.exit(1 if failures else 0)
PY
