"""A page opened in headless Chromium over the DevTools protocol (loopback only).

``open_page`` loads a local HTML file and returns a ``Page`` that evaluates
JavaScript in it, reports what the page's script threw or logged as errors,
and takes screenshots. Chromium is Debian's ``chromium`` (``.ci/run`` installs
it where missing); the DevTools client is ``websocket-client``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import websocket

_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


def chromium() -> str | None:
    """The Chromium binary, if installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _describe(details: dict[str, Any]) -> str:
    """An exception as the console shows it, with where it was thrown."""
    what = (details.get("exception") or {}).get("description") or details.get("text")
    return f"{what} (line {details.get('lineNumber')})"[:500]


class Page:
    """One tab: ``evaluate`` JavaScript, read its ``errors``, ``screenshot`` it."""

    def __init__(self, ws: websocket.WebSocket):
        self.ws, self.errors, self._id = ws, [], 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def _event(self, msg: dict[str, Any]) -> None:
        method, p = msg.get("method"), msg.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.errors.append(_describe(p["exceptionDetails"]))
        elif method == "Runtime.consoleAPICalled" and p.get("type") == "error":
            self.errors.append(json.dumps(p.get("args"))[:500])
        elif method == "Log.entryAdded" and p["entry"].get("level") == "error":
            self.errors.append(p["entry"].get("text", "")[:500])

    def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (a thrown error is recorded)."""
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in res:
            self.errors.append(_describe(res["exceptionDetails"]))
            return None
        return res["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path


@contextlib.contextmanager
def open_page(
    html_file: Path, profile: Path, size: tuple[int, int] = (1280, 900)
) -> Iterator[Page]:
    """``html_file`` loaded in a fresh headless Chromium (profile in ``profile``)."""
    binary = chromium()
    if binary is None:
        raise RuntimeError("chromium is not installed (.ci/run installs it)")
    proc = subprocess.Popen(
        [
            binary, "--headless", "--no-sandbox", "--disable-gpu",
            "--remote-debugging-port=0", "--remote-allow-origins=*",
            f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline, url = time.monotonic() + 60, None
        while url is None:
            line = proc.stderr.readline()
            if not line and (proc.poll() is not None or time.monotonic() > deadline):
                raise RuntimeError("chromium did not start its DevTools endpoint")
            if m := _LISTENING.search(line):
                url = m.group(1)
        browser = websocket.create_connection(url, timeout=60)
        page = Page(browser)
        target = page.call("Target.createTarget", url="about:blank")["targetId"]
        session = page.call("Target.attachToTarget", targetId=target, flatten=False)
        browser.close()
        port = url.split(":")[2].split("/")[0]
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{port}/devtools/page/{target}", timeout=60
        )
        del session
        page = Page(ws)
        for domain in ("Runtime", "Log", "Page"):
            page.call(f"{domain}.enable")
        page.call("Page.navigate", url=html_file.resolve().as_uri())
        while page.evaluate("document.readyState") != "complete":
            time.sleep(0.05)
        page.evaluate("0")  # drain events logged during the load
        yield page
        ws.close()
    finally:
        proc.kill()
        proc.wait()


def trace_page_problems(html_file: Path, profile: Path) -> list[str]:
    """What is wrong with a trace page in a real browser: script errors, no
    diagnostics table, or a chosen turn whose memory text is not shown."""
    text = html_file.read_text(encoding="utf-8")
    data = text.split('id="trace-data">', 1)[1].split("</script>", 1)[0]
    samples = json.loads(data.replace("<\\/", "</"))["samples"]
    problems = []
    with open_page(html_file, profile) as page:
        rows = page.evaluate("document.querySelectorAll('#diagnostics tr').length")
        if not rows or rows < 2:
            problems.append(f"no diagnostics table with rows (rows: {rows})")
        chosen = next(
            (
                (i, t)
                for i, s in enumerate(samples)
                for t in s["turns"]
                if t["memory"] and t["memory"].strip()
            ),
            None,
        )
        if chosen is None:
            problems.append("no sample with a memory turn to show")
        else:
            i, turn = chosen
            page.evaluate(f"showSample({i})")
            shown = page.evaluate(
                f"document.querySelector('#turn-{turn['chunk']} .mem').textContent"
            )
            if not shown or turn["memory"] not in shown:
                problems.append(f"turn {turn['chunk']} shows {shown!r}, not its memory")
        problems += [f"script error: {e}" for e in page.errors]
    return problems
