"""Verifies webhook deliveries with the standardwebhooks package, an implementation of the
Standard Webhooks specification independent of the board's.

Reads a JSON list on stdin, each item {"secret", "headers": {"webhook-id", "webhook-timestamp",
"webhook-signature"}, "body"}, and writes a JSON list: for each, {"ok": true, "payload": …} when
the signature verifies under the secret (and the timestamp is within the package's tolerance),
{"ok": false, "error": "…"} otherwise.
"""

import json
import sys

from standardwebhooks.webhooks import Webhook


def main():
    results = []
    for item in json.load(sys.stdin):
        try:
            payload = Webhook(item["secret"]).verify(item["body"], item["headers"])
            results.append({"ok": True, "payload": payload})
        except Exception as e:  # noqa: BLE001 - every refusal is reported, not raised
            results.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
