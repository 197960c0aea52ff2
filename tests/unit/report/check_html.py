#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks an `rtune report --html` page: well-formed XML (expat), parsed by html.parser, self-contained (no script, no
# external resource: no src/href pointing anywhere, no url(), no @import), and holding the expected charts.
# usage: check_html.py PAGE MIN_SVG [TEXT...]   (every TEXT must appear in the page's text)
import html.parser
import sys
import xml.etree.ElementTree as ET

path, min_svg, needles = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
data = open(path, encoding="utf-8").read()
fail = []

# 1. well-formed XML (the page is written as polyglot XHTML)
try:
    root = ET.fromstring(data.split("\n", 1)[1] if data.startswith("<!DOCTYPE html>") else data)
except ET.ParseError as e:
    sys.exit(f"check_html: {path}: not well-formed: {e}")


class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.bad = {}, [], []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag in ("script", "iframe", "object", "embed", "link", "img", "image", "use"):
            self.bad.append(f"<{tag}> element")
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "srcset", "action") or k.startswith("on"):
                self.bad.append(f"{tag} {k}={v!r}")

    def handle_data(self, d):
        self.text.append(d)


p = P()
p.feed(data)
p.close()
if "url(" in data or "@import" in data:
    fail.append("CSS url()/@import")
fail += p.bad
if p.tags.get("svg", 0) < min_svg:
    fail.append(f"{p.tags.get('svg', 0)} svg charts, expected at least {min_svg}")
text = " ".join(p.text)
for n in needles:
    if n not in text:
        fail.append(f"text {n!r} missing")
if root.tag != "html":
    fail.append(f"root element is {root.tag}")
if fail:
    sys.exit(f"check_html: {path}: " + "; ".join(fail))
print(f"check_html: {path}: well-formed, self-contained, {p.tags.get('svg', 0)} svg charts, "
      f"{p.tags.get('polyline', 0)} curves, {p.tags.get('rect', 0)} rects")
