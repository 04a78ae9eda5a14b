#!/usr/bin/env python3
"""A person in a browser, for the consent tests: opens a consent link, signs in at the test
OpenID provider (tests/oidc/provider.mjs, its development login and consent pages) as LOGIN,
allows access, and follows the redirect back to the MCP server's /oauth/callback.

    browser_consent.py LINK LOGIN [--deny]

Prints one JSON document: {"status", "url", "text"} of the last page (the server's callback
page). With --deny, the person aborts at the consent page instead.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from urllib.parse import urljoin

import httpx2 as httpx


async def consent(link: str, login: str, deny: bool = False) -> dict:
    """Walks the provider's pages like a browser (cookies kept, redirects followed)."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=20) as http:
        url = link
        for _ in range(30):
            print(f"browser: GET {url}", file=sys.stderr)
            r = await http.get(url)
            if r.is_redirect:
                url = urljoin(url, r.headers["location"])
                continue
            if "/interaction/" in url and r.status_code == 200:
                if deny and 'name="prompt" value="consent"' in r.text:
                    url = url.rstrip("/") + "/abort"
                    continue
                if 'name="login"' in r.text:
                    data = {"prompt": "login", "login": login, "password": "any"}
                else:
                    data = {"prompt": "consent"}
                posted = await http.post(url, data=data)
                if not posted.is_redirect:
                    return page(posted, url)
                url = urljoin(url, posted.headers["location"])
                continue
            return page(r, url)
        raise RuntimeError(f"too many redirects from {link}")


def page(r: httpx.Response, url: str) -> dict:
    text = re.sub(r"<[^>]+>", " ", r.text)
    return {"status": r.status_code, "url": url, "text": re.sub(r"\s+", " ", text).strip()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("link")
    ap.add_argument("login")
    ap.add_argument("--deny", action="store_true")
    args = ap.parse_args()
    print(json.dumps(asyncio.run(consent(args.link, args.login, args.deny))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
