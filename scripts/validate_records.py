#!/usr/bin/env python3
"""Validates gpubench run records and scenario files against schemas/ (JSON Schema draft 2020-12).

  python3 scripts/validate_records.py results/ runs/x.json configs/resnet50.yaml

Directories are searched for *.json (only files with "schema": "gpubench.run" are records; other JSON is skipped) and
*.yaml/*.yml scenario files (a bench file under configs/bench/ is checked by its `scenario`). Exit 0 when everything validates, 1 otherwise (every problem is printed with its file
and JSON path). Needs python3-jsonschema (>= 4, for draft 2020-12) and, for YAML scenarios, python3-yaml.
"""
import json
import pathlib
import sys

import jsonschema

ROOT = pathlib.Path(__file__).resolve().parent.parent / "schemas"


def validators():
    record = json.loads((ROOT / "record.schema.json").read_text())
    scenario = json.loads((ROOT / "scenario.schema.json").read_text())
    store = {record["$id"]: record, scenario["$id"]: scenario}
    check = jsonschema.Draft202012Validator.check_schema
    check(record)
    check(scenario)
    resolver = jsonschema.RefResolver.from_schema(record, store=store)
    return (jsonschema.Draft202012Validator(record, resolver=resolver),
            jsonschema.Draft202012Validator(scenario, resolver=jsonschema.RefResolver.from_schema(scenario, store=store)))


def files(paths):
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            yield from sorted(x for x in p.rglob("*") if x.suffix in (".json", ".yaml", ".yml"))
        else:
            yield p


def main(argv):
    record_v, scenario_v = validators()
    counts = {"records": 0, "scenarios": 0, "skipped": 0}
    bad = 0
    for f in files(argv[1:]):
        if f.suffix == ".json":
            doc = json.loads(f.read_text())
            if isinstance(doc, dict) and doc.get("schema") == "gpubench.run":
                kind, v = "records", record_v
            elif isinstance(doc, dict) and "schema" not in doc and "model" in doc and "points" not in doc:
                kind, v = "scenarios", scenario_v
            else:
                counts["skipped"] += 1
                continue
        else:
            import yaml  # only YAML scenarios need it
            doc, kind, v = yaml.safe_load(f.read_text()), "scenarios", scenario_v
            if isinstance(doc, dict) and ("published" in str(f) or "devices" in str(f)):
                counts["skipped"] += 1  # data tables, not scenarios
                continue
            if isinstance(doc, dict) and f.parent.name == "bench" and isinstance(doc.get("scenario"), dict):
                doc = doc["scenario"]  # a bench file (scripts/bench.py): its scenario is a scenario file's keys
        counts[kind] += 1
        for e in sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            bad += 1
            where = "/".join(str(x) for x in e.absolute_path) or "(top)"
            print(f"{f}: {where}: {e.message[:300]}")
    print(f"validated {counts['records']} records and {counts['scenarios']} scenario files "
          f"({counts['skipped']} other files skipped): {'ok' if bad == 0 else f'{bad} problems'}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
