"""An independent reader of the board's feeds and sitemaps, for tests/api/feeds.rs.

    read.py feed      < an Atom document   → JSON: the feed and its entries as feedparser reads them
    read.py sitemap   < a sitemap file     → JSON: {"kind": "urlset"|"sitemapindex", "locs": [...], "lastmods": [...]}

Exits 1, naming what is wrong, when feedparser flags the feed as malformed (bozo) or the
sitemap breaks a rule of the sitemap protocol (sitemaps.org/protocol.html) that a reader checks:
the namespace, the root element, at most 50 000 entries and 50 MB, every <loc> an absolute
http(s) URL under 2 048 characters, every <lastmod> a W3C datetime.
"""

import json
import re
import sys
import xml.etree.ElementTree as ET

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
W3C_DATETIME = re.compile(
    r"^\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?$"
)


def fail(why):
    print(why, file=sys.stderr)
    sys.exit(1)


def feed(raw):
    import feedparser

    parsed = feedparser.parse(raw)
    if parsed.bozo:
        fail(f"feedparser: malformed feed: {parsed.bozo_exception!r}")
    if parsed.version != "atom10":
        fail(f"feedparser: read as {parsed.version!r}, not Atom 1.0")
    f = parsed.feed
    out = {
        "id": f.get("id"),
        "title": f.get("title"),
        "updated": f.get("updated"),
        "author": f.get("author"),
        "links": [{"rel": l.get("rel"), "href": l.get("href"), "type": l.get("type")} for l in f.get("links", [])],
        "entries": [],
    }
    for e in parsed.entries:
        out["entries"].append(
            {
                "id": e.get("id"),
                "title": e.get("title"),
                "link": e.get("link"),
                "updated": e.get("updated"),
                "published": e.get("published"),
                "author": e.get("author"),
                "summary": e.get("summary"),
                "tags": [t.get("term") for t in e.get("tags", [])],
            }
        )
    return out


def sitemap(raw):
    if len(raw) > 50 * 1024 * 1024:
        fail(f"sitemap: {len(raw)} bytes, over 50 MB")
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as e:
        fail(f"sitemap: not XML: {e}")
    kinds = {f"{{{SITEMAP_NS}}}urlset": ("urlset", "url"), f"{{{SITEMAP_NS}}}sitemapindex": ("sitemapindex", "sitemap")}
    if root.tag not in kinds:
        fail(f"sitemap: the root is {root.tag}, not urlset or sitemapindex in {SITEMAP_NS}")
    kind, child = kinds[root.tag]
    entries = list(root)
    if len(entries) > 50_000:
        fail(f"sitemap: {len(entries)} entries, over 50 000")
    locs, lastmods = [], []
    for entry in entries:
        if entry.tag != f"{{{SITEMAP_NS}}}{child}":
            fail(f"sitemap: a {entry.tag} in a {kind}")
        loc = entry.find(f"{{{SITEMAP_NS}}}loc")
        if loc is None or not loc.text:
            fail(f"sitemap: a {child} without its loc")
        if not re.match(r"^https?://[^\s]+$", loc.text) or len(loc.text) >= 2048:
            fail(f"sitemap: loc {loc.text!r} is not an absolute http(s) URL under 2 048 characters")
        locs.append(loc.text)
        lastmod = entry.find(f"{{{SITEMAP_NS}}}lastmod")
        if lastmod is not None:
            if not lastmod.text or not W3C_DATETIME.match(lastmod.text):
                fail(f"sitemap: lastmod {lastmod.text!r} is not a W3C datetime")
            lastmods.append(lastmod.text)
    return {"kind": kind, "locs": locs, "lastmods": lastmods}


def main():
    raw = sys.stdin.buffer.read()
    if sys.argv[1:] == ["feed"]:
        out = feed(raw)
    elif sys.argv[1:] == ["sitemap"]:
        out = sitemap(raw)
    else:
        fail("usage: read.py feed|sitemap < document")
    json.dump(out, sys.stdout)


main()
