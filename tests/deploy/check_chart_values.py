#!/usr/bin/env python3
"""Static checks of a Helm chart that need no Helm binary. Usage: check_chart_values.py CHART_DIR

1. Every .Values.a.b.c the templates reference (and every `dig "a" "b" DEFAULT .Values.x` path) exists in
   values.yaml, so no template silently renders <no value> or nil with the default values.
2. Every template's actions are balanced: as many {{ as }}, and as many `end` as if/range/with/define/block.
3. values.yaml is documented key by key: every key is named by a `## @param` line (itself or an ancestor
   documented as a whole), and every `## @param` names a key that exists.
Prints one line per check; exits 1 if any failed.
"""
import pathlib
import re
import sys

import yaml

VALUES_REF = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
DIG_REF = re.compile(r"\bdig((?:\s+\"[^\"]+\")+)\s+(?:\"[^\"]*\"|\S+)\s+\$?\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")
ACTION = re.compile(r"{{-?\s*(.*?)\s*-?}}", re.S)
OPENERS = ("if", "range", "with", "define", "block")
PARAM = re.compile(r"^\s*## @param (\S+)")


def has_path(values, path):
    node = values
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def leaf_paths(node, prefix=()):
    """Keys whose value is a scalar, a list, or an empty mapping."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from leaf_paths(value, prefix + (str(key),))
    else:
        yield prefix


def main(chart):
    chart = pathlib.Path(chart)
    values_text = (chart / "values.yaml").read_text()
    values = yaml.safe_load(values_text)
    templates = sorted(p for p in (chart / "templates").iterdir() if p.suffix in (".yaml", ".tpl", ".txt"))
    failures = 0

    def report(ok, name, detail=""):
        nonlocal failures
        print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
        failures += 0 if ok else 1

    references = {}
    for template in templates:
        text = template.read_text()
        for match in VALUES_REF.finditer(text):
            references.setdefault(tuple(match.group(1)[1:].split(".")), set()).add(template.name)
        for match in DIG_REF.finditer(text):
            base = tuple(match.group(2)[1:].split("."))
            keys = tuple(re.findall(r"\"([^\"]+)\"", match.group(1)))
            references.setdefault(base + keys, set()).add(template.name)
    missing = sorted((".".join(p), sorted(t)) for p, t in references.items() if not has_path(values, p))
    report(not missing, f"all {len(references)} .Values paths the templates use exist in values.yaml",
           "; ".join(f".Values.{p} (in {', '.join(t)})" for p, t in missing))

    for template in templates:
        text = re.sub(r"{{-?\s*/\*.*?\*/\s*-?}}", "", template.read_text(), flags=re.S)  # comments
        actions = [a.split()[0] if a.split() else "" for a in ACTION.findall(text)]
        opened = sum(1 for a in actions if a in OPENERS)
        closed = actions.count("end")
        braces = (text.count("{{"), text.count("}}"))
        report(opened == closed and braces[0] == braces[1], f"{template.name}: actions balanced",
               f"{opened} if/range/with/define vs {closed} end; {braces[0]} '{{{{' vs {braces[1]} '}}}}'")

    params = [m.group(1) for m in map(PARAM.match, values_text.splitlines()) if m]
    unknown = [p for p in params if not has_path(values, tuple(p.split(".")))]
    report(not unknown, f"every one of {len(params)} @param lines names a key of values.yaml", ", ".join(unknown))
    documented = {tuple(p.split(".")) for p in params}
    undocumented = [".".join(leaf) for leaf in leaf_paths(values)
                    if not any(leaf[:n] in documented for n in range(1, len(leaf) + 1))]
    report(not undocumented, "every key of values.yaml has an @param line", ", ".join(undocumented))
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
