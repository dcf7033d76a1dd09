#!/usr/bin/env bash
# Every `import` of a module of this package or of a package product must be a dependency that
# Package.swift declares for the importing target (SwiftPM on Linux lets a transitive module be
# imported silently, which hides an upward arrow; docs/architecture.md#dependency-rule).
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
products = {"ArgumentParser", "Logging", "CoreMetrics", "Metrics", "Prometheus"}
ours = set(declared) | products
imports = re.compile(r"^\s*(?:@\w+\s+)*(?:public |internal |package |private |fileprivate )?import (?:\w+ )?(\w+)")
failures = []
for name, (kind, deps) in sorted(declared.items()):
    root = "Tests" if kind == "test" else ("Plugins" if kind == "plugin" else "Sources")
    for path in sorted(glob.glob(os.path.join(root, name, "**", "*.swift"), recursive=True)):
        for number, line in enumerate(open(path, encoding="utf-8"), 1):
            match = imports.match(line)
            if match and match[1] in ours and match[1] != name and match[1] not in deps:
                failures.append(f"{path}:{number}: {name} imports {match[1]}, which Package.swift does not declare")
print("\n".join(failures) or f"imports: every target imports only what it declares ({len(declared)} targets)")
sys.exit(1 if failures else 0)
PY
