#!/usr/bin/env python3
"""Checks a JUnit XML file written by `kvcap check --junit`: it parses (xml.etree, a standard XML parser),
and it conforms to the Jenkins xUnit plugin's junit-10.xsd (the de-facto JUnit schema; Ant's
XMLJUnitResultFormatter) for the elements and attributes kvcap writes: allowed elements and attributes only,
required attributes present, counts consistent, numbers numeric, timestamps ISO 8601.
Usage: check_junit.py FILE TESTS FAILURES ERRORS"""
import re
import sys
import xml.etree.ElementTree as ET

path, tests, failures, errors = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
problems = []
def need(cond, msg):
    if not cond:
        problems.append(msg)

root = ET.parse(path).getroot()  # raises on malformed XML
ALLOWED = {
    "testsuites": {"name", "time", "tests", "failures", "disabled", "errors"},
    "testsuite": {"name", "tests", "failures", "errors", "time", "disabled", "skipped", "timestamp", "hostname", "id", "package"},
    "properties": set(), "property": {"name", "value"},
    "testcase": {"name", "assertions", "time", "classname", "status"},
    "failure": {"message", "type"}, "error": {"message", "type"}, "skipped": {"message"},
    "system-out": set(), "system-err": set(),
}
CHILDREN = {
    "testsuites": {"testsuite"},
    "testsuite": {"properties", "testcase", "system-out", "system-err"},
    "properties": {"property"},
    "testcase": {"skipped", "error", "failure", "system-out", "system-err"},
}
def number(s):
    return re.fullmatch(r"[0-9]+(\.[0-9]+)?", s or "") is not None
def walk(e):
    need(e.tag in ALLOWED, f"unknown element <{e.tag}>")
    for a in e.attrib:
        need(a in ALLOWED.get(e.tag, set()), f"<{e.tag}> has attribute {a} not in junit-10.xsd")
    for c in e:
        need(c.tag in CHILDREN.get(e.tag, set()), f"<{c.tag}> not allowed inside <{e.tag}>")
        walk(c)
walk(root)
need(root.tag == "testsuites", "root element is not <testsuites>")
n_t = n_f = n_e = 0
for s in root.findall("testsuite"):
    need(s.get("name"), "testsuite without a name")
    cases = s.findall("testcase")
    f = sum(1 for c in cases if c.find("failure") is not None)
    e = sum(1 for c in cases if c.find("error") is not None)
    need(s.get("tests") == str(len(cases)), f"testsuite tests={s.get('tests')} but {len(cases)} testcases")
    need(s.get("failures") == str(f), f"testsuite failures={s.get('failures')} but {f} failures")
    need(s.get("errors") == str(e), f"testsuite errors={s.get('errors')} but {e} errors")
    need(number(s.get("time")), "testsuite time is not a number")
    need(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", s.get("timestamp", "")) is not None, "timestamp is not ISO 8601")
    for c in cases:
        need(c.get("name") and c.get("classname"), "testcase without name or classname")
        need(number(c.get("time")), "testcase time is not a number")
        for bad in c.findall("failure") + c.findall("error"):
            need(bad.get("message") and bad.get("type"), "failure/error without message or type")
            need(bad.text and bad.text.strip(), "failure/error without details")
    n_t, n_f, n_e = n_t + len(cases), n_f + f, n_e + e
need((n_t, n_f, n_e) == (tests, failures, errors), f"counted {n_t} tests, {n_f} failures, {n_e} errors; expected {tests}, {failures}, {errors}")
need(root.get("tests") == str(n_t) and root.get("failures") == str(n_f) and root.get("errors") == str(n_e),
     "testsuites totals disagree with the testcases")
for p in problems:
    print(f"{path}: {p}")
if problems:
    sys.exit(1)
print(f"{path}: valid JUnit XML, {n_t} testcases ({n_f} failures, {n_e} errors)")
