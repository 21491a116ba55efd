#!/usr/bin/env python3
"""Validates numavm JSON reports against docs/report-schema.json.

Usage: validate_report.py FILE... ('-' reads standard input). Prints one
line per problem (FILE: PATH: MESSAGE) and exits 1 if any report does not
validate, 2 if a file is not JSON, 0 if every one does.
"""
import json
import os
import sys

import jsonschema

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                      "report-schema.json")


def problems(report, validator):
    for error in sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path)):
        path = "/".join(str(p) for p in error.absolute_path) or "(top)"
        yield f"{path}: {error.message}"


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(SCHEMA) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    status = 0
    for name in argv[1:]:
        try:
            text = sys.stdin.read() if name == "-" else open(name).read()
            report = json.loads(text)
        except (OSError, ValueError) as e:
            print(f"{name}: not a JSON report: {e}")
            return 2
        for p in problems(report, validator):
            print(f"{name}: {p}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
